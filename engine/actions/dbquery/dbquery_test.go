package dbquery_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/actions/dbquery"
	"github.com/svcflow/svcflow/engine/outbound"
)

// backend is one database the tests run against.
type backend struct {
	name string
	dsn  string
	// sleep is a query that takes about five seconds on this database.
	sleep string
	// types is the column list of the types table.
	types string
	// skip says why the backend is not tested when dsn is empty.
	skip string
}

// backends: SQLite always (a temp file); PostgreSQL and MariaDB/MySQL when their DSN env
// vars are set (.ci/run sets both), else their subtests skip saying so.
func backends(t *testing.T) []backend {
	t.Helper()
	return []backend{{
		name:  "sqlite",
		dsn:   "sqlite:" + filepath.Join(t.TempDir(), "tenant.db"),
		sleep: "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM c",
		types: "id INTEGER, big INTEGER, f REAL, d NUMERIC, s TEXT, b BOOLEAN, day DATE, at DATETIME, j JSON, n TEXT, raw BLOB",
	}, {
		name: "postgres", dsn: os.Getenv("SVC_TEST_POSTGRES_DSN"), sleep: "SELECT pg_sleep(5)",
		skip:  "PostgreSQL not tested: SVC_TEST_POSTGRES_DSN is unset (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)",
		types: "id integer, big bigint, f double precision, d numeric(20,2), s text, b boolean, day date, at timestamptz, j jsonb, n text, raw bytea",
	}, {
		name: "mysql", dsn: os.Getenv("SVC_TEST_MYSQL_DSN"), sleep: "SELECT SLEEP(5)",
		skip:  "MariaDB/MySQL not tested: SVC_TEST_MYSQL_DSN is unset (e.g. mysql://root@127.0.0.1:3306/test)",
		types: "id INT, big BIGINT, f DOUBLE, d DECIMAL(20,2), s VARCHAR(100), b BOOLEAN, day DATE, at DATETIME(3), j JSON, n VARCHAR(10), raw VARBINARY(10)",
	}}
}

// setup is a pool that may reach local databases and a table name of the test's own,
// dropped when the test ends.
func setup(t *testing.T, b backend) (*dbquery.Pool, string) {
	t.Helper()
	pool := dbquery.NewPool(dbquery.PoolOptions{AllowPrivateTargets: true})
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	table := "dbq_" + hex.EncodeToString(suffix[:])
	t.Cleanup(func() {
		_, err := pool.Query(context.Background(), b.dsn, "DROP TABLE IF EXISTS "+table, nil, dbquery.Options{})
		require.NoError(t, err)
		require.NoError(t, pool.Close())
	})
	return pool, table
}

func run(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			if b.dsn == "" {
				t.Skip(b.skip)
			}
			fn(t, b)
		})
	}
}

func TestParamsAreBound(t *testing.T) {
	t.Parallel()
	run(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		pool, table := setup(t, b)
		q := func(query string, params ...any) []map[string]any {
			t.Helper()
			rows, err := pool.Query(ctx, b.dsn, strings.ReplaceAll(query, "{t}", table), params, dbquery.Options{})
			require.NoError(t, err, query)
			return rows
		}
		q("CREATE TABLE {t} (id INTEGER, s VARCHAR(200), note VARCHAR(200))")
		injection := "'; DROP TABLE " + table + "; --"
		require.Empty(t, q("INSERT INTO {t} (id, s, note) VALUES ($1, $2, $3)", 1, injection, "$1 is not a parameter here"))
		q("INSERT INTO {t} (id, s, note) VALUES ($1, $2, $2)", 2.0, "twice") // 2.0: JSON numbers arrive as float64

		// The injection is data, and the table is still there.
		require.Equal(t, []map[string]any{{"s": injection}}, q("SELECT s FROM {t} WHERE id = $1", 1))

		// A repeated and a reordered parameter.
		rows := q("SELECT id FROM {t} WHERE (s = $1 OR note = $1) AND id = $2", "twice", 2)
		require.Equal(t, []map[string]any{{"id": int64(2)}}, rows)
		rows = q("SELECT id, note FROM {t} WHERE id = $2 AND s = $1", injection, 1)
		require.Equal(t, []map[string]any{{"id": int64(1), "note": "$1 is not a parameter here"}}, rows)

		// A $ inside a literal, a quoted identifier or a comment is not a parameter.
		ident := `"x$1"`
		if b.name == "mysql" {
			ident = "`x$1`"
		}
		rows = q("SELECT '$2' AS "+ident+", id /* $2 */ FROM {t} -- $2\nWHERE id = $1", 1)
		require.Equal(t, []map[string]any{{"x$1": "$2", "id": int64(1)}}, rows)

		// A select with no rows is an empty list, not nil.
		rows = q("SELECT id FROM {t} WHERE id = $1", 99)
		require.NotNil(t, rows)
		require.Empty(t, rows)
	})
}

