package migrations

// actions creates the registered actions. One row per (org_id, name): the primary key
// makes a name unique in its organization (409 on create) and serves the lookup and the
// listing by name. The registration is one JSON document (spec, text) beside its kind, so
// a field added to a kind needs no migration; the store never queries inside it.
var actions = statements(
	`CREATE TABLE IF NOT EXISTS "actions" (
		"org_id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL, "kind" VARCHAR NOT NULL,
		"spec" text NOT NULL, "created_at" {time} NOT NULL, "updated_at" {time} NOT NULL,
		PRIMARY KEY ("org_id", "name"))`,
)
