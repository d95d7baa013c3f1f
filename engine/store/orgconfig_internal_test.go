package store

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/storage"
)

var touchesOrgConfig = regexp.MustCompile(`"org_config"|org_config AS`)

// TestOrgConfigStatementsCarryOrgID: every statement the org config methods send names the
// org, but the one that lists organizations for rotation, which reads no value: it selects
// org_id only.
func TestOrgConfigStatementsCarryOrgID(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		s := OpenTest(t, dialect)
		q, log := loggedQuerier(s)

		r := &secrets.Record{OrgID: "o", Key: "api:k", Sealed: []byte("s"), KeyID: "k1"}
		_, err := q.PutOrgConfig(ctx, r)
		require.NoError(t, err)
		_, err = q.PutOrgConfig(ctx, r) // the update path
		require.NoError(t, err)
		got, err := q.GetOrgConfig(ctx, "o", "api:k")
		require.NoError(t, err)
		_, err = q.ListOrgConfig(ctx, "o", secrets.ListFilter{NotKeyID: "k2"})
		require.NoError(t, err)
		require.NoError(t, q.ResealOrgConfig(ctx, got, []byte("t"), "k2"))
		require.ErrorIs(t, q.ResealOrgConfig(ctx, got, []byte("u"), "k2"), storage.ErrConflict)
		require.NoError(t, q.DeleteOrgConfig(ctx, "o", "api:k"))
		orgsAt := len(log.stmts)
		_, err = q.ListOrgConfigOrgs(ctx, secrets.ListFilter{NotKeyID: "k2"})
		require.NoError(t, err)

		log.mu.Lock()
		defer log.mu.Unlock()
		n := 0
		for i, stmt := range log.stmts {
			if !touchesOrgConfig.MatchString(stmt) {
				continue
			}
			n++
			plain := strings.ReplaceAll(stmt, `"`, "")
			if i == orgsAt {
				require.Contains(t, plain, "SELECT DISTINCT org_id FROM org_config")
				require.NotContains(t, plain, "sealed", "the organization listing reads no value")
				continue
			}
			if strings.HasPrefix(plain, "INSERT ") {
				require.Contains(t, plain, "(org_id, key_name, ", "an insert into org_config without the org id")
				continue
			}
			require.Regexp(t, `org_id = 'o'`, plain, "a statement on org_config that does not select by org id")
		}
		require.GreaterOrEqual(t, n, 9)
	})
}
