package migrations

// generatedFormSchemas creates the form schemas generated for steps of the agent_forms
// feature, one per workflow version, step and branch.
var generatedFormSchemas = statements(
	`CREATE TABLE IF NOT EXISTS "generated_form_schemas" (
		"org_id" VARCHAR NOT NULL, "workflow_id" VARCHAR NOT NULL,
		"workflow_version" {int} NOT NULL, "step_index" {int} NOT NULL,
		"on_false" {int} NOT NULL, "schema" text NOT NULL, "attempts" {int} NOT NULL,
		"created_at" {time} NOT NULL,
		PRIMARY KEY ("org_id", "workflow_id", "workflow_version", "step_index", "on_false"))`,
)
