package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgAdmin creates and drops the load mode's databases on the server of a DSN.
type pgAdmin struct {
	dsn     *url.URL
	version string // the server's, for the machine's description
}

// openPGAdmin checks that dsn answers (retrying while PostgreSQL restarts) and reads the
// server's version.
func openPGAdmin(ctx context.Context, dsn string) (*pgAdmin, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, errors.New("-pg: want a postgres:// URL")
	}
	a := &pgAdmin{dsn: u}
	err = retrySetup(ctx, "connect to PostgreSQL", func() error {
		return a.exec(ctx, func(conn *pgx.Conn) error {
			return conn.QueryRow(ctx, "SHOW server_version").Scan(&a.version)
		})
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// exec runs fn on a new connection to the admin DSN's database.
func (a *pgAdmin) exec(ctx context.Context, fn func(*pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, a.dsn.String())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return fn(conn)
}

// startTime is when the PostgreSQL server last started (pg_postmaster_start_time).
func (a *pgAdmin) startTime(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := retrySetup(ctx, "ask PostgreSQL its start time", func() error {
		return a.exec(ctx, func(conn *pgx.Conn) error {
			return conn.QueryRow(ctx, "SELECT pg_postmaster_start_time()").Scan(&t)
		})
	})
	return t, err
}

// create makes an empty database name (dropping a leftover of that name) and returns its DSN.
func (a *pgAdmin) create(ctx context.Context, name string) (string, error) {
	err := retrySetup(ctx, "create database "+name, func() error {
		return a.exec(ctx, func(conn *pgx.Conn) error {
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
				return err
			}
			_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
			return err
		})
	})
	if err != nil {
		return "", err
	}
	u := *a.dsn
	u.Path = "/" + name
	return u.String(), nil
}

// drop removes database name, even when ctx was cancelled (an interrupted run).
func (a *pgAdmin) drop(name string) error {
	ctx := context.Background()
	return retrySetup(ctx, "drop database "+name, func() error {
		return a.exec(ctx, func(conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			return err
		})
	})
}

// migrate runs `svcflow migrate --db dsn`, its output going to logPath.
func migrate(ctx context.Context, bin, dsn, logPath string) error {
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, bin, "migrate", "--db", dsn)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: see %s", err, logPath)
	}
	return nil
}
