package migrations

import (
	"context"

	"github.com/uptrace/bun"

	schema "github.com/svcflow/svcflow/engine/store/migrations"
)

// signIn adds the gateway's sign-in codes, sessions, approver roles, tiers and licenses,
// and the tier of an account.
func signIn(ctx context.Context, tx bun.Tx) error {
	err := schema.Exec(ctx, tx,
		`CREATE TABLE IF NOT EXISTS "gateway_codes" (
			"id" VARCHAR NOT NULL, "org_id" VARCHAR NOT NULL, "email" VARCHAR NOT NULL,
			"key_id" VARCHAR NOT NULL, "salt" VARCHAR NOT NULL, "hash" VARCHAR NOT NULL,
			"attempts" {int} NOT NULL, "expires_at" {time} NOT NULL, "used_at" {time},
			"created_at" {time} NOT NULL, PRIMARY KEY ("org_id", "email"), UNIQUE ("id"))`,
		`CREATE TABLE IF NOT EXISTS "gateway_sessions" (
			"hash" VARCHAR NOT NULL, "prefix" VARCHAR NOT NULL, "org_id" VARCHAR NOT NULL,
			"key_id" VARCHAR NOT NULL, "email" VARCHAR NOT NULL, "created_at" {time} NOT NULL,
			"expires_at" {time} NOT NULL, PRIMARY KEY ("hash"))`,
		`CREATE TABLE IF NOT EXISTS "gateway_org_users" (
			"org_id" VARCHAR NOT NULL, "email" VARCHAR NOT NULL, "approver_roles" VARCHAR NOT NULL,
			"updated_at" {time} NOT NULL, PRIMARY KEY ("org_id", "email"))`,
		`CREATE TABLE IF NOT EXISTS "gateway_tiers" (
			"name" VARCHAR NOT NULL, "rate" DOUBLE PRECISION NOT NULL, "burst" {int} NOT NULL,
			"runs_per_day" {int} NOT NULL, "features" VARCHAR NOT NULL,
			"description" VARCHAR NOT NULL, "updated_at" {time} NOT NULL, PRIMARY KEY ("name"))`,
		`CREATE TABLE IF NOT EXISTS "gateway_licenses" (
			"id" VARCHAR NOT NULL, "account_id" VARCHAR NOT NULL, "licensee" VARCHAR NOT NULL,
			"seats" {int} NOT NULL, "features" VARCHAR NOT NULL, "not_before" {time} NOT NULL,
			"expires_at" {time} NOT NULL, "license" VARCHAR NOT NULL, "created_at" {time} NOT NULL,
			"revoked_at" {time}, PRIMARY KEY ("id"))`,
		`CREATE INDEX IF NOT EXISTS "gateway_licenses_account" ON "gateway_licenses" ("account_id", "created_at", "id")`,
	)
	if err != nil {
		return err
	}
	return schema.AddColumn(ctx, tx, "gateway_accounts", "tier VARCHAR NOT NULL DEFAULT ''")
}
