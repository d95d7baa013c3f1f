package migrations

// oauthConnections creates OAuth connections and the authorization flows in progress. A
// connection is one row per (org_id, id), unique by (org_id, provider, account), its
// tokens one sealed value (engine/secrets, the org id and the connection id as additional
// data) beside the id of the master key and a version that every token write increments. A
// state row is keyed by (org_id, state_hash): the state names its organization, and the
// hash alone is stored, so a read of the table cannot finish anyone's flow.
var oauthConnections = statements(
	`CREATE TABLE IF NOT EXISTS "oauth_connections" (
		"org_id" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "provider" VARCHAR NOT NULL,
		"account" VARCHAR NOT NULL, "scopes" text NOT NULL, "expires_at" {time},
		"has_refresh" BOOLEAN NOT NULL, "source" VARCHAR NOT NULL, "sealed" {bytes} NOT NULL,
		"master_key_id" VARCHAR NOT NULL, "version" {int} NOT NULL,
		"created_at" {time} NOT NULL, "updated_at" {time} NOT NULL,
		PRIMARY KEY ("org_id", "id"))`,
	`CREATE TABLE IF NOT EXISTS "oauth_states" (
		"org_id" VARCHAR NOT NULL, "state_hash" VARCHAR NOT NULL, "provider" VARCHAR NOT NULL,
		"account" VARCHAR NOT NULL, "redirect_url" text NOT NULL, "expires_at" {time} NOT NULL,
		"created_at" {time} NOT NULL, PRIMARY KEY ("org_id", "state_hash"))`,
	`CREATE UNIQUE INDEX IF NOT EXISTS "oauth_connections_org_provider_account" ON "oauth_connections" ("org_id", "provider", "account")`,
)
