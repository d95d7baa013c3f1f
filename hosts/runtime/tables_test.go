package runtime_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
)

// TestCustomTableRowsPaging writes 2,000 rows and reads them back through
// GET /custom-tables/{name}/rows page by page: each row exactly once, oldest first, at
// several page sizes, with ?where= kept from page to page.
func TestCustomTableRowsPaging(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ok[map[string]any](t, b.do(t, http.MethodPost, "/custom-tables", orgA, map[string]any{
		"name": "ledger", "fields": map[string]string{"ref": "text", "parity": "text"},
	}), http.StatusCreated)
	const n = 2000
	var want, odd []string
	err := b.st.InTx(t.Context(), func(ctx context.Context, tx engine.Tx) error {
		for i := range n {
			parity := []string{"even", "odd"}[i%2]
			r, err := tx.InsertRow(ctx, orgA, "ledger", map[string]any{"ref": fmt.Sprintf("r%04d", i), "parity": parity})
			if err != nil {
				return err
			}
			want = append(want, r.ID)
			if parity == "odd" {
				odd = append(odd, r.ID)
			}
		}
		return nil
	})
	require.NoError(t, err)

	pageAll := func(t *testing.T, query url.Values) []string {
		t.Helper()
		var got []string
		seen := map[string]bool{}
		for pages := 0; ; pages++ {
			require.Less(t, pages, n+1, "the listing does not end")
			page := ok[list[rowDoc]](t, b.do(t, http.MethodGet, "/custom-tables/ledger/rows?"+query.Encode(), orgA, nil), http.StatusOK)
			for _, r := range page.Items {
				require.False(t, seen[r.ID], "row %s on two pages", r.ID)
				seen[r.ID] = true
				got = append(got, r.ID)
			}
			if page.NextCursor == "" {
				return got
			}
			query.Set("cursor", page.NextCursor)
		}
	}
	for _, limit := range []string{"", "500", "37"} {
		t.Run("limit="+limit, func(t *testing.T) {
			q := url.Values{}
			if limit != "" {
				q.Set("limit", limit)
			}
			require.Equal(t, want, pageAll(t, q))
		})
	}
	t.Run("where", func(t *testing.T) {
		require.Equal(t, odd, pageAll(t, url.Values{"where": {`{"parity":"odd"}`}, "limit": {"100"}}))
	})

	first := ok[list[rowDoc]](t, b.do(t, http.MethodGet, "/custom-tables/ledger/rows", orgA, nil), http.StatusOK)
	require.Len(t, first.Items, 50, "default page size")
	require.NotEmpty(t, first.NextCursor)
	require.Equal(t, map[string]any{"ref": "r0000", "parity": "even"}, first.Items[0].Data)
	problem(t, b.do(t, http.MethodGet, "/custom-tables/ledger/rows?limit=501", orgA, nil), http.StatusUnprocessableEntity, "validation_failed")
	// The cursor of one table does not open another org's rows.
	problem(t, b.do(t, http.MethodGet, "/custom-tables/ledger/rows?cursor="+url.QueryEscape(first.NextCursor), orgB, nil), http.StatusNotFound, "not_found")
}
