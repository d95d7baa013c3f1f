package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/svctype"
)

// TestExternalFormStatementsCarryOrgID: every statement the external form and submission
// methods send names the org, on both dialects: the public routes find the org in the form
// id, so no statement ever needs to run across organizations.
func TestExternalFormStatementsCarryOrgID(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		s := OpenTest(t, dialect)
		q, log := loggedQuerier(s)

		now := time.Now()
		f := &svctype.ExternalForm{OrgID: "o", ID: "frm-1", Name: "f", Schema: json.RawMessage(`{}`), CreatedAt: now, UpdatedAt: now}
		require.NoError(t, q.CreateExternalForm(ctx, f))
		_, err := q.GetExternalForm(ctx, "o", "frm-1")
		require.NoError(t, err)
		_, err = q.ListExternalForms(ctx, "o", svctype.ListOptions{Limit: 1})
		require.NoError(t, err)
		require.NoError(t, q.ReplaceExternalForm(ctx, f))
		require.NoError(t, q.CreateFormSubmission(ctx, &svctype.FormSubmission{OrgID: "o", ID: "sub_1", FormID: "frm-1", SubmittedAt: now}))
		_, err = q.ListFormSubmissions(ctx, "o", "frm-1", svctype.ListOptions{Limit: 1})
		require.NoError(t, err)
		_, err = q.LockExternalForm(ctx, "o", "frm-1", true)
		require.NoError(t, err)
		require.NoError(t, q.DeleteExternalForm(ctx, "o", "frm-1"))

		log.mu.Lock()
		defer log.mu.Unlock()
		n := 0
		for _, stmt := range log.stmts {
			if !strings.Contains(stmt, `"external_forms"`) && !strings.Contains(stmt, `"form_submissions"`) {
				continue
			}
			n++
			plain := strings.ReplaceAll(stmt, `"`, "")
			if strings.HasPrefix(plain, "INSERT ") {
				require.Contains(t, plain, "(org_id, id, ", "an insert without the org id: %s", plain)
				continue
			}
			require.Contains(t, plain, "org_id = 'o'", "a statement that does not select by org id: %s", plain)
		}
		require.Equal(t, 9, n)
	})
}
