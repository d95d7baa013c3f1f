package store

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/svctype"
)

// TestIndexedReadPlan: a where on an indexed column reads the index (EXPLAIN QUERY PLAN on
// SQLite, EXPLAIN on PostgreSQL names it) and the row by its primary key, never the
// table's rows in order; a where no index covers reads the table's rows.
func TestIndexedReadPlan(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{dialectSQLite, dialectPostgres} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			if dialect == dialectPostgres && os.Getenv(PostgresDSNEnv) == "" {
				t.Skip(PostgresDSNEnv + " is unset")
			}
			ctx := context.Background()
			s := OpenTest(t, dialect)
			require.NoError(t, s.CreateTable(ctx, &svctype.Table{OrgID: "o", Name: "t", Fields: map[string]string{"k": "text", "v": "text"}}))
			// Enough rows that PostgreSQL's planner prefers an index to reading them all,
			// written in bulk as the store writes them (bulkRows: k "k0000000"…, v the number).
			require.NoError(t, bulkRows(ctx, s, "o", 3000))
			require.NoError(t, s.AddTableIndex(ctx, "o", "t", svctype.TableIndex{Columns: []string{"k"}}))
			for cursor := ""; ; {
				next, err := s.BuildTableIndex(ctx, "o", "t", "k", cursor, 1000)
				require.NoError(t, err)
				if next == "" {
					break
				}
				cursor = next
			}
			require.NoError(t, s.ReadyTableIndex(ctx, "o", "t", "k"))
			if dialect == dialectPostgres {
				_, err := s.write.ExecContext(ctx, "ANALYZE table_rows; ANALYZE table_index_entries")
				require.NoError(t, err)
			}
			plan := func(where map[string]any) string {
				sel, err := s.selectRows(ctx, "o", "t", where)
				require.NoError(t, err)
				query := sel.Limit(1).String()
				explain := "EXPLAIN "
				if dialect == dialectSQLite {
					explain = "EXPLAIN QUERY PLAN "
				}
				rows, err := s.read.QueryContext(ctx, explain+query)
				require.NoError(t, err)
				defer rows.Close()
				cols, err := rows.Columns()
				require.NoError(t, err)
				var lines []string
				for rows.Next() {
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					require.NoError(t, rows.Scan(ptrs...))
					lines = append(lines, fmt.Sprint(vals[len(vals)-1]))
				}
				require.NoError(t, rows.Err())
				return strings.Join(lines, "\n")
			}
			indexed := plan(map[string]any{"k": "k0001234"})
			scan := plan(map[string]any{"v": 3})
			rows, err := s.ReadRows(ctx, "o", "t", map[string]any{"k": "k0001234"}, 0)
			require.NoError(t, err)
			require.Len(t, rows, 1, "the index finds the bulk-written row")
			t.Logf("indexed:\n%s\nscan:\n%s", indexed, scan)
			if dialect == dialectSQLite {
				require.Regexp(t, `SEARCH tie USING (PRIMARY KEY|(COVERING )?INDEX sqlite_autoindex_table_index_entries_1) \(org_id=\? AND table_name=\? AND index_key=\? AND value_hash=\?`, indexed)
				require.Regexp(t, `SEARCH tr USING INDEX sqlite_autoindex_table_rows_1 \(id=\?\)`, indexed)
				require.NotContains(t, indexed, "table_rows_org_table_created")
				require.Contains(t, scan, "table_rows_org_table_created", "an unindexed where reads the table in order")
				return
			}
			require.Contains(t, indexed, "table_index_entries_pkey")
			require.Contains(t, indexed, "table_rows_pkey")
			require.NotContains(t, scan, "table_index_entries")
		})
	}
}
