package migrations

// generations creates the generations of workflow drafting.
var generations = statements(
	`CREATE TABLE IF NOT EXISTS "studio_generations" (
		"id" VARCHAR NOT NULL, "org_id" VARCHAR NOT NULL, "prompt" VARCHAR NOT NULL,
		"model" VARCHAR NOT NULL, "temperature" DOUBLE PRECISION, "status" VARCHAR NOT NULL,
		"attempts" {int} NOT NULL, "bundle" VARCHAR NOT NULL, "errors" VARCHAR NOT NULL,
		"created_at" {time} NOT NULL, "updated_at" {time} NOT NULL, PRIMARY KEY ("id"))`,
)
