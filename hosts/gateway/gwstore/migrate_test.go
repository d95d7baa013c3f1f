package gwstore_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore/migrations"
)

var dialects = []string{"sqlite", "postgres"}

// migrationNames are the ids of the gateway's migrations, in order.
func migrationNames() []string {
	var names []string
	for _, m := range migrations.All() {
		names = append(names, m.Name)
	}
	return names
}

// TestMigrateTwice: migrating again, and from two processes at once, keeps the data and
// records each migration once, in the gateway's own table (never the engine's).
func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := store.OpenTest(t, dialect)
			s := gwstore.OpenTest(t, st)
			require.NoError(t, s.CreateAccount(ctx, &gwstore.Account{ID: "acct_k", Email: "k@example.com", Name: "K", Status: gwstore.AccountActive, TokenHash: "kh"}))
			other := gwstore.New(st.Shared())
			errs := make(chan error, 2)
			go func() { errs <- s.Migrate(ctx) }()
			go func() { errs <- other.Migrate(ctx) }()
			require.NoError(t, <-errs)
			require.NoError(t, <-errs)
			_, err := s.GetAccount(ctx, "acct_k")
			require.NoError(t, err, "migrating again keeps the data")

			w := st.Shared().Writer()
			var recorded []string
			require.NoError(t, w.NewSelect().Table("gateway_migrations").Column("name").Order("name").Scan(ctx, &recorded))
			require.Equal(t, migrationNames(), recorded)
			var inEngine int
			require.NoError(t, w.NewRaw("SELECT count(*) FROM bun_migrations WHERE name IN (?, ?)", "20261124000140", "20261126000150").Scan(ctx, &inEngine))
			require.Zero(t, inEngine, "the engine records none of the gateway's migrations")
		})
	}
}

// oldLayout is the SQL of testdata/engine-layout-<dialect>.sql by section: the statements
// of each of the engine's former gateway migrations, by name, in order.
func oldLayout(t *testing.T, dialect string) (names []string, stmts map[string][]string) {
	t.Helper()
	raw, err := os.ReadFile("testdata/engine-layout-" + dialect + ".sql")
	require.NoError(t, err)
	stmts = map[string][]string{}
	var cur string
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, "-- migration "):
			cur = strings.TrimPrefix(line, "-- migration ")
			names = append(names, cur)
		case line == "", strings.HasPrefix(line, "--"):
		default:
			require.NotEmpty(t, cur, "a statement before the first section")
			stmts[cur] = append(stmts[cur], strings.TrimSuffix(line, ";"))
		}
	}
	return names, stmts
}

