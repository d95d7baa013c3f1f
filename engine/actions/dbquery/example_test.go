package dbquery_test

import (
	"context"
	"fmt"

	"github.com/svcflow/svcflow/engine/actions/dbquery"
)

func ExamplePool_Query() {
	// A deployment that allows private targets may query SQLite files (and databases on its
	// own network); the executor keeps one Pool for every db step.
	pool := dbquery.NewPool(dbquery.PoolOptions{AllowPrivateTargets: true})
	defer pool.Close()
	ctx := context.Background()
	const dsn = "sqlite::memory:"

	_, _ = pool.Query(ctx, dsn, "CREATE TABLE customers (id INTEGER, email TEXT, tier TEXT)", nil, dbquery.Options{})
	_, _ = pool.Query(ctx, dsn, "INSERT INTO customers VALUES ($1, $2, $3), ($4, $5, $3)",
		[]any{1, "ada@example.com", "gold", 2, "'; DROP TABLE customers; --"}, dbquery.Options{})

	rows, err := pool.Query(ctx, dsn, "SELECT id, email FROM customers WHERE tier = $1 ORDER BY id", []any{"gold"}, dbquery.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, row := range rows {
		fmt.Println(row["id"], row["email"])
	}
	// Output:
	// 1 ada@example.com
	// 2 '; DROP TABLE customers; --
}

func ExamplePool_Query_tooManyRows() {
	pool := dbquery.NewPool(dbquery.PoolOptions{AllowPrivateTargets: true})
	defer pool.Close()
	_, err := pool.Query(context.Background(), "sqlite::memory:",
		"WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < $1) SELECT n FROM c",
		[]any{10_001}, dbquery.Options{})
	fmt.Println(err)
	// Output: dbquery: sqlite: too many rows: more than 10000 rows; narrow the query (WHERE, LIMIT)
}

func ExamplePool_Query_guard() {
	pool := dbquery.NewPool(dbquery.PoolOptions{}) // the default: no private targets
	defer pool.Close()
	_, err := pool.Query(context.Background(), "postgres://postgres:pw@127.0.0.1:5432/svcflow", "SELECT 1", nil, dbquery.Options{})
	fmt.Println(err)
	// Output: dbquery: postgres: target not allowed: 127.0.0.1 is a loopback address (private targets are not allowed in this deployment)
}
