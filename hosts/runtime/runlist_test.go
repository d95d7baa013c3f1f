package runtime_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// listedRun is a run as GET /runs lists it.
type listedRun struct {
	ID              string     `json:"id"`
	WorkflowID      string     `json:"workflow_id"`
	WorkflowName    string     `json:"workflow_name"`
	WorkflowVersion int        `json:"workflow_version"`
	Status          string     `json:"status"`
	CreatedAt       time.Time  `json:"created_at"`
	FinishedAt      *time.Time `json:"finished_at"`
	DurationMS      *int64     `json:"duration_ms"`
}

const invoiceSearchKeys = `{"search_keys":["@input.invoice_id","@input.customer.email","@input.amount","@input.lines.1.sku"],"actions":[]}`

// TestRunSearchKeys: a workflow's search keys find its runs by a value of their input
// (strings, and numbers by their text), only in the organization that started them, and
// combine with the other filters; a bad path is refused with invalid_search_key.
func TestRunSearchKeys(t *testing.T) {
	t.Parallel()
	for _, dialect := range numberDialects(t) {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setupOn(t, dialect)
			w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("invoices", invoiceSearchKeys)), http.StatusCreated)
			r1 := b.execute(t, orgA, w.ID, map[string]any{"invoice_id": "INV-1042", "customer": map[string]any{"email": "a@example.com"}, "amount": 12.5})
			r2 := b.execute(t, orgA, w.ID, map[string]any{"invoice_id": "INV-2", "customer": map[string]any{"email": "a@example.com"},
				"lines": []any{map[string]any{"sku": "SKU-0"}, map[string]any{"sku": "SKU-1"}}})
			r3 := b.execute(t, orgA, w.ID, map[string]any{"invoice_id": map[string]any{"not": "a key"}, "amount": true})
			wB := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgB, workflowBody("invoices", invoiceSearchKeys)), http.StatusCreated)
			rB := b.execute(t, orgB, wB.ID, map[string]any{"invoice_id": "INV-1042"})
			_ = r3

			ids := func(org, q string) []string {
				t.Helper()
				l := ok[list[listedRun]](t, b.do(t, http.MethodGet, "/runs?"+q, org, nil), http.StatusOK)
				out := []string{}
				for _, r := range l.Items {
					require.Equal(t, "invoices", r.WorkflowName)
					out = append(out, r.ID)
				}
				return out
			}
			require.Equal(t, []string{r1.ID}, ids(orgA, "key=INV-1042"), "another organization's run with that value is not found")
			require.Equal(t, []string{rB.ID}, ids(orgB, "key=INV-1042"))
			require.Empty(t, ids(orgB, "key=INV-2"), "orgA's value is invisible to orgB")
			require.ElementsMatch(t, []string{r1.ID, r2.ID}, ids(orgA, "key="+url.QueryEscape("a@example.com")))
			require.Equal(t, []string{r1.ID}, ids(orgA, "key=12.5"), "a number by its text")
			require.Empty(t, ids(orgA, "key=12.50"), "exact text, not the number's value")
			require.Empty(t, ids(orgA, "key=INV-104"), "exact, not a prefix")
			require.Empty(t, ids(orgA, "key=true"), "a boolean is not indexed")
			require.Equal(t, []string{r2.ID}, ids(orgA, "key=SKU-1"), "an array index in the path")
			require.Empty(t, ids(orgA, "key=SKU-0"))
			require.Equal(t, []string{r2.ID}, ids(orgA, "key="+url.QueryEscape("a@example.com")+"&run_id="+r2.ID))
			require.Empty(t, ids(orgA, "key=INV-1042&status=completed&status=failed"))

			for _, keys := range []string{
				`["input.invoice_id"]`, `["@input"]`, `["@invoice_id"]`, `["@input.a b"]`, `["@input.a","@input.a"]`,
				`["@input.a","@input.b","@input.c","@input.d","@input.e","@input.f"]`,
			} {
				def := `{"search_keys":` + keys + `,"actions":[]}`
				p := problem(t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("bad", def)), http.StatusUnprocessableEntity, "invalid_search_key")
				require.NotEmpty(t, p.Errors, keys)
				require.Contains(t, p.Errors[0].Location, "body.definition.search_keys", keys)
				problem(t, b.do(t, http.MethodPut, "/workflows/"+w.ID, orgA, workflowBody("invoices", def)), http.StatusUnprocessableEntity, "invalid_search_key")
			}
			problem(t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("bad", `{"search_keys":"@input.a","actions":[]}`)), http.StatusUnprocessableEntity, "validation_failed")
			require.Equal(t, []string{r1.ID}, ids(orgA, "key=INV-1042"), "a refused update changes nothing")
		})
	}
}