func TestParamMismatch(t *testing.T) {
	t.Parallel()
	run(t, func(t *testing.T, b backend) {
		pool, _ := setup(t, b)
		for _, c := range []struct {
			query  string
			params []any
		}{
			{"SELECT $1 AS a, $3 AS b", []any{1, 2, 3}}, // $2 unused
			{"SELECT $2 AS a", []any{1}},
			{"SELECT $0 AS a", nil},
			{"SELECT ? AS a", []any{1}},
		} {
			if b.name == "postgres" && strings.Contains(c.query, "?") {
				continue // ? is a jsonb operator there
			}
			_, err := pool.Query(context.Background(), b.dsn, c.query, c.params, dbquery.Options{})
			require.ErrorIs(t, err, dbquery.ErrParams, c.query)
		}
	})
}

func TestRowCap(t *testing.T) {
	t.Parallel()
	run(t, func(t *testing.T, b backend) {
		pool, _ := setup(t, b)
		// Not a recursive CTE: MariaDB stops those at 1,000 iterations.
		const series = "WITH d(n) AS (SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4" +
			" UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)" +
			" SELECT a.n + 10*b.n + 100*c.n + 1000*e.n + 10000*f.n AS n FROM d a, d b, d c, d e, d f" +
			" WHERE a.n + 10*b.n + 100*c.n + 1000*e.n + 10000*f.n < $1"
		rows, err := pool.Query(context.Background(), b.dsn, series, []any{10_000}, dbquery.Options{})
		require.NoError(t, err)
		require.Len(t, rows, 10_000)

		rows, err = pool.Query(context.Background(), b.dsn, series, []any{10_001}, dbquery.Options{})
		require.Nil(t, rows)
		require.ErrorIs(t, err, dbquery.ErrTooManyRows)
		require.ErrorContains(t, err, "more than 10000 rows")
		var de *dbquery.Error
		require.ErrorAs(t, err, &de)
		require.Equal(t, dbquery.CodeTooManyRows, de.Code)

		_, err = pool.Query(context.Background(), b.dsn, series, []any{11}, dbquery.Options{MaxRows: 10})
		require.ErrorIs(t, err, dbquery.ErrTooManyRows)
	})
}

