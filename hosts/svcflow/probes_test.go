package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/store"
)

// fleet is a runtime, a gateway and a worker with --health-addr: three processes of the
// real binary on one database, and the base URL of each one's probes.
type fleet struct {
	runtime, gateway, worker *process
	probes                   map[string]string // process name -> base URL of /healthz, /readyz
}

func startFleet(t *testing.T, bin, dsn string) fleet {
	t.Helper()
	f := fleet{probes: map[string]string{}}
	f.runtime = startProcess(t, bin, "", "runtime", "--db", dsn, "--runtime-addr", "127.0.0.1:0")
	f.gateway = startProcess(t, bin, "", "gateway", "--db", dsn, "--gateway-addr", "127.0.0.1:0", "--runtime-url", f.runtime.base)
	f.worker = startProcess(t, bin, "", "worker", "--db", dsn, "--health-addr", "127.0.0.1:0")
	listening := regexp.MustCompile(`health listening"? addr=(\S+)`)
	require.Eventually(t, func() bool {
		m := listening.FindStringSubmatch(f.worker.logs.String())
		if m != nil {
			f.probes["worker"] = "http://" + m[1]
		}
		return m != nil
	}, 30*time.Second, 10*time.Millisecond, "the worker's health listener")
	f.probes["runtime"], f.probes["gateway"] = f.runtime.base, f.gateway.gateway
	return f
}

// probe sends GET base+path with no credential and no X-Org-Id.
func probe(t *testing.T, base, path string) (int, string, map[string]any) {
	t.Helper()
	resp, err := http.Get(base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "%s%s: %s", base, path, raw)
	return resp.StatusCode, resp.Header.Get("Content-Type"), m
}

// requireReady: every process is live and ready.
func (f fleet) requireReady(t *testing.T) {
	t.Helper()
	for name, base := range f.probes {
		code, _, body := probe(t, base, "/healthz")
		require.Equal(t, http.StatusOK, code, "%s /healthz: %v", name, body)
		require.Equal(t, "ok", body["status"])
		code, _, body = probe(t, base, "/readyz")
		require.Equal(t, http.StatusOK, code, "%s /readyz: %v", name, body)
		require.Equal(t, "ready", body["status"])
	}
}

// requireNotReady: every process is live and answers /readyz 503 with a problem of code
// (waiting a little: a pool may hold a connection that has not noticed yet).
func (f fleet) requireNotReady(t *testing.T, code string) {
	t.Helper()
	for name, base := range f.probes {
		var (
			status int
			ct     string
			body   map[string]any
		)
		require.Eventually(t, func() bool {
			status, ct, body = probe(t, base, "/readyz")
			return status == http.StatusServiceUnavailable
		}, 15*time.Second, 50*time.Millisecond, "%s /readyz stays %d: %v", name, status, body)
		require.Equal(t, "application/problem+json", ct, name)
		require.Equal(t, code, body["code"], "%s: %v", name, body)
		require.EqualValues(t, http.StatusServiceUnavailable, body["status"])
		live, _, body := probe(t, base, "/healthz")
		require.Equal(t, http.StatusOK, live, "%s /healthz answers whatever the database: %v", name, body)
	}
	code2, _, body := probe(t, f.runtime.base, "/health")
	require.Equal(t, http.StatusOK, code2, "/health is liveness, as before: %v", body)
}

// TestProbesAcrossProcesses: the runtime, the gateway and a worker with --health-addr,
// each a process of the real binary on one database (SQLite file, PostgreSQL schema), are
// ready; once the database lacks a migration of this build (its record removed, as if an
// older build had migrated it) every /readyz answers 503 migrations_pending while /healthz
// stays 200, and `svcflow migrate` makes them ready again without a restart.
func TestProbesAcrossProcesses(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			dsn := store.NewTestDSN(t, dialect)
			var out, errOut bytes.Buffer
			require.Equal(t, 0, run([]string{"migrate", "--db", dsn}, &out, &errOut), errOut.String())
			f := startFleet(t, bin, dsn)
			f.requireReady(t)

			var db *sql.DB
			var err error
			if dialect == "sqlite" {
				db, err = sql.Open("sqlite", strings.TrimPrefix(dsn, "sqlite:"))
			} else {
				db, err = sql.Open("pgx", dsn)
			}
			require.NoError(t, err)
			defer db.Close()
			res, err := db.Exec(`DELETE FROM bun_migrations WHERE name = (SELECT max(name) FROM bun_migrations)`)
			require.NoError(t, err)
			n, err := res.RowsAffected()
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			f.requireNotReady(t, "migrations_pending")

			require.Equal(t, 0, run([]string{"migrate", "--db", dsn}, &out, &errOut), errOut.String())
			f.requireReady(t)
		})
	}
}

// TestReadyzWhenThePostgresDatabaseIsDropped: the runtime, the gateway and a worker with
// --health-addr run on a PostgreSQL database of their own; when it is dropped (its
// sessions ended by the server), every /readyz answers 503 store_unavailable while
// /healthz stays 200, and the processes still stop cleanly on SIGTERM.
func TestReadyzWhenThePostgresDatabaseIsDropped(t *testing.T) {
	t.Parallel()
	base := os.Getenv(store.PostgresDSNEnv)
	if base == "" {
		t.Skip(store.PostgresDSNEnv + " is unset")
	}
	bin := buildBinary(t)
	admin, err := sql.Open("pgx", base)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	name := "svcflow_ready_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	_, err = admin.Exec("CREATE DATABASE " + name)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	u, err := url.Parse(base)
	require.NoError(t, err)
	u.Path = "/" + name
	dsn := u.String()

	f := startFleet(t, bin, dsn)
	f.requireReady(t)

	_, err = admin.Exec("DROP DATABASE " + name + " WITH (FORCE)")
	require.NoError(t, err)
	f.requireNotReady(t, "store_unavailable")

	for _, p := range []*process{f.gateway, f.worker, f.runtime} {
		require.NoError(t, p.stop(), "a process whose database is gone still drains and exits 0; logs:\n%s", p.logs.String())
	}
}
