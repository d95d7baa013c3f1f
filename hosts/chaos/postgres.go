package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// defaultPostgresDSN is the server the PostgreSQL scenario creates its database on; any
// database of it serves as the administrative connection.
const defaultPostgresDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// createDatabase creates a database named name on the server of base and returns its DSN
// (base with the database replaced) and a function that drops it.
func createDatabase(ctx context.Context, base, name string) (string, func() error, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" {
		return "", nil, fmt.Errorf("the PostgreSQL DSN is not a URL")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u.Path = "/" + name
	drop := func() error {
		defer admin.Close()
		// DROP DATABASE waits for an immediate checkpoint, and that for a spread checkpoint
		// already under way: in a CI run beside other packages' PostgreSQL tests the drop
		// waited 46 s for one (write 173 s, 35,541 files synced), past the 30 s this had.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		// The server may have just restarted: the pool's connections are then dead, and
		// database/sql retries on a fresh one.
		var err error
		for range 3 {
			if _, err = admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err == nil {
				return nil
			}
			time.Sleep(500 * time.Millisecond)
		}
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return u.String(), drop, nil
}

// restartPostgres restarts the machine's PostgreSQL, a Debian cluster: pg_ctlcluster
// <version> main restart, the version being the one directory of /etc/postgresql. It
// returns how long the restart took.
func restartPostgres(ctx context.Context) (time.Duration, error) {
	versions, err := filepath.Glob("/etc/postgresql/*")
	if err != nil || len(versions) != 1 {
		return 0, fmt.Errorf("expected one cluster version under /etc/postgresql, found %d", len(versions))
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	began := time.Now()
	cmd := exec.CommandContext(ctx, "pg_ctlcluster", "--skip-systemctl-redirect", filepath.Base(versions[0]), "main", "restart")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return time.Since(began), fmt.Errorf("pg_ctlcluster restart: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return time.Since(began), nil
}

// postgresBase is the DSN the PostgreSQL scenario starts from: the flag, else
// SVC_TEST_POSTGRES_DSN, else defaultPostgresDSN.
func postgresBase(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := os.Getenv("SVC_TEST_POSTGRES_DSN"); v != "" {
		return v
	}
	return defaultPostgresDSN
}