// TestAdoptEngineLayout: a database whose gateway tables the engine's migrations made
// (before the gateway had its own), at each of their three stages, with rows in them, is
// adopted by the gateway's migrations: every account, key, session and the rest is kept and
// read back, the columns of the later stages are added, each migration is recorded in the
// gateway's table, and both stores are ready.
func TestAdoptEngineLayout(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		names, stmts := oldLayout(t, dialect)
		require.Equal(t, migrationNames(), names, "a section for each migration the gateway took over")
		for stage := 1; stage <= len(names); stage++ {
			t.Run(dialect+"/through-"+names[stage-1], func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				st, err := store.Open(ctx, store.NewTestDSN(t, dialect))
				require.NoError(t, err)
				t.Cleanup(func() { _ = st.Close() })
				require.NoError(t, st.Migrate(ctx))
				w := st.Shared().Writer()
				exec := func(q string, args ...any) {
					t.Helper()
					_, err := w.ExecContext(ctx, q, args...)
					require.NoError(t, err, q)
				}
				// The old layout, and the engine's records of it.
				at := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
				for _, name := range names[:stage] {
					for _, q := range stmts[name] {
						exec(q)
					}
					exec("INSERT INTO bun_migrations (name, group_id, migrated_at) VALUES (?, 1, ?) ON CONFLICT (name) DO NOTHING", name, at)
				}
				// Rows as the old store wrote them.
				exec(`INSERT INTO gateway_accounts (id, email, name, status, token_prefix, token_hash, created_at, updated_at)
					VALUES ('acct_1', 'ops@example.com', 'Ops', 'active', 'svc_mgmt_ab', 'mgmt-hash', ?, ?)`, at, at)
				exec(`INSERT INTO gateway_orgs (id, account_id, name, created_at, updated_at) VALUES ('org_1', 'acct_1', 'One', ?, ?)`, at, at)
				exec(`INSERT INTO gateway_keys (id, account_id, org_id, kind, prefix, hash, created_at) VALUES
					('key_live', 'acct_1', 'org_1', 'runtime', 'svc_live_ab', 'live-hash', ?),
					('key_pk', 'acct_1', 'org_1', 'publishable', 'svc_pk_ab', 'pk-hash', ?)`, at, at)
				exec(`INSERT INTO gateway_usage (org_id, day, class, requests, rate_limited, runs_started) VALUES ('org_1', '2026-11-20', 'execute', 7, 1, 5)`)
				exec(`INSERT INTO gateway_buckets (key_id, tokens, updated_at) VALUES ('key_live', 3, ?)`, at)
				if stage >= 2 {
					exec(`UPDATE gateway_accounts SET tier = 'pro' WHERE id = 'acct_1'`)
					exec(`INSERT INTO gateway_codes (id, org_id, email, key_id, salt, hash, attempts, expires_at, created_at)
						VALUES ('code_1', 'org_1', 'ann@example.com', 'key_pk', 'salt', 'code-hash', 1, ?, ?)`, at.Add(10*time.Minute), at)
					exec(`INSERT INTO gateway_sessions (hash, prefix, org_id, key_id, email, created_at, expires_at)
						VALUES ('sess-hash', 'svc_sess_ab', 'org_1', 'key_pk', 'ann@example.com', ?, ?)`, at, at.Add(time.Hour))
					exec(`INSERT INTO gateway_org_users (org_id, email, approver_roles, updated_at) VALUES ('org_1', 'ann@example.com', '["finance"]', ?)`, at)
					exec(`INSERT INTO gateway_tiers (name, rate, burst, runs_per_day, features, description, updated_at)
						VALUES ('pro', 5, 10, 100, '["agents"]', 'Pro', ?)`, at)
					exec(`INSERT INTO gateway_licenses (id, account_id, licensee, seats, features, not_before, expires_at, license, created_at)
						VALUES ('lic_1', 'acct_1', 'Ops Ltd', 3, '["agents"]', ?, ?, 'svcl1.x.y', ?)`, at, at.Add(24*time.Hour), at)
				}
				if stage >= 3 {
					exec(`UPDATE gateway_sessions SET form_id = 'frm-1' WHERE hash = 'sess-hash'`)
					exec(`INSERT INTO gateway_signin_policies (org_id, anyone, domains, updated_at) VALUES ('org_1', ?, '["example.com"]', ?)`, false, at)
				}

				s := gwstore.New(st.Shared())
				require.NoError(t, s.Migrate(ctx))
				require.NoError(t, s.Migrate(ctx), "and again")
				require.NoError(t, s.Ready(ctx))
				require.NoError(t, st.Ready(ctx), "the engine's records of the gateway's old migrations do not trouble it")
				var recorded []string
				require.NoError(t, w.NewSelect().Table("gateway_migrations").Column("name").Order("name").Scan(ctx, &recorded))
				require.Equal(t, migrationNames(), recorded)

				// Everything is there, read through the gateway's store.
				a, err := s.AccountByToken(ctx, "mgmt-hash")
				require.NoError(t, err)
				require.Equal(t, "ops@example.com", a.Email)
				require.True(t, at.Equal(a.CreatedAt))
				o, err := s.GetGatewayOrg(ctx, "acct_1", "org_1")
				require.NoError(t, err)
				require.Equal(t, "One", o.Name)
				k, err := s.APIKeyByHash(ctx, "live-hash")
				require.NoError(t, err)
				require.Equal(t, "org_1", k.OrgID)
				require.Equal(t, gwstore.AccountActive, k.AccountStatus)
				keys, err := s.ListAPIKeys(ctx, "acct_1", "org_1", svctype.ListOptions{})
				require.NoError(t, err)
				require.Len(t, keys.Items, 2)
				u, err := s.ListUsage(ctx, "org_1", "2026-11-01", "2026-11-30")
				require.NoError(t, err)
				require.Equal(t, []gwstore.Usage{{OrgID: "org_1", Day: "2026-11-20", Class: "execute", Requests: 7, RateLimited: 1, RunsStarted: 5}}, u)
				took, err := s.TakeTokens(ctx, "key_live", 5, 0, 10, at)
				require.NoError(t, err)
				require.Equal(t, 3.0, took, "the bucket kept its tokens")

				if stage >= 2 {
					require.Equal(t, "pro", k.Tier)
					c, err := s.TrySignInCode(ctx, "org_1", "ann@example.com", 5, at)
					require.NoError(t, err)
					require.Equal(t, "code-hash", c.Hash)
					require.Equal(t, 2, c.Attempts)
					tier, err := s.GetTier(ctx, "pro")
					require.NoError(t, err)
					require.Equal(t, []string{"agents"}, tier.Features)
					l, err := s.GetLicense(ctx, "lic_1")
					require.NoError(t, err)
					require.Equal(t, "Ops Ltd", l.Licensee)
					ou, err := s.GetOrgUser(ctx, "org_1", "ann@example.com")
					require.NoError(t, err)
					require.Equal(t, []string{"finance"}, ou.ApproverRoles)
				} else {
					require.Empty(t, k.Tier, "the column the gateway added")
				}
				if stage >= 2 {
					sess, err := s.SessionByHash(ctx, "sess-hash")
					require.NoError(t, err)
					require.Equal(t, "ann@example.com", sess.Email)
					require.Equal(t, map[bool]string{true: "frm-1", false: ""}[stage >= 3], sess.FormID)
				}
				if stage >= 3 {
					p, err := s.GetSignInPolicy(ctx, "org_1")
					require.NoError(t, err)
					require.Equal(t, []string{"example.com"}, p.Domains)
				} else {
					_, err := s.GetSignInPolicy(ctx, "org_1")
					require.ErrorIs(t, err, gwstore.ErrNotFound, "the table the gateway made is empty")
				}

				// The adopted schema is the one a new database gets.
				fresh := store.OpenTest(t, dialect)
				gwstore.OpenTest(t, fresh)
				require.Equal(t, schemaOf(t, fresh), schemaOf(t, st))
			})
		}
	}
}

