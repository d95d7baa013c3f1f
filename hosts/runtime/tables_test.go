package runtime_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
)

// TestCustomTableRowsPaging writes 2,000 rows and reads them back through
// GET /custom-tables/{tableName}/rows page by page: each row exactly once, oldest first, at
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

// TestPatchedKeyColumns: a PATCH that changes a row's key columns moves the row to its new
// key, so later upserts find it there and not at its old key; a PATCH that would give two
// rows one key is 409 and changes nothing.
func TestPatchedKeyColumns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ok[map[string]any](t, b.do(t, http.MethodPost, "/custom-tables", orgA, map[string]any{
		"name": "kv", "fields": map[string]string{"k": "text", "v": "number", "note": "text"},
	}), http.StatusCreated)
	w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("kv-upsert", `{"actions":[
		{"type":"custom-table","properties":{"table":"kv","operation":"upsert","keys":["k"],"values":["@input.k"],"fields":{"v":"@input.v"}}}]}`)), http.StatusCreated)
	upsert := func(k string, v int) {
		t.Helper()
		run := b.execute(t, orgA, w.ID, map[string]any{"k": k, "v": v})
		b.work(t)
		st := ok[runRef](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil), http.StatusOK)
		require.Equal(t, "completed", st.Status)
	}
	patch := func(where, set map[string]any) *httptest.ResponseRecorder {
		t.Helper()
		return b.do(t, http.MethodPatch, "/custom-tables/kv/rows", orgA, map[string]any{"where": where, "set": set})
	}
	rows := func() []map[string]any {
		t.Helper()
		page := ok[list[rowDoc]](t, b.do(t, http.MethodGet, "/custom-tables/kv/rows", orgA, nil), http.StatusOK)
		out := make([]map[string]any, len(page.Items))
		for i, r := range page.Items {
			out[i] = r.Data
		}
		return out
	}

	upsert("a", 1)
	require.Equal(t, map[string]int{"updated": 1}, ok[map[string]int](t, patch(map[string]any{"k": "a"}, map[string]any{"k": "b"}), http.StatusOK))
	upsert("b", 2) // the patched row is b now: updated in place
	upsert("a", 3) // a is free: a new row
	require.Equal(t, []map[string]any{{"k": "b", "v": float64(2)}, {"k": "a", "v": float64(3)}}, rows())

	// Two rows may not share a key: the patch is refused whole.
	before := rows()
	p := problem(t, patch(map[string]any{"k": "a"}, map[string]any{"k": "b", "note": "x"}), http.StatusConflict, "conflict")
	require.Contains(t, p.Detail, "key")
	problem(t, patch(map[string]any{}, map[string]any{"k": "c"}), http.StatusConflict, "conflict")
	require.Equal(t, before, rows(), "a refused patch changes nothing")

	// A patch of other columns, or of a key to its own value, is no conflict.
	ok[map[string]int](t, patch(map[string]any{}, map[string]any{"note": "seen"}), http.StatusOK)
	ok[map[string]int](t, patch(map[string]any{"k": "a"}, map[string]any{"k": "a", "v": 4}), http.StatusOK)
	upsert("a", 5)
	require.Equal(t, []map[string]any{{"k": "b", "v": float64(2), "note": "seen"}, {"k": "a", "v": float64(5)}}, rows(),
		"an upsert replaces the row's data")
}

