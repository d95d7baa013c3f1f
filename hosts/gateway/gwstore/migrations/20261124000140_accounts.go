package migrations

import schema "github.com/svcflow/svcflow/engine/store/migrations"

// accounts creates the gateway's accounts, organizations, keys, usage and rate-limit
// buckets.
var accounts = schema.Statements(
	`CREATE TABLE IF NOT EXISTS "gateway_accounts" (
		"id" VARCHAR NOT NULL, "email" VARCHAR NOT NULL, "name" VARCHAR NOT NULL,
		"status" VARCHAR NOT NULL, "token_prefix" VARCHAR NOT NULL,
		"token_hash" VARCHAR NOT NULL, "created_at" {time} NOT NULL,
		"updated_at" {time} NOT NULL, PRIMARY KEY ("id"), UNIQUE ("email"),
		UNIQUE ("token_hash"))`,
	`CREATE TABLE IF NOT EXISTS "gateway_orgs" (
		"id" VARCHAR NOT NULL, "account_id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL,
		"created_at" {time} NOT NULL, "updated_at" {time} NOT NULL, PRIMARY KEY ("id"))`,
	`CREATE TABLE IF NOT EXISTS "gateway_keys" (
		"id" VARCHAR NOT NULL, "account_id" VARCHAR NOT NULL, "org_id" VARCHAR NOT NULL,
		"kind" VARCHAR NOT NULL, "prefix" VARCHAR NOT NULL, "hash" VARCHAR NOT NULL,
		"created_at" {time} NOT NULL, "expires_at" {time}, "revoked_at" {time},
		PRIMARY KEY ("id"), UNIQUE ("hash"))`,
	`CREATE TABLE IF NOT EXISTS "gateway_usage" (
		"org_id" VARCHAR NOT NULL, "day" VARCHAR NOT NULL, "class" VARCHAR NOT NULL,
		"requests" {int} NOT NULL, "rate_limited" {int} NOT NULL,
		"runs_started" {int} NOT NULL, PRIMARY KEY ("org_id", "day", "class"))`,
	`CREATE TABLE IF NOT EXISTS "gateway_buckets" (
		"key_id" VARCHAR NOT NULL, "tokens" DOUBLE PRECISION NOT NULL,
		"updated_at" {time} NOT NULL, PRIMARY KEY ("key_id"))`,
	`CREATE INDEX IF NOT EXISTS "gateway_orgs_account" ON "gateway_orgs" ("account_id", "created_at", "id")`,
	`CREATE INDEX IF NOT EXISTS "gateway_keys_org" ON "gateway_keys" ("account_id", "org_id", "created_at", "id")`,
)
