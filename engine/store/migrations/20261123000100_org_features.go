package migrations

// orgFeatures creates the organizations' feature switches.
var orgFeatures = statements(
	`CREATE TABLE IF NOT EXISTS "org_features" (
		"org_id" VARCHAR NOT NULL, "agent_forms" BOOLEAN NOT NULL,
		"updated_at" {time} NOT NULL, PRIMARY KEY ("org_id"))`,
)
