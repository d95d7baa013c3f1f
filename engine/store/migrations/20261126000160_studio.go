package migrations

// studio creates the process studio: projects, processes and bundles.
var studio = statements(
	`CREATE TABLE IF NOT EXISTS "studio_projects" (
		"id" VARCHAR NOT NULL, "org_id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL,
		"description" VARCHAR NOT NULL, "created_at" {time} NOT NULL, PRIMARY KEY ("id"))`,
	`CREATE TABLE IF NOT EXISTS "studio_processes" (
		"id" VARCHAR NOT NULL, "org_id" VARCHAR NOT NULL, "project_id" VARCHAR NOT NULL,
		"name" VARCHAR NOT NULL, "description" VARCHAR NOT NULL,
		"authoring_mode" VARCHAR NOT NULL, "workflow_id" VARCHAR NOT NULL,
		"published_bundle_id" VARCHAR NOT NULL, "published_at" {time},
		"created_at" {time} NOT NULL, "updated_at" {time} NOT NULL, PRIMARY KEY ("id"))`,
	`CREATE TABLE IF NOT EXISTS "studio_bundles" (
		"id" VARCHAR NOT NULL, "org_id" VARCHAR NOT NULL, "process_id" VARCHAR NOT NULL,
		"version" {int} NOT NULL, "status" VARCHAR NOT NULL,
		"deployment_shape" VARCHAR NOT NULL, "summary" VARCHAR NOT NULL,
		"dsl" VARCHAR NOT NULL, "publish_note" VARCHAR NOT NULL, "published_at" {time},
		"workflow_id" VARCHAR NOT NULL, "created_at" {time} NOT NULL, PRIMARY KEY ("id"))`,
	`CREATE INDEX IF NOT EXISTS "studio_projects_org" ON "studio_projects" ("org_id", "created_at", "id")`,
	`CREATE INDEX IF NOT EXISTS "studio_processes_org" ON "studio_processes" ("org_id", "created_at", "id")`,
	`CREATE UNIQUE INDEX IF NOT EXISTS "studio_processes_name" ON "studio_processes" ("org_id", "project_id", "name")`,
	`CREATE UNIQUE INDEX IF NOT EXISTS "studio_bundles_version" ON "studio_bundles" ("org_id", "process_id", "version")`,
)
