// Package migrations is the schema history of engine/store, one set for SQLite and
// PostgreSQL: one file per migration, named by its id, and All, the list of them in the
// order they run. It knows nothing of the store's models or queries, and the store nothing
// of what is in here but All.
//
// A migration's id (Name) is what the bun_migrations table records once it has run, so an
// id is never changed and a migration that has shipped is never edited: a database already
// holds what it did. A change to the schema is a new file and a new line at the end of All.
//
// Tables are written as SQL, the text that runs, so a migration cannot drift with the
// models of the store that read and write its rows. The text is the same on both dialects
// but for the column types that differ, written {int}, {time}, {bytes}, {json} and
// {serial} (see exec). Every statement is IF NOT EXISTS or guarded by a look at the
// schema, and each migration runs in one transaction, so a migration run twice, or by two
// processes at once, converges.
package migrations

import "github.com/uptrace/bun/migrate"

// All returns every migration, in the order they run: by id, oldest first.
func All() []migrate.Migration {
	return []migrate.Migration{
		{Name: "20250601000001", Comment: "initial_schema", Up: inTx(initialSchema)},
		{Name: "20261122000001", Comment: "documents", Up: inTx(documents)},
		{Name: "20261123000001", Comment: "table_row_key_columns", Up: inTx(tableRowKeyColumns)},
		{Name: "20261123000010", Comment: "fair_claims", Up: inTx(fairClaims)},
		{Name: "20261123000020", Comment: "org_config", Up: inTx(orgConfig)},
		{Name: "20261123000030", Comment: "actions", Up: inTx(actions)},
		{Name: "20261123000040", Comment: "step_calls", Up: inTx(stepCalls)},
		{Name: "20261123000050", Comment: "oauth_connections", Up: inTx(oauthConnections)},
		{Name: "20261123000060", Comment: "webhooks", Up: inTx(webhooks)},
		{Name: "20261123000070", Comment: "deliveries", Up: inTx(deliveries)},
		{Name: "20261123000080", Comment: "approvals", Up: inTx(approvals)},
		{Name: "20261123000090", Comment: "form_pauses", Up: inTx(formPauses)},
		{Name: "20261123000100", Comment: "org_features", Up: inTx(orgFeatures)},
		{Name: "20261123000110", Comment: "external_forms, form_submissions", Up: inTx(externalForms)},
		{Name: "20261123000120", Comment: "generated_form_schemas", Up: inTx(generatedFormSchemas)},
		{Name: "20261124000130", Comment: "agent_runs", Up: inTx(agentRuns)},
		{Name: "20261126000160", Comment: "process studio: projects, processes, bundles", Up: inTx(studio)},
		{Name: "20261126000170", Comment: "workflow drafting: generations", Up: inTx(generations)},
		{Name: "20261126000180", Comment: "custom-table indexes: declarations on custom_tables, entries in table_index_entries", Up: inTx(tableIndexes)},
		{Name: "20261126000190", Comment: "run context: each value's size, and large arrays in parts (run_context_parts)", Up: inTx(contextParts)},
		{Name: "20261128000200", Comment: "a form pause's assignee role", Up: inTx(assigneeRole)},
		{Name: "20261128000230", Comment: "published workflow versions of processes and bundles; idempotency key requests", Up: inTx(publishedWorkflowVersions)},
		{Name: "20261128000260", Comment: "run_search_keys: the runs a search key value finds", Up: inTx(runSearchKeys)},
		{Name: "20261128001500", Comment: "run_retries (a retried run's link to the failed run), run_operations", Up: inTx(runRetriesOperations)},
		{Name: "20261207000100", Comment: "drop jobs_run_at, which no query reads", Up: inTx(dropJobsRunAt)},
		{Name: "20261207000200", Comment: "fewer B-trees a run writes: jobs_org_workflow partial; run_context and run_steps clustered on SQLite", Up: inTx(runPages)},
		{Name: "20261208000100", Comment: "events without AUTOINCREMENT on SQLite: no sqlite_sequence page a step commit", Up: inTx(eventsRowid)},
	}
}
