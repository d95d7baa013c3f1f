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
func getProbe(t testing.TB, base, path string) probeAnswer {
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
			p := newProbed(t, dialect)
			requireReady(t, p.url)

			if dialect == "postgres" {
				// Another session holds the migrations table: the probe's read waits, and
				// the probe answers at its deadline instead of hanging with it (how long:
				// BenchmarkProbes).
				unlock := p.lock(t)
				requireNotReady(t, p.url, "store_unavailable")
				unlock()
				requireReady(t, p.url)
			}

			require.NoError(t, p.st.Close())
			a := requireNotReady(t, p.url, "store_unavailable")
			require.Contains(t, p.logs.String(), "not ready")
			require.NotContains(t, a.body["detail"], "closed", "the store's own error is logged, not answered")
		})
	}
}

// probed is a runtime served over a real socket, for the probes.
type probed struct {
	url  string
	dsn  string
	st   *store.Store
	logs *lockedLog
}

func newProbed(tb testing.TB, dialect string) *probed {
	tb.Helper()
	ctx := context.Background()
	p := &probed{dsn: store.NewTestDSN(tb, dialect), logs: &lockedLog{}}
	var err error
	p.st, err = store.Open(ctx, p.dsn)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = p.st.Close() })
	require.NoError(tb, p.st.Migrate(ctx))
	eng, err := engine.New(engine.Config{Store: p.st, Logger: testlog.Quiet()})
	require.NoError(tb, err)
	var h http.Handler = runtime.New(eng, runtime.Options{Logger: testlog.Tee(slog.NewTextHandler(p.logs, nil))}).Handler()
	if _, isTest := tb.(*testing.T); isTest {
		h = contract.Handler(tb, h) // the contract test under the probes' answers; not under the benchmark's
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// lock has another session hold the migrations table (PostgreSQL) until the returned
// unlock.
func (p *probed) lock(tb testing.TB) (unlock func()) {
	tb.Helper()
	ctx := context.Background()
	admin, err := sql.Open("pgx", p.dsn)
	require.NoError(tb, err)
	tx, err := admin.BeginTx(ctx, nil)
	require.NoError(tb, err)
	_, err = tx.ExecContext(ctx, "LOCK TABLE bun_migrations IN ACCESS EXCLUSIVE MODE")
	require.NoError(tb, err)
	return func() {
		require.NoError(tb, tx.Rollback())
		require.NoError(tb, admin.Close())
	}
}

// BenchmarkProbes measures what TestProbes asserts only the answers of: /healthz and
// /readyz of a runtime that serves, /readyz while PostgreSQL holds a lock its read waits for
// (about runtime.ReadyTimeout, 2 s), and /readyz once the store is closed (at once).
func BenchmarkProbes(b *testing.B) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		b.Run(dialect, func(b *testing.B) {
			p := newProbed(b, dialect)
			took := map[string]time.Duration{}
			for b.Loop() {
				took["healthz"] += getProbe(b, p.url, "/healthz").took
				took["readyz"] += getProbe(b, p.url, "/readyz").took
			}
			for _, k := range []string{"healthz", "readyz"} {
				b.ReportMetric(float64(took[k].Microseconds())/1000/float64(b.N), k+"-ms")
			}
			if dialect == "postgres" {
				unlock := p.lock(b)
				a := getProbe(b, p.url, "/readyz")
				unlock()
				require.Equal(b, http.StatusServiceUnavailable, a.status)
				b.ReportMetric(float64(a.took.Microseconds())/1000, "readyz-locked-ms")
			}
			require.NoError(b, p.st.Close())
			a := getProbe(b, p.url, "/readyz")
			require.Equal(b, http.StatusServiceUnavailable, a.status)
			b.ReportMetric(float64(a.took.Microseconds())/1000, "readyz-closed-ms")
		})
	}
}
