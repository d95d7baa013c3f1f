package migrations

// externalForms creates external forms and their submissions.
var externalForms = statements(
	`CREATE TABLE IF NOT EXISTS "external_forms" (
		"org_id" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL,
		"description" VARCHAR NOT NULL, "is_public" BOOLEAN NOT NULL, "expires_at" {time},
		"trigger_workflow_id" VARCHAR NOT NULL, "trigger_process_id" VARCHAR NOT NULL,
		"schema" text, "settings" text, "created_at" {time} NOT NULL,
		"updated_at" {time} NOT NULL, PRIMARY KEY ("org_id", "id"))`,
	`CREATE TABLE IF NOT EXISTS "form_submissions" (
		"org_id" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "form_id" VARCHAR NOT NULL,
		"payload" text, "triggered_run_id" VARCHAR NOT NULL,
		"triggered_execution_type" VARCHAR NOT NULL, "submitted_by" VARCHAR NOT NULL,
		"created_at" {time} NOT NULL, PRIMARY KEY ("org_id", "id"))`,
	`CREATE INDEX IF NOT EXISTS "external_forms_org_created" ON "external_forms" ("org_id", "created_at", "id")`,
	`CREATE INDEX IF NOT EXISTS "form_submissions_org_form_created" ON "form_submissions" ("org_id", "form_id", "created_at", "id")`,
)
