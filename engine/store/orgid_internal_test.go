package store

import (
	"context"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// statementLog records the statements a querier sends.
type statementLog struct {
	mu    sync.Mutex
	stmts []string
}

func (l *statementLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (l *statementLog) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stmts = append(l.stmts, e.Query)
}

// loggedQuerier is a querier over s that records in log every statement it sends.
func loggedQuerier(s *Store) (q *querier, log *statementLog) {
	log = &statementLog{}
	return &querier{w: s.write.WithQueryHook(log), r: s.read.WithQueryHook(log), dialect: s.dialect}, log
}

// eachDialect runs fn in a parallel subtest of t for each dialect: PostgreSQL's only when
// PostgresDSNEnv names a server.
func eachDialect(t *testing.T, fn func(t *testing.T, dialect string)) {
	t.Helper()
	for _, dialect := range []string{dialectSQLite, dialectPostgres} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			if dialect == dialectPostgres && os.Getenv(PostgresDSNEnv) == "" {
				t.Skip(PostgresDSNEnv + " is unset")
			}
			fn(t, dialect)
		})
	}
}

var touchesRows = regexp.MustCompile(`"table_rows"|"table_index_entries"`)

// TestRowStatementsCarryOrgID: every statement the custom-table row methods send names the
// org (DESIGN.md: the store puts the org id in every query, no exceptions), on both dialects
// through bun (the prepared SQLite statements are checked by reading sqlitefast.go).
func TestRowStatementsCarryOrgID(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		s := OpenTest(t, dialect)
		q, log := loggedQuerier(s)

		require.NoError(t, q.CreateTable(ctx, &svctype.Table{OrgID: "o", Name: "t", Fields: map[string]string{"k": "text", "v": "number"}}))
		_, err := q.InsertRow(ctx, "o", "t", map[string]any{"k": "x", "v": 0})
		require.NoError(t, err)
		_, _, err = q.UpsertRow(ctx, "o", "t", []string{"k"}, map[string]any{"k": "a", "v": 1})
		require.NoError(t, err)
		_, err = q.ReadRows(ctx, "o", "t", map[string]any{"k": "a"}, 10)
		require.NoError(t, err)
		_, err = q.UpdateRows(ctx, "o", "t", map[string]any{"k": "a"}, map[string]any{"v": 2})
		require.NoError(t, err)

		log.mu.Lock()
		defer log.mu.Unlock()
		n := 0
		for _, stmt := range log.stmts {
			if !touchesRows.MatchString(stmt) {
				continue
			}
			n++
			plain := strings.ReplaceAll(stmt, `"`, "")
			if strings.HasPrefix(plain, "INSERT ") {
				require.Regexp(t, `\((id, )?org_id, `, plain, "an insert into table_rows or its index without the org id")
				continue
			}
			require.Contains(t, plain, "org_id = 'o'", "a statement on table_rows that does not select by org id")
		}
		require.NotZero(t, n)
	})
}
