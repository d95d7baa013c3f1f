package migrations

// formPauses creates the form pauses of human-in-the-loop steps.
var formPauses = statements(
	`CREATE TABLE IF NOT EXISTS "form_pauses" (
		"org_id" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "run_id" VARCHAR NOT NULL,
		"workflow_id" VARCHAR NOT NULL, "step_index" {int} NOT NULL, "status" VARCHAR NOT NULL,
		"expected_keys" text, "schema" text, "reminder_intervals" text, "expires_at" {time},
		"submission_id" VARCHAR NOT NULL, "submission" text, "submitted_at" {time},
		"claimed_by" VARCHAR NOT NULL, "created_at" {time} NOT NULL,
		"updated_at" {time} NOT NULL, PRIMARY KEY ("org_id", "id"))`,
	`CREATE INDEX IF NOT EXISTS "form_pauses_org_run_step" ON "form_pauses" ("org_id", "run_id", "step_index")`,
	`CREATE INDEX IF NOT EXISTS "form_pauses_org_created" ON "form_pauses" ("org_id", "created_at", "id")`,
)
