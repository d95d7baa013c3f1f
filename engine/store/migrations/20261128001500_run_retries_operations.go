package migrations

// runRetriesOperations creates the links of retried runs (run_retries: a failed run is
// retried at most once, so retry_of is unique in its organization) and the run operations
// (cancel or retry every run a filter matches, worked through in batches).
var runRetriesOperations = statements(
	`CREATE TABLE IF NOT EXISTS "run_retries" (
		"org_id" VARCHAR NOT NULL, "run_id" VARCHAR NOT NULL, "retry_of" VARCHAR NOT NULL,
		"from_step" {int} NOT NULL, "reason" VARCHAR NOT NULL, "actor" text NOT NULL,
		"created_at" {time} NOT NULL,
		PRIMARY KEY ("org_id", "run_id"))`,
	`CREATE UNIQUE INDEX IF NOT EXISTS "run_retries_org_retry_of" ON "run_retries" ("org_id", "retry_of")`,
	`CREATE TABLE IF NOT EXISTS "run_operations" (
		"org_id" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "action" VARCHAR NOT NULL,
		"filter" text NOT NULL, "reason" VARCHAR NOT NULL, "actor" text NOT NULL,
		"status" VARCHAR NOT NULL, "matched" {int} NOT NULL, "done" {int} NOT NULL,
		"skipped" {int} NOT NULL, "failed" {int} NOT NULL, "errors" text NOT NULL,
		"cursor" VARCHAR NOT NULL,
		"created_at" {time} NOT NULL, "updated_at" {time} NOT NULL, "finished_at" {time},
		PRIMARY KEY ("org_id", "id"))`,
	`CREATE INDEX IF NOT EXISTS "run_operations_org_created" ON "run_operations" ("org_id", "created_at", "id")`,
)
