package migrations

// initialSchema creates the run core: workflows and their versions, runs, their steps,
// context, loop items and events, jobs, idempotency keys, and custom tables with their
// rows. Strings are VARCHAR (TEXT affinity on SQLite), opaque JSON documents text, and
// table_rows.data JSON (JSONB on PostgreSQL), which ReadRows and UpdateRows query.
var initialSchema = statements(
	`CREATE TABLE IF NOT EXISTS "workflows" (
		"org_id" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL,
		"version" {int} NOT NULL, "definition" text, "warnings" text,
		"created_at" {time} NOT NULL, "updated_at" {time} NOT NULL,
		PRIMARY KEY ("org_id", "id"))`,
	`CREATE TABLE IF NOT EXISTS "workflow_versions" (
		"org_id" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "version" {int} NOT NULL,
		"name" VARCHAR NOT NULL, "definition" text, "warnings" text,
		"created_at" {time} NOT NULL, PRIMARY KEY ("org_id", "id", "version"))`,
	`CREATE TABLE IF NOT EXISTS "runs" (
		"org_id" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "workflow_id" VARCHAR NOT NULL,
		"workflow_version" {int} NOT NULL, "status" VARCHAR NOT NULL, "input" text,
		"definition" text, "cursor" text, "reason" VARCHAR NOT NULL DEFAULT '',
		"idempotency_key" VARCHAR, "created_at" {time} NOT NULL, "updated_at" {time} NOT NULL,
		"finished_at" {time}, PRIMARY KEY ("org_id", "id"))`,
	`CREATE TABLE IF NOT EXISTS "idempotency_keys" (
		"org_id" VARCHAR NOT NULL, "key" VARCHAR NOT NULL, "run_id" VARCHAR NOT NULL,
		"expires_at" {time} NOT NULL, PRIMARY KEY ("org_id", "key"))`,
	`CREATE TABLE IF NOT EXISTS "run_context" (
		"org_id" VARCHAR NOT NULL, "run_id" VARCHAR NOT NULL, "key" VARCHAR NOT NULL,
		"value" text, PRIMARY KEY ("org_id", "run_id", "key"))`,
	`CREATE TABLE IF NOT EXISTS "run_steps" (
		"org_id" VARCHAR NOT NULL, "run_id" VARCHAR NOT NULL, "idx" {int} NOT NULL,
		"type" VARCHAR NOT NULL, "status" VARCHAR NOT NULL, "input_summary" text,
		"output" text, "effects" text, "decisions" text, "error" VARCHAR NOT NULL DEFAULT '',
		"started_at" {time}, "finished_at" {time}, PRIMARY KEY ("org_id", "run_id", "idx"))`,
	`CREATE TABLE IF NOT EXISTS "loop_items" (
		"org_id" VARCHAR NOT NULL, "run_id" VARCHAR NOT NULL, "step" {int} NOT NULL,
		"item" {int} NOT NULL, "output" text,
		PRIMARY KEY ("org_id", "run_id", "step", "item"))`,
	`CREATE TABLE IF NOT EXISTS "events" (
		"seq" {serial}, "delivery_id" VARCHAR NOT NULL, "org_id" VARCHAR NOT NULL,
		"run_id" VARCHAR NOT NULL, "event" VARCHAR NOT NULL, "ts" {time} NOT NULL,
		"payload" text)`,
	`CREATE TABLE IF NOT EXISTS "jobs" (
		"id" {serial}, "org_id" VARCHAR NOT NULL, "kind" VARCHAR NOT NULL,
		"run_id" VARCHAR NOT NULL DEFAULT '', "workflow_id" VARCHAR NOT NULL DEFAULT '',
		"run_at" {time} NOT NULL, "attempts" {int} NOT NULL DEFAULT 0, "lease_token" VARCHAR,
		"lease_until" {time}, "payload" text)`,
	`CREATE TABLE IF NOT EXISTS "custom_tables" (
		"org_id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL, "fields" text,
		"created_at" {time} NOT NULL, PRIMARY KEY ("org_id", "name"))`,
	`CREATE TABLE IF NOT EXISTS "table_rows" (
		"id" VARCHAR NOT NULL, "org_id" VARCHAR NOT NULL, "table_name" VARCHAR NOT NULL,
		"key_hash" VARCHAR, "data" {json} NOT NULL, "created_at" {time} NOT NULL,
		"updated_at" {time} NOT NULL, PRIMARY KEY ("id"),
		FOREIGN KEY ("org_id", "table_name") REFERENCES "custom_tables" ("org_id", "name") ON DELETE CASCADE)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS "workflows_org_name" ON "workflows" ("org_id", "name")`,
	`CREATE INDEX IF NOT EXISTS "workflows_org_created" ON "workflows" ("org_id", "created_at", "id")`,
	`CREATE INDEX IF NOT EXISTS "runs_org_created" ON "runs" ("org_id", "created_at", "id")`,
	`CREATE INDEX IF NOT EXISTS "runs_org_workflow_created" ON "runs" ("org_id", "workflow_id", "created_at", "id")`,
	`CREATE INDEX IF NOT EXISTS "events_org_run_seq" ON "events" ("org_id", "run_id", "seq")`,
	`CREATE INDEX IF NOT EXISTS "jobs_run_at" ON "jobs" ("run_at", "id")`,
	`CREATE INDEX IF NOT EXISTS "jobs_org_run" ON "jobs" ("org_id", "run_id")`,
	`CREATE INDEX IF NOT EXISTS "jobs_org_workflow" ON "jobs" ("org_id", "workflow_id")`,
	// NULL key hashes (rows from InsertRow) are distinct in a unique index on both dialects.
	`CREATE UNIQUE INDEX IF NOT EXISTS "table_rows_org_table_key" ON "table_rows" ("org_id", "table_name", "key_hash")`,
	`CREATE INDEX IF NOT EXISTS "table_rows_org_table_created" ON "table_rows" ("org_id", "table_name", "created_at", "id")`,
)
