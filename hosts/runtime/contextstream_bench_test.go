package runtime_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
)

// discard is a ResponseWriter that keeps nothing of the body but its size.
type discard struct {
	h      http.Header
	status int
	n      int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(status int)      { d.status = status }
func (d *discard) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }

// BenchmarkRunContextWhole reads a matcher-like result of 46,065 pairs (about 12 MB,
// stored in parts of 500) through the route's handler, whole: in pages of 1,000 and of
// 10,000 (the paged JSON), as NDJSON and as CSV. B/element is what the server allocates an
// element; the store's read of a part is most of it.
func BenchmarkRunContextWhole(b *testing.B) {
	const n, per = 46_065, 500
	bb := setup(b)
	w := ok[workflowDoc](b, bb.do(b, http.MethodPost, "/workflows", orgA, workflowBody("w", `{"actions": []}`)), http.StatusCreated)
	run := bb.execute(b, orgA, w.ID, map[string]any{})
	var parts []json.RawMessage
	for i := 0; i < n; i += per {
		var els []string
		for k := i; k < min(i+per, n); k++ {
			els = append(els, fmt.Sprintf(`{"left":{"id":"L%06d","counterparty":"ACME consulting %d","amount":%d.25,"date":"2026-03-%02d"},`+
				`"right":{"id":"R%06d","counterparty":"ACME consulting %d","amount":%d.27,"date":"2026-03-%02d"},"score":0.98,"amount_diff":0.02}`,
				k, k%97, k, 1+k%28, k, k%97, k, 1+k%28))
		}
		parts = append(parts, json.RawMessage("["+strings.Join(els, ",")+"]"))
	}
	require.NoError(b, bb.st.PutContextParts(b.Context(), orgA, run.ID, "matched", storage.Parts(parts...), n, per))
	path := "/runs/" + run.ID + "/context/matched"

	get := func(b *testing.B, url, accept string) int {
		req := httptest.NewRequestWithContext(b.Context(), http.MethodGet, url, nil)
		req.Header.Set("X-Org-Id", orgA)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		w := &discard{h: http.Header{}}
		bb.h.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			b.Fatalf("%s: %d", url, w.status)
		}
		return w.n
	}
	for _, page := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("pages-of-%d", page), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for offset := 0; offset < n; offset += page {
					get(b, fmt.Sprintf("%s?offset=%d&limit=%d", path, offset, page), "")
				}
			}
		})
	}
	for _, accept := range []string{"application/x-ndjson", "text/csv"} {
		b.Run(strings.TrimPrefix(strings.TrimPrefix(accept, "application/x-"), "text/"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				get(b, path, accept)
			}
		})
	}
}
