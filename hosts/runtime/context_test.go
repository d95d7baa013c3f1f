package runtime_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// contextDoc is GET /runs/{runId}/context/{contextKey} as a client reads it; present tells which
// members the answer had.
type contextDoc struct {
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value"`
	Total   int             `json:"total"`
	Offset  int             `json:"offset"`
	Limit   int             `json:"limit"`
	present map[string]bool
}

func (b *bundle) context(t *testing.T, path, org string) contextDoc {
	t.Helper()
	rec := b.do(t, http.MethodGet, path, org, nil)
	doc := ok[contextDoc](t, rec, http.StatusOK)
	members := ok[map[string]json.RawMessage](t, rec, http.StatusOK)
	doc.present = map[string]bool{}
	for k := range members {
		doc.present[k] = true
	}
	return doc
}

// reconcile runs, in org, a two-leg nway_match of n invoices (INV-00000 ...), each in both
// legs, to completion, and returns the run.
func (b *bundle) reconcile(t *testing.T, org string, n int) runRef {
	t.Helper()
	bank := make([]map[string]any, n)
	for i := range bank {
		bank[i] = map[string]any{"inv": fmt.Sprintf("INV-%05d", i), "amount": i}
	}
	w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", org, workflowBody("recon", `{"actions": [{"type": "nway_match", "properties": {
	    "sets": [{"key": "bank", "records": "@input.bank"}, {"key": "erp", "records": "@input.erp"}],
	    "matchOn": ["inv"], "tolerances": {"amount": {"type": "abs", "value": 0}}}}]}`)), http.StatusCreated)
	run := b.execute(t, org, w.ID, map[string]any{"bank": bank, "erp": bank})
	b.work(t)
	status := ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status?context=false", org, nil), http.StatusOK)
	require.Equal(t, "completed", status["status"], "%v", status)
	return run
}

func groupKeys(t *testing.T, value json.RawMessage) []string {
	t.Helper()
	var groups []struct {
		MatchKey string `json:"match_key"`
	}
	require.NoError(t, json.Unmarshal(value, &groups), "value: %.200s", value)
	keys := []string{}
	for _, g := range groups {
		keys = append(keys, g.MatchKey)
	}
	return keys
}

func invoiceKeys(from, to int) []string {
	out := []string{}
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("INV-%05d", i))
	}
	return out
}

// TestRunContextRoute follows nway_matcher.completed's result_reference to the groups and
// pages through them, then reads a whole value, and checks every refusal.
func TestRunContextRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := b.reconcile(t, orgA, 1_050)

	var ref string
	events := ok[list[eventDoc]](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/events", orgA, nil), http.StatusOK)
	for _, e := range events.Items {
		if e.Event == "nway_matcher.completed" {
			ref, _ = e.Payload["result_reference"].(string)
		}
	}
	require.Equal(t, "/runs/"+run.ID+"/context/matchGroups", ref)

	pages := []struct {
		query                string
		want                 []string
		offset, limit, total int
	}{
		{"", invoiceKeys(0, 100), 0, 100, 1_050},
		{"?limit=10", invoiceKeys(0, 10), 0, 10, 1_050},
		{"?offset=500&limit=25", invoiceKeys(500, 525), 500, 25, 1_050},
		{"?offset=1000", invoiceKeys(1000, 1050), 1000, 100, 1_050},
		{"?limit=1000", invoiceKeys(0, 1000), 0, 1000, 1_050},
		{"?offset=1050", []string{}, 1050, 100, 1_050},
		{"?offset=99999&limit=5", []string{}, 99999, 5, 1_050},
	}
	for _, p := range pages {
		doc := b.context(t, ref+p.query, orgA)
		require.Equal(t, "matchGroups", doc.Key, p.query)
		require.Equal(t, p.want, groupKeys(t, doc.Value), p.query)
		require.Equal(t, map[string]bool{"key": true, "value": true, "total": true, "offset": true, "limit": true}, doc.present, p.query)
		require.Equal(t, p.total, doc.Total, p.query)
		require.Equal(t, p.offset, doc.Offset, p.query)
		require.Equal(t, p.limit, doc.Limit, p.query)
	}
	// A group is the whole row, as the status document has it.
	var first []map[string]any
	require.NoError(t, json.Unmarshal(b.context(t, ref+"?limit=1", orgA).Value, &first))
	require.Equal(t, "full", first[0]["classification"])
	require.Equal(t, []any{"bank", "erp"}, first[0]["legs_present"])

	// A value that is not an array comes whole, with or without paging parameters.
	for _, q := range []string{"", "?offset=3&limit=1"} {
		doc := b.context(t, "/runs/"+run.ID+"/context/matchGroupCounts"+q, orgA)
		require.Equal(t, map[string]bool{"key": true, "value": true}, doc.present, q)
		require.JSONEq(t, `{"groups": 1050, "full": 1050, "variance": 0, "missing_leg": 0, "orphan": 0}`, string(doc.Value), q)
	}
	doc := b.context(t, "/runs/"+run.ID+"/context/__run_id", orgA)
	require.JSONEq(t, `"`+run.ID+`"`, string(doc.Value))

	// Not found: a key the run lacks, a run that does not exist, another org's run.
	p := problem(t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/context/nope", orgA, nil), http.StatusNotFound, "not_found")
	require.Contains(t, p.Detail, `"nope"`)
	p = problem(t, b.do(t, http.MethodGet, "/runs/run-missing/context/matchGroups", orgA, nil), http.StatusNotFound, "not_found")
	require.Equal(t, "run not found", p.Detail)
	for _, path := range []string{ref, ref + "?offset=5", "/runs/" + run.ID + "/context/nope", "/runs/" + run.ID + "/context/__run_id"} {
		rec := b.do(t, http.MethodGet, path, orgB, nil)
		p = problem(t, rec, http.StatusNotFound, "not_found")
		require.Equal(t, "run not found", p.Detail, path)
		require.NotContains(t, rec.Body.String(), "INV-", path)
	}

	// Paging parameters out of range are located at the parameter.
	for q, loc := range map[string]string{
		"?offset=-1": "query.offset", "?offset=x": "query.offset",
		"?limit=0": "query.limit", "?limit=-5": "query.limit", "?limit=10001": "query.limit", "?limit=x": "query.limit",
	} {
		p := problem(t, b.do(t, http.MethodGet, ref+q, orgA, nil), http.StatusUnprocessableEntity, "validation_failed")
		require.NotEmpty(t, p.Errors, q)
		require.Equal(t, loc, p.Errors[0].Location, q)
	}
	// On any key, since the key's type is not known before it is read.
	problem(t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/context/matchGroupCounts?limit=0", orgA, nil), http.StatusUnprocessableEntity, "validation_failed")
	problem(t, b.do(t, http.MethodGet, ref, "", nil), http.StatusUnauthorized, "missing_org")
}

// TestRunStatusContextFlag: ?context=false leaves the context out of the status document;
// the default and ?context=true keep it.
func TestRunStatusContextFlag(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := b.reconcile(t, orgA, 3)
	path := "/runs/" + run.ID + "/status"

	for _, q := range []string{"", "?context=true"} {
		doc := ok[map[string]json.RawMessage](t, b.do(t, http.MethodGet, path+q, orgA, nil), http.StatusOK)
		var runCtx map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(doc["context"], &runCtx), q)
		require.Contains(t, runCtx, "matchGroups", q)
		require.JSONEq(t, `"`+run.ID+`"`, string(runCtx["__run_id"]), q)
	}

	rec := b.do(t, http.MethodGet, path+"?context=false", orgA, nil)
	doc := ok[map[string]json.RawMessage](t, rec, http.StatusOK)
	require.NotContains(t, doc, "context")
	require.NotContains(t, rec.Body.String(), "INV-")
	require.JSONEq(t, `"completed"`, string(doc["status"]))
	require.JSONEq(t, `[{"index": 0, "type": "nway_match", "status": "completed"}]`, string(doc["steps"]))

	p := problem(t, b.do(t, http.MethodGet, path+"?context=nope", orgA, nil), http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, "query.context", p.Errors[0].Location)
	problem(t, b.do(t, http.MethodGet, path+"?context=false", orgB, nil), http.StatusNotFound, "not_found")
	require.False(t, strings.Contains(b.do(t, http.MethodGet, path+"?context=false", orgB, nil).Body.String(), run.ID))
}
