package store

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/svctype"
)

// TestActionStatementsCarryOrgID: every statement the action methods send names the org
// (DESIGN.md: the store puts the org id in every query), on both dialects.
func TestActionStatementsCarryOrgID(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		s := OpenTest(t, dialect)
		q, log := loggedQuerier(s)

		a := &svctype.Action{OrgID: "o", Name: "n", Kind: svctype.ActionDB, Datasource: "orgconfig:db:x", Query: "SELECT 1"}
		require.NoError(t, q.CreateAction(ctx, a))
		_, err := q.GetAction(ctx, "o", "n")
		require.NoError(t, err)
		_, err = q.ListActions(ctx, "o", svctype.ListOptions{Limit: 1})
		require.NoError(t, err)
		require.NoError(t, q.ReplaceAction(ctx, a))
		require.NoError(t, q.DeleteAction(ctx, "o", "n"))

		log.mu.Lock()
		defer log.mu.Unlock()
		n := 0
		for _, stmt := range log.stmts {
			if !strings.Contains(stmt, `"actions"`) {
				continue
			}
			n++
			plain := strings.ReplaceAll(stmt, `"`, "")
			if strings.HasPrefix(plain, "INSERT ") {
				require.Contains(t, plain, "(org_id, name, ", "an insert into actions without the org id")
				continue
			}
			require.Contains(t, plain, "org_id = 'o'", "a statement on actions that does not select by org id: %s", plain)
		}
		require.Equal(t, 5, n)
	})
}
