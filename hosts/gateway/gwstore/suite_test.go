package gwstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
)

// The suite: every case runs on SQLite (a private in-memory database, and a file, whose
// writer and readers are separate connections with WAL) and on PostgreSQL, each subtest on
// a store of its own over an engine store's database, both migrated.

type bundle struct {
	s   *gwstore.Store
	st  *store.Store // the engine's, whose database s shares
	ctx context.Context
}

var cases = []struct {
	name string
	fn   func(t *testing.T, b *bundle)
}{
	{"Gateway", testGateway},
	{"GatewayBuckets", testGatewayBuckets},
	{"GatewayPeople", testGatewayPeople},
	{"Ready", testReady},
}

func TestConformance(t *testing.T) {
	t.Parallel()
	opens := map[string]func(t *testing.T) *store.Store{
		"sqlite": func(t *testing.T) *store.Store { return store.OpenTest(t, "sqlite") },
		"sqlite-file": func(t *testing.T) *store.Store {
			ctx := context.Background()
			st, err := store.Open(ctx, store.NewTestDSN(t, "sqlite"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			require.NoError(t, st.Migrate(ctx))
			return st
		},
		"postgres": func(t *testing.T) *store.Store { return store.OpenTest(t, "postgres") },
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name == "postgres" && os.Getenv(store.PostgresDSNEnv) == "" {
				t.Skip(store.PostgresDSNEnv + " is unset: skipping the PostgreSQL suite")
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					st := open(t)
					c.fn(t, &bundle{s: gwstore.OpenTest(t, st), st: st, ctx: context.Background()})
				})
			}
		})
	}
}
