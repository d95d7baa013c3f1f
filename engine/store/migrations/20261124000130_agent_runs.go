package migrations

// agentRuns creates the runs of agents.
var agentRuns = statements(
	`CREATE TABLE IF NOT EXISTS "agent_runs" (
		"org_id" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "parent_run_id" VARCHAR NOT NULL,
		"parent_step" {int} NOT NULL, "status" VARCHAR NOT NULL, "reason" VARCHAR NOT NULL,
		"iterations" {int} NOT NULL, "config" text NOT NULL, "state" text,
		"created_at" {time} NOT NULL, "updated_at" {time} NOT NULL, "finished_at" {time},
		PRIMARY KEY ("org_id", "id"))`,
	`CREATE INDEX IF NOT EXISTS "agent_runs_org_created" ON "agent_runs" ("org_id", "created_at", "id")`,
	`CREATE INDEX IF NOT EXISTS "agent_runs_org_parent" ON "agent_runs" ("org_id", "parent_run_id")`,
)
