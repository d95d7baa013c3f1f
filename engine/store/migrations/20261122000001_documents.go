package migrations

// documents creates the documents feature's tables. A document row carries its latest
// version's content type and size; versions are immutable; document_blobs holds the
// content when it is kept in the database (the default), one row per version;
// document_tags indexes tags for the ?tag= filter (the document row keeps them in order);
// document_event_subjects records the tags and content type of the document each document
// event is about, for webhook filters.
var documents = statements(
	`CREATE TABLE IF NOT EXISTS "documents" (
		"org_id" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL,
		"content_type" VARCHAR NOT NULL, "tags" text, "size_bytes" {int} NOT NULL,
		"version" {int} NOT NULL, "expires_at" {time}, "created_at" {time} NOT NULL,
		"updated_at" {time} NOT NULL, PRIMARY KEY ("org_id", "id"))`,
	`CREATE TABLE IF NOT EXISTS "document_versions" (
		"org_id" VARCHAR NOT NULL, "document_id" VARCHAR NOT NULL, "version" {int} NOT NULL,
		"content_type" VARCHAR NOT NULL, "size_bytes" {int} NOT NULL,
		"sha256" VARCHAR NOT NULL, "created_at" {time} NOT NULL,
		PRIMARY KEY ("org_id", "document_id", "version"),
		FOREIGN KEY ("org_id", "document_id") REFERENCES "documents" ("org_id", "id") ON DELETE CASCADE)`,
	`CREATE TABLE IF NOT EXISTS "document_blobs" (
		"org_id" VARCHAR NOT NULL, "document_id" VARCHAR NOT NULL, "version" {int} NOT NULL,
		"data" {bytes} NOT NULL, PRIMARY KEY ("org_id", "document_id", "version"),
		FOREIGN KEY ("org_id", "document_id", "version") REFERENCES "document_versions" ("org_id", "document_id", "version") ON DELETE CASCADE)`,
	`CREATE TABLE IF NOT EXISTS "document_tags" (
		"org_id" VARCHAR NOT NULL, "document_id" VARCHAR NOT NULL, "tag" VARCHAR NOT NULL,
		PRIMARY KEY ("org_id", "document_id", "tag"),
		FOREIGN KEY ("org_id", "document_id") REFERENCES "documents" ("org_id", "id") ON DELETE CASCADE)`,
	`CREATE TABLE IF NOT EXISTS "document_event_subjects" (
		"org_id" VARCHAR NOT NULL, "delivery_id" VARCHAR NOT NULL,
		"document_id" VARCHAR NOT NULL, "content_type" VARCHAR NOT NULL, "tags" text,
		PRIMARY KEY ("org_id", "delivery_id"))`,
	`CREATE INDEX IF NOT EXISTS "documents_org_created" ON "documents" ("org_id", "created_at", "id")`,
	`CREATE INDEX IF NOT EXISTS "document_tags_org_tag" ON "document_tags" ("org_id", "tag", "document_id")`,
)
