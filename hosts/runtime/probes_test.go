package runtime_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/testlog"
)

// probeAnswer is one answer of a probe over HTTP.
type probeAnswer struct {
	status      int
	contentType string
	body        map[string]any
	took        time.Duration
}

// getProbe sends GET base+path with no header at all (no X-Org-Id).
func getProbe(t *testing.T, base, path string) probeAnswer {
	t.Helper()
	began := time.Now()
	resp, err := http.Get(base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := probeAnswer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), took: time.Since(began)}
	require.NoError(t, json.Unmarshal(raw, &a.body), "%s: %s", path, raw)
	return a
}

// requireReady asserts the three health routes of a runtime that can serve.
func requireReady(t *testing.T, base string) {
	t.Helper()
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/health": "ok"} {
		a := getProbe(t, base, path)
		require.Equal(t, http.StatusOK, a.status, "%s: %v", path, a.body)
		require.Equal(t, want, a.body["status"], path)
	}
}

// requireNotReady asserts /readyz's 503 problem with code while /healthz and /health still
// answer 200: the process lives, its database does not serve.
func requireNotReady(t *testing.T, base, code string) probeAnswer {
	t.Helper()
	a := getProbe(t, base, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, a.status, "%v", a.body)
	require.Equal(t, "application/problem+json", a.contentType)
	require.Equal(t, code, a.body["code"])
	require.EqualValues(t, http.StatusServiceUnavailable, a.body["status"])
	require.NotEmpty(t, a.body["title"])
	require.NotEmpty(t, a.body["detail"])
	for _, path := range []string{"/healthz", "/health"} {
		live := getProbe(t, base, path)
		require.Equal(t, http.StatusOK, live.status, "%s answers whatever the database: %v", path, live.body)
		require.Less(t, live.took, time.Second, "%s asks nothing of the database", path)
	}
	return a
}

// TestProbes serves the runtime over a real socket on each dialect: /healthz, /readyz and
// /health answer 200 without X-Org-Id; a database that does not answer in time (a lock on
// PostgreSQL) and a store that is gone (closed) make /readyz 503 store_unavailable while
// /healthz stays 200.
func TestProbes(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := store.NewTestDSN(t, dialect)
			st, err := store.Open(ctx, dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			require.NoError(t, st.Migrate(ctx))
			eng, err := engine.New(engine.Config{Store: st, Logger: testlog.Quiet()})
			require.NoError(t, err)
			logs := &lockedLog{}
			srv := httptest.NewServer(runtime.New(eng, runtime.Options{Logger: testlog.Tee(slog.NewTextHandler(logs, nil))}).Handler())
			t.Cleanup(srv.Close)

			requireReady(t, srv.URL)

			if dialect == "postgres" {
				// Another session holds the migrations table: the probe's read waits, and
				// the probe answers at its deadline instead of hanging with it.
				admin, err := sql.Open("pgx", dsn)
				require.NoError(t, err)
				t.Cleanup(func() { _ = admin.Close() })
				tx, err := admin.BeginTx(ctx, nil)
				require.NoError(t, err)
				_, err = tx.ExecContext(ctx, "LOCK TABLE bun_migrations IN ACCESS EXCLUSIVE MODE")
				require.NoError(t, err)
				a := requireNotReady(t, srv.URL, "store_unavailable")
				require.GreaterOrEqual(t, a.took, runtime.ReadyTimeout)
				require.Less(t, a.took, runtime.ReadyTimeout+3*time.Second)
				require.NoError(t, tx.Rollback())
				requireReady(t, srv.URL)
			}

			require.NoError(t, st.Close())
			a := requireNotReady(t, srv.URL, "store_unavailable")
			require.Less(t, a.took, runtime.ReadyTimeout, "a closed store fails at once")
			require.Contains(t, logs.String(), "not ready")
			require.NotContains(t, a.body["detail"], "closed", "the store's own error is logged, not answered")
		})
	}
}
