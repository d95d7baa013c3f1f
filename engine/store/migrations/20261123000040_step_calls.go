package migrations

// stepCalls creates the outbound call intents of steps: one row per (org_id, run_id,
// call_key), its tries and the attempts made.
var stepCalls = statements(
	`CREATE TABLE IF NOT EXISTS "step_calls" (
		"org_id" VARCHAR NOT NULL, "run_id" VARCHAR NOT NULL, "call_key" VARCHAR NOT NULL,
		"tries" {int} NOT NULL, "claim" VARCHAR NOT NULL, "attempts" text,
		"updated_at" {time} NOT NULL, PRIMARY KEY ("org_id", "run_id", "call_key"))`,
)
