-- The gateway's tables as the engine's migrations created them (engine/store, before the
-- gateway had migrations of its own), statement for statement as bun rendered them on
-- SQLite; each section is one of those migrations, and its record in bun_migrations.
-- adopt_test.go builds a database of the old layout from it.

-- migration 20261124000140
CREATE TABLE IF NOT EXISTS "gateway_accounts" ("id" VARCHAR NOT NULL, "email" VARCHAR NOT NULL, "name" VARCHAR NOT NULL, "status" VARCHAR NOT NULL, "token_prefix" VARCHAR NOT NULL, "token_hash" VARCHAR NOT NULL, "created_at" TIMESTAMP NOT NULL, "updated_at" TIMESTAMP NOT NULL, PRIMARY KEY ("id"), UNIQUE ("email"), UNIQUE ("token_hash"));
CREATE TABLE IF NOT EXISTS "gateway_orgs" ("id" VARCHAR NOT NULL, "account_id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL, "created_at" TIMESTAMP NOT NULL, "updated_at" TIMESTAMP NOT NULL, PRIMARY KEY ("id"));
CREATE TABLE IF NOT EXISTS "gateway_keys" ("id" VARCHAR NOT NULL, "account_id" VARCHAR NOT NULL, "org_id" VARCHAR NOT NULL, "kind" VARCHAR NOT NULL, "prefix" VARCHAR NOT NULL, "hash" VARCHAR NOT NULL, "created_at" TIMESTAMP NOT NULL, "expires_at" TIMESTAMP, "revoked_at" TIMESTAMP, PRIMARY KEY ("id"), UNIQUE ("hash"));
CREATE TABLE IF NOT EXISTS "gateway_usage" ("org_id" VARCHAR NOT NULL, "day" VARCHAR NOT NULL, "class" VARCHAR NOT NULL, "requests" INTEGER NOT NULL, "rate_limited" INTEGER NOT NULL, "runs_started" INTEGER NOT NULL, PRIMARY KEY ("org_id", "day", "class"));
CREATE TABLE IF NOT EXISTS "gateway_buckets" ("key_id" VARCHAR NOT NULL, "tokens" DOUBLE PRECISION NOT NULL, "updated_at" TIMESTAMP NOT NULL, PRIMARY KEY ("key_id"));
CREATE INDEX IF NOT EXISTS "gateway_orgs_account" ON "gateway_orgs" ("account_id", "created_at", "id");
CREATE INDEX IF NOT EXISTS "gateway_keys_org" ON "gateway_keys" ("account_id", "org_id", "created_at", "id");
-- migration 20261126000150
CREATE TABLE IF NOT EXISTS "gateway_codes" ("id" VARCHAR NOT NULL, "org_id" VARCHAR NOT NULL, "email" VARCHAR NOT NULL, "key_id" VARCHAR NOT NULL, "salt" VARCHAR NOT NULL, "hash" VARCHAR NOT NULL, "attempts" INTEGER NOT NULL, "expires_at" TIMESTAMP NOT NULL, "used_at" TIMESTAMP, "created_at" TIMESTAMP NOT NULL, PRIMARY KEY ("org_id", "email"), UNIQUE ("id"));
CREATE TABLE IF NOT EXISTS "gateway_sessions" ("hash" VARCHAR NOT NULL, "prefix" VARCHAR NOT NULL, "org_id" VARCHAR NOT NULL, "key_id" VARCHAR NOT NULL, "email" VARCHAR NOT NULL, "created_at" TIMESTAMP NOT NULL, "expires_at" TIMESTAMP NOT NULL, PRIMARY KEY ("hash"));
CREATE TABLE IF NOT EXISTS "gateway_org_users" ("org_id" VARCHAR NOT NULL, "email" VARCHAR NOT NULL, "approver_roles" VARCHAR NOT NULL, "updated_at" TIMESTAMP NOT NULL, PRIMARY KEY ("org_id", "email"));
CREATE TABLE IF NOT EXISTS "gateway_tiers" ("name" VARCHAR NOT NULL, "rate" DOUBLE PRECISION NOT NULL, "burst" INTEGER NOT NULL, "runs_per_day" INTEGER NOT NULL, "features" VARCHAR NOT NULL, "description" VARCHAR NOT NULL, "updated_at" TIMESTAMP NOT NULL, PRIMARY KEY ("name"));
CREATE TABLE IF NOT EXISTS "gateway_licenses" ("id" VARCHAR NOT NULL, "account_id" VARCHAR NOT NULL, "licensee" VARCHAR NOT NULL, "seats" INTEGER NOT NULL, "features" VARCHAR NOT NULL, "not_before" TIMESTAMP NOT NULL, "expires_at" TIMESTAMP NOT NULL, "license" VARCHAR NOT NULL, "created_at" TIMESTAMP NOT NULL, "revoked_at" TIMESTAMP, PRIMARY KEY ("id"));
CREATE INDEX IF NOT EXISTS "gateway_licenses_account" ON "gateway_licenses" ("account_id", "created_at", "id");
ALTER TABLE "gateway_accounts" ADD tier VARCHAR NOT NULL DEFAULT '';
-- migration 20261128000200
CREATE TABLE IF NOT EXISTS "gateway_signin_policies" ("org_id" VARCHAR NOT NULL, "anyone" BOOLEAN NOT NULL, "domains" text NOT NULL, "updated_at" TIMESTAMP NOT NULL, PRIMARY KEY ("org_id"));
ALTER TABLE gateway_sessions ADD COLUMN form_id VARCHAR NOT NULL DEFAULT '';
