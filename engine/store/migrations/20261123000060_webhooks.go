package migrations

// webhooks creates the webhook registrations. One row per (org_id, id); the listing's
// order (created_at, id) has an index of its own after the org id. The secret is one
// sealed value (engine/secrets, the org id and webhook:<id> as additional data) beside the
// id of its master key, both empty for a registration without one; filter and auto_payload
// are JSON text, empty when absent. Health (disabled, disabled_at, consecutive_failures)
// is written by its own statements, never with the registration.
var webhooks = statements(
	`CREATE TABLE IF NOT EXISTS "webhooks" (
		"org_id" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "event" VARCHAR NOT NULL,
		"event_alias" VARCHAR NOT NULL, "url" text NOT NULL, "filter" text NOT NULL,
		"auto_payload" text NOT NULL, "secret_sealed" {bytes},
		"master_key_id" VARCHAR NOT NULL, "disabled" BOOLEAN NOT NULL, "disabled_at" {time},
		"consecutive_failures" {int} NOT NULL, "created_at" {time} NOT NULL,
		"updated_at" {time} NOT NULL, PRIMARY KEY ("org_id", "id"))`,
	`CREATE INDEX IF NOT EXISTS "webhooks_org_created" ON "webhooks" ("org_id", "created_at", "id")`,
)