func TestTooManyRowsKeepsNothing(t *testing.T) {
	t.Parallel()
	run(t, func(t *testing.T, b backend) {
		if b.name == "mysql" {
			t.Skip("MariaDB has no INSERT ... RETURNING before 10.5 and MySQL none at all")
		}
		pool, table := setup(t, b)
		ctx := context.Background()
		_, err := pool.Query(ctx, b.dsn, "CREATE TABLE "+table+" (id INTEGER)", nil, dbquery.Options{})
		require.NoError(t, err)
		_, err = pool.Query(ctx, b.dsn, "INSERT INTO "+table+" (id) VALUES ($1), ($2), ($3) RETURNING id", []any{1, 2, 3}, dbquery.Options{MaxRows: 2})
		require.ErrorIs(t, err, dbquery.ErrTooManyRows)
		rows, err := pool.Query(ctx, b.dsn, "SELECT count(*) AS n FROM "+table, nil, dbquery.Options{})
		require.NoError(t, err)
		require.Equal(t, int64(0), rows[0]["n"], "the insert was rolled back")
	})
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	run(t, func(t *testing.T, b backend) {
		pool, _ := setup(t, b)
		start := time.Now()
		rows, err := pool.Query(context.Background(), b.dsn, b.sleep, nil, dbquery.Options{Timeout: 500 * time.Millisecond})
		elapsed := time.Since(start)
		require.Nil(t, rows)
		require.ErrorIs(t, err, dbquery.ErrTimeout, "%v", err)
		var de *dbquery.Error
		require.ErrorAs(t, err, &de)
		require.Equal(t, dbquery.CodeTimeout, de.Code)
		require.Less(t, elapsed, 2*time.Second, "ended by the statement timeout (or its context backstop)")

		// The pool's connection is usable afterwards.
		rows, err = pool.Query(context.Background(), b.dsn, "SELECT 1 AS one", nil, dbquery.Options{})
		require.NoError(t, err)
		require.Equal(t, int64(1), rows[0]["one"])
	})
}

func TestTypes(t *testing.T) {
	t.Parallel()
	run(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		pool, table := setup(t, b)
		_, err := pool.Query(ctx, b.dsn, "CREATE TABLE "+table+" ("+b.types+")", nil, dbquery.Options{})
		require.NoError(t, err)
		insert := "INSERT INTO " + table + " (id, big, f, d, s, b, day, at, j, n, raw) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
		switch b.name {
		case "postgres":
			insert = "INSERT INTO " + table + " (id, big, f, d, s, b, day, at, j, n, raw) VALUES ($1, $2, $3, $4::numeric, $5, $6, $7::date, $8::timestamptz, $9::jsonb, $10, $11)"
		case "mysql":
			insert = "INSERT INTO " + table + " (id, big, f, d, s, b, day, at, j, n, raw) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
		}
		at := time.Date(2026, 11, 23, 10, 30, 0, 500_000_000, time.UTC)
		params := []any{
			1.0, json.Number("9007199254740993"), 1.5, "12345678901234.56", "héllo", true,
			"2026-11-23", at, map[string]any{"a": []any{1, "x"}}, nil, []byte{0x00, 0xff},
		}
		if b.name == "sqlite" {
			params[6] = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
		}
		_, err = pool.Query(ctx, b.dsn, insert, params, dbquery.Options{})
		require.NoError(t, err)

		rows, err := pool.Query(ctx, b.dsn, "SELECT * FROM "+table, nil, dbquery.Options{})
		require.NoError(t, err)
		require.Len(t, rows, 1)
		row := rows[0]
		want := map[string]any{
			"id":  int64(1),
			"big": int64(9007199254740993),
			"f":   1.5,
			"d":   json.Number("12345678901234.56"),
			"s":   "héllo",
			"b":   true,
			"day": "2026-11-23",
			"at":  "2026-11-23T10:30:00.5Z",
			"j":   map[string]any{"a": []any{1.0, "x"}},
			"n":   nil,
			"raw": "AP8=", // not UTF-8: base64
		}
		switch b.name {
		case "mysql":
			want["b"] = int64(1) // BOOLEAN is TINYINT(1)
			v, err := pool.Query(ctx, b.dsn, "SELECT VERSION() AS v", nil, dbquery.Options{})
			require.NoError(t, err)
			if strings.Contains(v[0]["v"].(string), "MariaDB") {
				// MariaDB's JSON is LONGTEXT with a check: the driver cannot tell it from text.
				want["j"] = `{"a":[1,"x"]}`
			}
		case "sqlite":
			want["b"] = int64(1)          // SQLite has no booleans
			want["d"] = 12345678901234.56 // NUMERIC affinity stores a REAL
		}
		require.Equal(t, want, row)
		// And every row encodes as JSON.
		_, err = json.Marshal(rows)
		require.NoError(t, err)

		// The same through an unprepared query (MySQL's text protocol hands every value over
		// as text): numbers are still numbers.
		rows, err = pool.Query(ctx, b.dsn, "SELECT id, f, d FROM "+table+" WHERE id = 1", nil, dbquery.Options{})
		require.NoError(t, err)
		require.Equal(t, want["id"], rows[0]["id"])
		require.Equal(t, want["f"], rows[0]["f"])
		require.Equal(t, want["d"], rows[0]["d"])
	})
}

