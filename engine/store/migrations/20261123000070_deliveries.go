package migrations

// deliveries creates webhook deliveries, their attempts, and the circuits of their
// targets.
var deliveries = statements(
	`CREATE TABLE IF NOT EXISTS "deliveries" (
		"org_id" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "event" VARCHAR NOT NULL,
		"run_id" VARCHAR NOT NULL, "webhook_id" VARCHAR NOT NULL, "target" VARCHAR NOT NULL,
		"signed" BOOLEAN NOT NULL, "body" {bytes} NOT NULL, "status" VARCHAR NOT NULL,
		"attempts" {int} NOT NULL, "recorded" {int} NOT NULL, "next_attempt_at" {time},
		"last_status_code" {int} NOT NULL, "last_error" VARCHAR NOT NULL,
		"created_at" {time} NOT NULL, "updated_at" {time} NOT NULL, "completed_at" {time},
		PRIMARY KEY ("org_id", "id"))`,
	`CREATE TABLE IF NOT EXISTS "delivery_attempts" (
		"org_id" VARCHAR NOT NULL, "delivery_id" VARCHAR NOT NULL, "n" {int} NOT NULL,
		"at" {time} NOT NULL, "outcome" VARCHAR NOT NULL, "status_code" {int} NOT NULL,
		"latency_ms" {int} NOT NULL, "error" VARCHAR NOT NULL, "next_attempt_at" {time},
		PRIMARY KEY ("org_id", "delivery_id", "n"))`,
	`CREATE TABLE IF NOT EXISTS "webhook_circuits" (
		"org_id" VARCHAR NOT NULL, "url_hash" VARCHAR NOT NULL, "state" text NOT NULL,
		"updated_at" {time} NOT NULL, PRIMARY KEY ("org_id", "url_hash"))`,
	`CREATE INDEX IF NOT EXISTS "deliveries_org_created" ON "deliveries" ("org_id", "created_at", "id")`,
	`CREATE INDEX IF NOT EXISTS "deliveries_org_webhook_created" ON "deliveries" ("org_id", "webhook_id", "created_at", "id")`,
)
