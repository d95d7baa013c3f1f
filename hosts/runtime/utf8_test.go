package runtime_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBodiesThatAreNotUTF8AreRefused: a JSON body with a byte that is not UTF-8 is 400
// invalid_utf8 and writes nothing, on a route Huma validates (POST /workflows,
// /custom-tables), on one that decodes its own body (execute) and on a public one; a \u
// escape is JSON's own and is kept; a multipart upload keeps its bytes; the body limit
// still comes first.
func TestBodiesThatAreNotUTF8AreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf := b.createWorkflow(t, orgA, "contacts")

	p := problem(t, b.do(t, http.MethodPost, "/workflows", orgA, `{"name": "bad-`+"\xff"+`", "definition": `+upsertDefinition+`}`),
		http.StatusBadRequest, "invalid_utf8")
	require.Len(t, p.Errors, 1)
	require.Equal(t, "body", p.Errors[0].Location)
	require.Contains(t, p.Errors[0].Message, "byte 14", "where the body stops being UTF-8")
	problem(t, b.do(t, http.MethodPost, "/custom-tables", orgA, "{\"name\": \"t\xc3\", \"fields\": {\"a\": \"text\"}}"), http.StatusBadRequest, "invalid_utf8")
	problem(t, b.do(t, http.MethodPost, "/custom-tables", orgA, "{\"name\": \"t\", \"fields\": {\"\xed\xa0\x80\": \"text\"}}"),
		http.StatusBadRequest, "invalid_utf8") // a surrogate's bytes, in a key
	problem(t, b.do(t, http.MethodPost, "/workflows/"+wf.ID+"/execute", orgA, "{\"input\": {\"email\": \"\xffa@b.example\"}}"),
		http.StatusBadRequest, "invalid_utf8")
	l := ok[list[workflowDoc]](t, b.do(t, http.MethodGet, "/workflows", orgA, nil), http.StatusOK)
	require.Len(t, l.Items, 1, "nothing stored")
	require.Equal(t, "contacts", l.Items[0].Name)
	runs := ok[list[runRef]](t, b.do(t, http.MethodGet, "/runs", orgA, nil), http.StatusOK)
	require.Empty(t, runs.Items, "no run started")
	tables := ok[list[map[string]any]](t, b.do(t, http.MethodGet, "/custom-tables", orgA, nil), http.StatusOK)
	require.Len(t, tables.Items, 1, "no table made")

	f := b.createForm(t, orgA, formBody(wf.ID, true))
	problem(t, b.do(t, http.MethodPost, "/forms/public/"+f.ID+"/submit", "", "{\"email\": \"\xffa@b.example\"}"), http.StatusBadRequest, "invalid_utf8")
	subs := ok[list[submissionDoc]](t, b.do(t, http.MethodGet, "/external-forms/"+f.ID+"/submissions", orgA, nil), http.StatusOK)
	require.Empty(t, subs.Items)

	// JSON's escapes are text: kept as the character they name.
	got := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, `{"name": "ok-\u00ff", "definition": `+upsertDefinition+`}`), http.StatusCreated)
	require.Equal(t, "ok-\u00ff", got.Name)

	// A file is bytes: a multipart upload keeps them.
	doc := b.uploadDocument(t, orgA, filePart("raw.bin", "application/octet-stream", "\xff\xfe\x00binary"), field("name", "raw"))
	content := b.do(t, http.MethodGet, "/documents/"+doc.ID+"/content", orgA, nil)
	require.Equal(t, http.StatusOK, content.Code)
	require.Equal(t, "\xff\xfe\x00binary", content.Body.String())

	// Over the limit, the limit answers: the body is not read past it to be checked.
	big := `{"name": "` + strings.Repeat("\xff", 11<<20) + `"}`
	problem(t, b.do(t, http.MethodPost, "/workflows", orgA, big), http.StatusRequestEntityTooLarge, "body_too_large")
}