func TestNoSecretsInErrors(t *testing.T) {
	t.Parallel()
	pool := dbquery.NewPool(dbquery.PoolOptions{AllowPrivateTargets: true})
	t.Cleanup(func() { _ = pool.Close() })
	const password = "Wrong-Secret-Pass-9"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	require.NoError(t, l.Close())

	dsns := []string{
		"postgres://svc:" + password + "@" + closed + "/db?sslmode=disable",
		"mysql://svc:" + password + "@" + closed + "/db",
		"postgres://svc:" + password + "@host:notaport/db",
		"mysql://svc:" + password + "@h/db?secretparam=" + password,
		"oracle://svc:" + password + "@h/db",
	}
	if dsn := os.Getenv("SVC_TEST_MYSQL_DSN"); dsn != "" {
		// A real login refused for its password.
		dsns = append(dsns, strings.Replace(dsn, "mysql://root@", "mysql://root:"+password+"@", 1))
	} else {
		t.Log("MariaDB/MySQL login not tested: SVC_TEST_MYSQL_DSN is unset")
	}
	for _, dsn := range dsns {
		_, err := pool.Query(context.Background(), dsn, "SELECT 1", nil, dbquery.Options{Timeout: 5 * time.Second})
		require.Error(t, err, dsn)
		require.NotContains(t, err.Error(), password)
		require.NotContains(t, err.Error(), "Secret")
	}
	if os.Getenv("SVC_TEST_MYSQL_DSN") != "" {
		_, err := pool.Query(context.Background(), dsns[len(dsns)-1], "SELECT 1", nil, dbquery.Options{})
		require.ErrorIs(t, err, dbquery.ErrConnect)
		require.ErrorContains(t, err, "Access denied")
	}
}

func TestGuard(t *testing.T) {
	t.Parallel()
	pool := dbquery.NewPool(dbquery.PoolOptions{}) // private targets not allowed
	t.Cleanup(func() { _ = pool.Close() })
	for _, dsn := range []string{
		"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
		"postgres://postgres@localhost:5432/test?sslmode=disable",
		"postgres://postgres@/test?host=/var/run/postgresql",
		"mysql://root@127.0.0.1:3306/test",
		"mysql://root@[::1]:3306/test",
		"mysql://root@169.254.169.254:3306/test",
		"sqlite:" + filepath.Join(t.TempDir(), "svcflow.db"),
		"sqlite::memory:",
	} {
		_, err := pool.Query(context.Background(), dsn, "SELECT 1", nil, dbquery.Options{})
		require.ErrorIs(t, err, outbound.ErrTargetNotAllowed, dsn)
		var de *dbquery.Error
		require.ErrorAs(t, err, &de)
		require.Equal(t, dbquery.CodeTargetNotAllowed, de.Code)
	}
}

func TestUnsupported(t *testing.T) {
	t.Parallel()
	pool := dbquery.NewPool(dbquery.PoolOptions{AllowPrivateTargets: true})
	t.Cleanup(func() { _ = pool.Close() })
	for _, dsn := range []string{"", "sqlite:", "oracle://u:p@h/db", "mysql://", "mysql://u@h/db?tls=maybe"} {
		_, err := pool.Query(context.Background(), dsn, "SELECT 1", nil, dbquery.Options{})
		require.ErrorIs(t, err, dbquery.ErrUnsupportedDSN, dsn)
	}
}