// TestListRunsFilters: the filters of the runs list, each listed run's workflow name and
// duration, and a bad filter's 422.
func TestListRunsFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w1 := b.createWorkflow(t, orgA, "one")
	w2 := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("two", `{"actions":[]}`)), http.StatusCreated)
	r1 := b.execute(t, orgA, w1.ID, map[string]any{"email": "a@example.com"})
	r2 := b.execute(t, orgA, w2.ID, nil)
	r3 := b.execute(t, orgA, w2.ID, nil)
	ok[runRef](t, b.do(t, http.MethodPost, "/runs/"+r3.ID+"/cancel", orgA, nil), http.StatusOK)

	list := func(q string) []listedRun {
		t.Helper()
		return ok[list[listedRun]](t, b.do(t, http.MethodGet, "/runs?"+q, orgA, nil), http.StatusOK).Items
	}
	ids := func(q string) []string {
		t.Helper()
		out := []string{}
		for _, r := range list(q) {
			out = append(out, r.ID)
		}
		return out
	}
	all := list("")
	require.Len(t, all, 3)
	names := map[string]string{}
	for _, r := range all {
		names[r.ID] = r.WorkflowName
		if r.ID == r3.ID {
			require.NotNil(t, r.FinishedAt)
			require.NotNil(t, r.DurationMS, "an ended run has a duration")
			require.Equal(t, r.FinishedAt.Sub(r.CreatedAt).Milliseconds(), *r.DurationMS)
		} else {
			require.Nil(t, r.DurationMS, "a running run has none")
		}
	}
	require.Equal(t, map[string]string{r1.ID: "one", r2.ID: "two", r3.ID: "two"}, names)

	require.ElementsMatch(t, []string{r2.ID, r3.ID}, ids("status=running&status=cancelled&workflow_id="+w2.ID))
	require.ElementsMatch(t, []string{r1.ID, r2.ID, r3.ID}, ids("status=running&status=cancelled"))
	require.Equal(t, []string{r3.ID}, ids("status=cancelled"))
	require.Equal(t, []string{r2.ID}, ids("run_id="+r2.ID))
	require.Equal(t, []string{r2.ID}, ids("run_id="+r2.ID[:13]))
	require.Len(t, ids("run_id=run-"), 3)
	first := all[len(all)-1].CreatedAt
	last := all[0].CreatedAt
	require.Len(t, ids("created_after="+first.Format(time.RFC3339Nano)), 3, "created_after is inclusive")
	require.Empty(t, ids("created_after="+last.Add(time.Millisecond).Format(time.RFC3339Nano)))
	require.Empty(t, ids("created_before="+first.Format(time.RFC3339Nano)), "created_before is exclusive")
	require.Len(t, ids("created_before="+url.QueryEscape(last.Add(time.Hour).In(time.FixedZone("", 3600)).Format(time.RFC3339))), 3, "any offset")

	for q, loc := range map[string]string{
		"created_after=yesterday":     "query.created_after",
		"created_before=2026-11-28":   "query.created_before",
		"status=running&status=bogus": "query.status[1]",
		"run_id=RUN-1":                "",
		"created_after=2026-11-28T10:00:00Z&created_before=2026-11-28T09:00:00Z": "",
	} {
		p := problem(t, b.do(t, http.MethodGet, "/runs?"+q, orgA, nil), http.StatusUnprocessableEntity, "validation_failed")
		require.NotEmpty(t, p.Errors, q)
		if loc != "" {
			require.Equal(t, loc, p.Errors[0].Location, q)
		}
	}
}
