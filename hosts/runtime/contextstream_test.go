package runtime_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/storage"
)

const (
	acceptNDJSON = "Accept: application/x-ndjson"
	acceptCSV    = "Accept: text/csv"
)

// allPages reads every element of an array key through the paged JSON answer.
func (b *bundle) allPages(t *testing.T, path, org string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for offset := 0; ; offset += engine.MaxContextLimit {
		doc := b.context(t, path+"?limit=10000&offset="+strconv.Itoa(offset), org)
		var page []json.RawMessage
		require.NoError(t, json.Unmarshal(doc.Value, &page))
		out = append(out, page...)
		if offset+engine.MaxContextLimit >= doc.Total {
			return out
		}
	}
}

// lines splits an NDJSON answer into its lines, each checked to end in a newline.
func lines(t *testing.T, body string) []string {
	t.Helper()
	if body == "" {
		return nil
	}
	require.True(t, strings.HasSuffix(body, "\n"), "the last line ends in a newline")
	return strings.Split(strings.TrimSuffix(body, "\n"), "\n")
}

// TestRunContextNDJSON reads a matcher's groups, stored in more parts than one read takes,
// whole as NDJSON: the same elements, byte for byte, as every page of the JSON answer, in
// a streamed answer; then a value that is not an array, an empty array, and each refusal.
func TestRunContextNDJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := b.reconcile(t, orgA, 6_000)
	head, err := b.st.ContextSlice(t.Context(), orgA, run.ID, "matchGroups", 0, 0)
	require.NoError(t, err)
	require.Greater(t, head.Count, engine.StreamPartsRead, "the groups take more than one read of parts")

	path := "/runs/" + run.ID + "/context/matchGroups"
	rec := b.do(t, http.MethodGet, path, orgA, nil, acceptNDJSON)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, "application/x-ndjson", rec.Header().Get("Content-Type"))
	require.Empty(t, rec.Header().Get("Content-Length"), "streamed: its length is not known before")
	got := lines(t, rec.Body.String())
	want := b.allPages(t, path, orgA)
	require.Len(t, got, 6_000)
	for i := range want {
		require.Equal(t, string(want[i]), got[i], "element %d as stored", i)
	}
	// Paging parameters do not page a whole answer.
	rec = b.do(t, http.MethodGet, path+"?offset=10&limit=5", orgA, nil, acceptNDJSON)
	require.Len(t, lines(t, rec.Body.String()), 6_000)
	// Quality values are counted: JSON preferred is JSON.
	doc := ok[contextDoc](t, b.do(t, http.MethodGet, path+"?limit=3", orgA, nil, "Accept: application/x-ndjson;q=0.5, application/json"), http.StatusOK)
	require.Equal(t, 6_000, doc.Total)
	rec = b.do(t, http.MethodGet, path+"?limit=3", orgA, nil, "Accept: text/html, application/x-ndjson;q=0.9")
	require.Equal(t, "application/x-ndjson", rec.Header().Get("Content-Type"))

	// A value that is not an array is one line: an object, the run id; a value stored as a
	// client wrote it, newlines and all, is made one line.
	counts := lines(t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/context/matchGroupCounts", orgA, nil, acceptNDJSON).Body.String())
	require.Len(t, counts, 1)
	require.JSONEq(t, `{"groups": 6000, "full": 6000, "variance": 0, "missing_leg": 0, "orphan": 0}`, counts[0])
	require.Equal(t, []string{`"` + run.ID + `"`}, lines(t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/context/__run_id", orgA, nil, acceptNDJSON).Body.String()))
	require.NoError(t, b.st.PutContext(t.Context(), orgA, run.ID, "typed", json.RawMessage("[\n  {\"a\": 1,\n   \"b\": \"x\\ny\"},\n  2\n]")))
	require.Equal(t, []string{`{"a":1,"b":"x\ny"}`, "2"}, lines(t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/context/typed", orgA, nil, acceptNDJSON).Body.String()))
	require.NoError(t, b.st.PutContext(t.Context(), orgA, run.ID, "typedObject", json.RawMessage("{\n \"a\": [1,\n 2]}")))
	require.Equal(t, []string{`{"a":[1,2]}`}, lines(t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/context/typedObject", orgA, nil, acceptNDJSON).Body.String()))

	// An empty array is an empty answer.
	require.NoError(t, b.st.PutContext(t.Context(), orgA, run.ID, "none", json.RawMessage(`[]`)))
	rec = b.do(t, http.MethodGet, "/runs/"+run.ID+"/context/none", orgA, nil, acceptNDJSON)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Empty(t, rec.Body.String())

	// Not found: a key the run lacks, a run that does not exist, another org's run.
	for _, accept := range []string{acceptNDJSON, acceptCSV} {
		p := problem(t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/context/nope", orgA, nil, accept), http.StatusNotFound, "not_found")
		require.Contains(t, p.Detail, `"nope"`)
		p = problem(t, b.do(t, http.MethodGet, "/runs/run-missing/context/matchGroups", orgA, nil, accept), http.StatusNotFound, "not_found")
		require.Equal(t, "run not found", p.Detail)
		for _, key := range []string{"matchGroups", "none", "nope", "__run_id"} {
			rec := b.do(t, http.MethodGet, "/runs/"+run.ID+"/context/"+key, orgB, nil, accept)
			p = problem(t, rec, http.StatusNotFound, "not_found")
			require.Equal(t, "run not found", p.Detail, key)
			require.NotContains(t, rec.Body.String(), "INV-", key)
		}
	}
}

// TestRunContextCSV reads arrays of objects as CSV: the header in the order keys first
// appear (across parts), every kind of value in a cell, quoting of commas, quotes and line
// ends, unicode; a matcher's groups stored in parts; an empty array; each refusal.
func TestRunContextCSV(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := b.reconcile(t, orgA, 3_000)
	ctx := t.Context()

	// In three parts: the second adds "note", the third "extra"; an object may leave keys out.
	parts := []json.RawMessage{
		json.RawMessage(`[{"id":"a-1","name":"Zoë, \"the\" 東京 office","amount":12345678901234567890.10,"ok":true},` +
			`{"id":"a-2","name":"line one\nline two","amount":-0.5,"ok":false}]`),
		json.RawMessage(`[{"ok":null,"id":"a-3","note":"carriage\rreturn","amount":1e3,"name":""},` +
			`{"id":"a-4","name":{"first":"Ada","tags":["x","y,z"]},"amount":0}]`),
		json.RawMessage(`[{"id":"a-5","extra":[1,{"k":"v"}],"id":"a-5b"}]`),
	}
	require.NoError(t, b.st.PutContextParts(ctx, orgA, run.ID, "rows", storage.Parts(parts...), 5, 2))
	rec := b.do(t, http.MethodGet, "/runs/"+run.ID+"/context/rows", orgA, nil, acceptCSV)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, "text/csv; charset=utf-8; header=present", rec.Header().Get("Content-Type"))
	require.Empty(t, rec.Header().Get("Content-Length"))
	want := "id,name,amount,ok,note,extra\r\n" +
		"a-1,\"Zoë, \"\"the\"\" 東京 office\",12345678901234567890.10,true,,\r\n" +
		"a-2,\"line one\nline two\",-0.5,false,,\r\n" +
		"a-3,,1e3,,\"carriage\rreturn\",\r\n" +
		"a-4,\"{\"\"first\"\":\"\"Ada\"\",\"\"tags\"\":[\"\"x\"\",\"\"y,z\"\"]}\",0,,,\r\n" +
		"a-5b,,,,,\"[1,{\"\"k\"\":\"\"v\"\"}]\"\r\n"
	require.Equal(t, want, rec.Body.String())
	// What a CSV reader makes of it: the values back, unicode and line ends included.
	records, err := csv.NewReader(strings.NewReader(rec.Body.String())).ReadAll()
	require.NoError(t, err)
	require.Len(t, records, 6)
	require.Equal(t, `Zoë, "the" 東京 office`, records[1][1])
	require.Equal(t, "line one\nline two", records[2][1])
	require.JSONEq(t, `{"first":"Ada","tags":["x","y,z"]}`, records[4][1])

	// The same value stored whole answers the same CSV.
	var whole []json.RawMessage
	for _, p := range parts {
		var els []json.RawMessage
		require.NoError(t, json.Unmarshal(p, &els))
		whole = append(whole, els...)
	}
	raw, err := json.Marshal(whole)
	require.NoError(t, err)
	require.NoError(t, b.st.PutContext(ctx, orgA, run.ID, "rowsWhole", raw))
	require.Equal(t, want, b.do(t, http.MethodGet, "/runs/"+run.ID+"/context/rowsWhole", orgA, nil, acceptCSV).Body.String())

	// A matcher's groups, in parts: a row a group, nested values as JSON text.
	path := "/runs/" + run.ID + "/context/matchGroups"
	rec = b.do(t, http.MethodGet, path, orgA, nil, acceptCSV)
	require.Equal(t, http.StatusOK, rec.Code)
	records, err = csv.NewReader(strings.NewReader(rec.Body.String())).ReadAll()
	require.NoError(t, err)
	groups := b.allPages(t, path, orgA)
	require.Len(t, records, 1+len(groups))
	var first map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(groups[0], &first))
	require.Len(t, records[0], len(first))
	for i, col := range records[0] {
		cell := records[1][i]
		var s string
		if json.Unmarshal(first[col], &s) == nil {
			require.Equal(t, s, cell, col)
		} else {
			require.JSONEq(t, string(first[col]), cell, col)
		}
	}
	require.Equal(t, "INV-02999", records[3_000][indexOf(records[0], "match_key")])

	// Empty: no object, no header, an empty answer.
	require.NoError(t, b.st.PutContext(ctx, orgA, run.ID, "none", json.RawMessage(`[]`)))
	rec = b.do(t, http.MethodGet, "/runs/"+run.ID+"/context/none", orgA, nil, acceptCSV)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Empty(t, rec.Body.String())

	// Not an array of objects: 406 not_acceptable, saying what the value is; nothing of it sent.
	require.NoError(t, b.st.PutContext(ctx, orgA, run.ID, "mixed", json.RawMessage(`[{"a":1},{"a":2},"three"]`)))
	require.NoError(t, b.st.PutContextParts(ctx, orgA, run.ID, "mixedParts", storage.Parts(json.RawMessage(`[{"a":1}]`), json.RawMessage(`[[2]]`)), 2, 1))
	for key, why := range map[string]string{
		"matchGroupCounts": "it is an object",
		"__run_id":         "it is a string",
		"mixed":            "its element 2 is a string",
		"mixedParts":       "its element 1 is an array",
	} {
		rec := b.do(t, http.MethodGet, "/runs/"+run.ID+"/context/"+key, orgA, nil, acceptCSV)
		p := problem(t, rec, http.StatusNotAcceptable, "not_acceptable")
		require.Contains(t, p.Detail, why, key)
		require.Contains(t, p.Detail, "application/x-ndjson", key)
	}
	// The JSON answer of the same key is unchanged.
	doc := b.context(t, "/runs/"+run.ID+"/context/mixed", orgA)
	require.JSONEq(t, `[{"a":1},{"a":2},"three"]`, string(doc.Value))
	require.Equal(t, 3, doc.Total)
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestRunContextDefaultIsPagedJSON: without Accept, with */* or application/json, or with a
// type the route does not have, the answer is the page, as before the streamed answers.
func TestRunContextDefaultIsPagedJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := b.reconcile(t, orgA, 30)
	path := "/runs/" + run.ID + "/context/matchGroups?limit=7"
	var bodies []string
	for _, h := range [][]string{nil, {"Accept: */*"}, {"Accept: application/json"}, {"Accept: text/html"}, {"Accept: application/xml, */*;q=0.1"}} {
		rec := b.do(t, http.MethodGet, path, orgA, nil, h...)
		require.Equal(t, http.StatusOK, rec.Code)
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"), "%v", h)
		doc := ok[contextDoc](t, rec, http.StatusOK)
		require.Equal(t, 30, doc.Total)
		require.Equal(t, 7, doc.Limit)
		bodies = append(bodies, rec.Body.String())
	}
	for _, body := range bodies[1:] {
		require.Equal(t, bodies[0], body)
	}
	require.True(t, bytes.HasSuffix([]byte(bodies[0]), []byte("}\n")))
}