// TestCustomTableIndexes: indexes declared with the table and added to it later, their bad
// input (nothing changed), and a where no index serves on a table past the scan threshold:
// refused with the index that would serve it, allowed with scan, served once indexed.
func TestCustomTableIndexes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := ok[map[string]any](t, b.do(t, http.MethodPost, "/custom-tables", orgA, map[string]any{
		"name": "ledger", "fields": map[string]string{"ref": "text", "kind": "text", "n": "number"},
		"indexes": [][]string{{"ref"}, {"kind", "n"}},
	}), http.StatusCreated)
	require.Len(t, created["indexes"], 2)
	for _, ix := range created["indexes"].([]any) {
		require.Equal(t, "ready", ix.(map[string]any)["state"])
	}

	// Bad declarations: 422, and no table.
	for _, body := range []map[string]any{
		{"name": "bad1", "fields": map[string]string{"a": "text"}, "indexes": [][]string{{"nope"}}},
		{"name": "bad2", "fields": map[string]string{"a": "text"}, "indexes": [][]string{{"a"}, {"a"}}},
		{"name": "bad3", "fields": map[string]string{"a": "text"}, "indexes": [][]string{{}}},
		{"name": "bad4", "fields": map[string]string{"a": "text"}, "indexes": [][]string{{"a", "a"}}},
	} {
		problem(t, b.do(t, http.MethodPost, "/custom-tables", orgA, body), http.StatusUnprocessableEntity, "validation_failed")
		problem(t, b.do(t, http.MethodGet, "/custom-tables/"+body["name"].(string)+"/rows", orgA, nil), http.StatusNotFound, "not_found")
	}

	// Past the threshold, in one transaction.
	err := b.st.InTx(t.Context(), func(ctx context.Context, tx engine.Tx) error {
		for i := range 10050 {
			if _, err := tx.InsertRow(ctx, orgA, "ledger", map[string]any{"ref": fmt.Sprintf("r%05d", i), "kind": []string{"a", "b", "c"}[i%3], "n": i % 7}); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	rows := func(q string, status int) *httptest.ResponseRecorder {
		rec := b.do(t, http.MethodGet, "/custom-tables/ledger/rows?"+q, orgA, nil)
		require.Equal(t, status, rec.Code, rec.Body.String())
		return rec
	}
	where := func(w string) string { return "where=" + url.QueryEscape(w) }
	// Indexed: served.
	got := ok[list[rowDoc]](t, rows(where(`{"ref":"r00042"}`), http.StatusOK), http.StatusOK)
	require.Len(t, got.Items, 1)
	require.Equal(t, "r00042", got.Items[0].Data["ref"])
	got = ok[list[rowDoc]](t, rows(where(`{"kind":"b","n":3}`)+"&limit=500", http.StatusOK), http.StatusOK)
	require.Len(t, got.Items, 479, "i%3==1 and i%7==3 for i < 10050")
	// Not indexed: refused, naming the index that would serve it.
	p := problem(t, rows(where(`{"n":3}`), http.StatusUnprocessableEntity), http.StatusUnprocessableEntity, "scan_refused")
	require.Contains(t, p.Errors[0].Message, `POST /custom-tables/ledger/indexes {"columns": ["n"]}`)
	problem(t, b.do(t, http.MethodPatch, "/custom-tables/ledger/rows", orgA, map[string]any{
		"where": map[string]any{"n": 3}, "set": map[string]any{"kind": "z"},
	}), http.StatusUnprocessableEntity, "scan_refused")
	// Asked for: a scan.
	got = ok[list[rowDoc]](t, rows(where(`{"n":3}`)+"&scan=true&limit=5", http.StatusOK), http.StatusOK)
	require.Len(t, got.Items, 5)

	// Added: then served without scan.
	added := ok[map[string]any](t, b.do(t, http.MethodPost, "/custom-tables/ledger/indexes", orgA, map[string]any{"columns": []string{"n"}}), http.StatusCreated)
	require.Len(t, added["indexes"], 3)
	got = ok[list[rowDoc]](t, rows(where(`{"n":3}`)+"&limit=500", http.StatusOK), http.StatusOK)
	require.Len(t, got.Items, 500)
	updated := ok[map[string]int](t, b.do(t, http.MethodPatch, "/custom-tables/ledger/rows", orgA, map[string]any{
		"where": map[string]any{"n": 3}, "set": map[string]any{"kind": "z"},
	}), http.StatusOK)
	require.Equal(t, 1436, updated["updated"], "i%7==3 for i < 10050")
	got = ok[list[rowDoc]](t, rows(where(`{"kind":"z","n":3}`)+"&limit=500", http.StatusOK), http.StatusOK)
	require.Len(t, got.Items, 500, "the patch moved the rows in the (kind, n) index")

	// Bad index input: undeclared column 422, duplicate (any order) 409, another
	// organization's table 404; each changes nothing.
	problem(t, b.do(t, http.MethodPost, "/custom-tables/ledger/indexes", orgA, map[string]any{"columns": []string{"nope"}}), http.StatusUnprocessableEntity, "validation_failed")
	problem(t, b.do(t, http.MethodPost, "/custom-tables/ledger/indexes", orgA, map[string]any{"columns": []string{"n", "kind"}}), http.StatusConflict, "conflict")
	problem(t, b.do(t, http.MethodPost, "/custom-tables/ledger/indexes", orgA, map[string]any{"columns": []string{}}), http.StatusUnprocessableEntity, "validation_failed")
	problem(t, b.do(t, http.MethodPost, "/custom-tables/ledger/indexes", orgB, map[string]any{"columns": []string{"kind"}}), http.StatusNotFound, "not_found")
	tables := ok[list[map[string]any]](t, b.do(t, http.MethodGet, "/custom-tables", orgA, nil), http.StatusOK)
	require.Len(t, tables.Items[0]["indexes"], 3, "nothing added by the refused requests")
}
