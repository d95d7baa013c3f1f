package migrations

// approvals creates the approvals of human-in-the-loop steps.
var approvals = statements(
	`CREATE TABLE IF NOT EXISTS "approvals" (
		"org_id" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "run_id" VARCHAR NOT NULL,
		"workflow_id" VARCHAR NOT NULL, "step_index" {int} NOT NULL,
		"approver_role" VARCHAR NOT NULL, "status" VARCHAR NOT NULL,
		"comment" VARCHAR NOT NULL, "request_payload" text, "expires_at" {time},
		"approved" BOOLEAN, "decision_comment" VARCHAR NOT NULL, "decided_by" text,
		"decided_at" {time}, "created_at" {time} NOT NULL, PRIMARY KEY ("org_id", "id"))`,
	`CREATE INDEX IF NOT EXISTS "approvals_org_run_status" ON "approvals" ("org_id", "run_id", "status")`,
	`CREATE INDEX IF NOT EXISTS "approvals_org_created" ON "approvals" ("org_id", "created_at", "id")`,
)
