package gwstore

import (
	"context"
	"testing"

	"github.com/svcflow/svcflow/engine/store"
)

// OpenTest is the gateway's store over st's database, migrated, for one test: st is an
// engine store of store.OpenTest (migrated, and closed when the test ends: this store with
// it).
func OpenTest(tb testing.TB, st *store.Store) *Store {
	tb.Helper()
	s := New(st.Shared())
	if err := s.Migrate(context.Background()); err != nil {
		tb.Fatalf("gwstore.OpenTest: %v", err)
	}
	return s
}