// schemaOf describes the gateway's tables of st's database: each column (name, type, null,
// default, key) and each index, in order.
func schemaOf(t *testing.T, st *store.Store) []string {
	t.Helper()
	ctx := context.Background()
	r := st.Shared().Writer()
	var out []string
	if st.Dialect() == "postgres" {
		var cols []struct {
			Table, Column, Type, Nullable string
			Default                       *string
		}
		require.NoError(t, r.NewRaw(`SELECT table_name AS "table", column_name AS "column", data_type AS "type",
			is_nullable AS "nullable", column_default AS "default"
			FROM information_schema.columns WHERE table_schema = current_schema() AND table_name LIKE 'gateway%'
			ORDER BY table_name, column_name`).Scan(ctx, &cols))
		for _, c := range cols {
			d := "-"
			if c.Default != nil {
				d = *c.Default
			}
			out = append(out, strings.Join([]string{c.Table, c.Column, c.Type, c.Nullable, d}, " "))
		}
		var idx []string
		require.NoError(t, r.NewRaw(`SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename LIKE 'gateway%'
			ORDER BY indexname`).Scan(ctx, &idx))
		// The schema's name differs from one database to the other.
		for _, d := range idx {
			out = append(out, regexp.MustCompile(`ON t_[0-9a-f]+\.`).ReplaceAllString(d, "ON "))
		}
		return out
	}
	var cols []struct {
		Table, Column, Type string
		NotNull, PK         int
		Default             *string
	}
	require.NoError(t, r.NewRaw(`SELECT m.name AS "table", p.name AS "column", p.type AS "type", p."notnull" AS not_null,
		p.pk AS pk, p.dflt_value AS "default"
		FROM sqlite_master m JOIN pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name LIKE 'gateway%' ORDER BY m.name, p.name`).Scan(ctx, &cols))
	for _, c := range cols {
		d := "-"
		if c.Default != nil {
			d = *c.Default
		}
		out = append(out, strings.Join([]string{c.Table, c.Column, c.Type, d}, " ")+map[bool]string{true: " not null"}[c.NotNull == 1]+
			map[bool]string{true: " key"}[c.PK > 0])
	}
	var idx []string
	require.NoError(t, r.NewRaw(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name LIKE 'gateway%' ORDER BY name`).Scan(ctx, &idx))
	return append(out, idx...)
}
