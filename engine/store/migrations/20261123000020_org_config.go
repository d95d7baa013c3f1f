package migrations

// orgConfig creates org_config: one row per organization and key name, the value sealed
// (engine/secrets) and the id of the master key it is sealed under, so that rotation finds
// what it still has to move without opening anything.
var orgConfig = statements(
	`CREATE TABLE IF NOT EXISTS "org_config" (
		"org_id" VARCHAR NOT NULL, "key_name" VARCHAR NOT NULL, "sealed" {bytes} NOT NULL,
		"master_key_id" VARCHAR NOT NULL, "created_at" {time} NOT NULL,
		"updated_at" {time} NOT NULL, PRIMARY KEY ("org_id", "key_name"))`,
)
