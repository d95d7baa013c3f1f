package runtime_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testlog"
)

// part is one part of a multipart/form-data body: a file part when filename is set (its
// Content-Type header is contentType, none when empty), else a field.
type part struct {
	field, filename, contentType, data string
}

func filePart(filename, contentType, data string) part {
	return part{field: "file", filename: filename, contentType: contentType, data: data}
}

func field(name, value string) part { return part{field: name, data: value} }

// multipartBody encodes parts with a fixed boundary and returns the request's Content-Type
// header and the body.
func multipartBody(t *testing.T, parts ...part) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	require.NoError(t, w.SetBoundary("svcflow-test-boundary"))
	for _, p := range parts {
		if p.filename == "" {
			require.NoError(t, w.WriteField(p.field, p.data))
			continue
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.field, p.filename))
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		pw, err := w.CreatePart(h)
		require.NoError(t, err)
		_, err = pw.Write([]byte(p.data))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return w.FormDataContentType(), buf.Bytes()
}

// multipartHeader is the Content-Type of every multipartBody.
const multipartHeader = "Content-Type: multipart/form-data; boundary=svcflow-test-boundary"

func (b *bundle) post(t *testing.T, path, org string, parts ...part) *httptest.ResponseRecorder {
	t.Helper()
	ct, body := multipartBody(t, parts...)
	return b.do(t, http.MethodPost, path, org, body, "Content-Type: "+ct)
}

type (
	documentVersionDoc struct {
		Version     int       `json:"version"`
		ContentType string    `json:"content_type"`
		SizeBytes   int64     `json:"size_bytes"`
		SHA256      string    `json:"sha256"`
		CreatedAt   time.Time `json:"created_at"`
	}
	documentDoc struct {
		ID          string               `json:"id"`
		Name        string               `json:"name"`
		ContentType string               `json:"content_type"`
		Tags        []string             `json:"tags"`
		SizeBytes   int64                `json:"size_bytes"`
		Version     int                  `json:"version"`
		Versions    []documentVersionDoc `json:"versions"`
		ExpiresAt   *time.Time           `json:"expires_at"`
		CreatedAt   time.Time            `json:"created_at"`
	}
)

func (b *bundle) uploadDocument(t *testing.T, org string, parts ...part) documentDoc {
	t.Helper()
	return ok[documentDoc](t, b.post(t, "/documents", org, parts...), http.StatusCreated)
}

func TestDocumentCycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const v1 = "\xEF\xBB\xBFinvoice,customer,amount\nINV-1,\"Smith, John\",10.5\nINV-2,Acme,20\n"
	expires := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Second)

	created := b.uploadDocument(t, orgA,
		filePart("march.csv", "application/octet-stream", v1),
		field("name", "March invoices"),
		field("tags", "finance, q1"), field("tags", "audit"),
		field("expires_at", expires.Format(time.RFC3339)))
	require.True(t, strings.HasPrefix(created.ID, "doc_"), created.ID)
	require.Equal(t, "March invoices", created.Name)
	require.Equal(t, "text/csv", created.ContentType, "an octet-stream part: the file name's extension decides")
	require.Equal(t, []string{"finance", "q1", "audit"}, created.Tags)
	require.Equal(t, int64(len(v1)), created.SizeBytes)
	require.Equal(t, 1, created.Version)
	require.Len(t, created.Versions, 1)
	require.Equal(t, 1, created.Versions[0].Version)
	require.Len(t, created.Versions[0].SHA256, 64)
	require.Equal(t, expires, *created.ExpiresAt)
	require.False(t, created.CreatedAt.IsZero())

	got := ok[documentDoc](t, b.do(t, http.MethodGet, "/documents/"+created.ID, orgA, nil), http.StatusOK)
	require.Equal(t, created, got)

	// Version 2: JSON, typed by its part header; version 3: an explicit content_type.
	const v2 = `[{"invoice":"INV-3","customer":"Zed","amount":30}]`
	second := ok[documentDoc](t, b.post(t, "/documents/"+created.ID+"/versions", orgA,
		filePart("april.json", "application/json", v2)), http.StatusCreated)
	require.Equal(t, 2, second.Version)
	require.Equal(t, "application/json", second.ContentType)
	require.Equal(t, "March invoices", second.Name, "a version keeps the document's name")
	require.Len(t, second.Versions, 2)
	third := ok[documentDoc](t, b.post(t, "/documents/"+created.ID+"/versions", orgA,
		filePart("may.txt", "", "invoice\nINV-9\n"), field("content_type", "text/csv")), http.StatusCreated)
	require.Equal(t, 3, third.Version)
	require.Equal(t, "text/csv", third.ContentType)
	require.Equal(t, []int{1, 2, 3}, []int{third.Versions[0].Version, third.Versions[1].Version, third.Versions[2].Version})
	require.Equal(t, "application/json", third.Versions[1].ContentType)

	for _, tc := range []struct {
		query, body, contentType string
		version                  string
	}{
		{"", "invoice\nINV-9\n", "text/csv", "3"},
		{"?version=1", v1, "text/csv", "1"},
		{"?version=2", v2, "application/json", "2"},
	} {
		rec := b.do(t, http.MethodGet, "/documents/"+created.ID+"/content"+tc.query, orgA, nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		require.Equal(t, tc.body, rec.Body.String(), "the bytes as uploaded")
		require.Equal(t, tc.contentType, rec.Header().Get("Content-Type"))
		require.Equal(t, tc.version, rec.Header().Get("X-Document-Version"))
		require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
		require.Equal(t, `attachment; filename="March invoices"`, rec.Header().Get("Content-Disposition"))
	}

	other := b.uploadDocument(t, orgA, filePart("rows.json", "application/json", `[]`))
	require.Equal(t, "rows.json", other.Name, "no name: the file's")
	require.Equal(t, []string{}, other.Tags)
	require.Nil(t, other.ExpiresAt)
	listed := ok[list[documentDoc]](t, b.do(t, http.MethodGet, "/documents", orgA, nil), http.StatusOK)
	require.Equal(t, []string{other.ID, created.ID}, []string{listed.Items[0].ID, listed.Items[1].ID}, "newest first")
	require.Empty(t, listed.Items[0].Versions, "listings carry no versions")
	require.Equal(t, 3, listed.Items[1].Version)
	tagged := ok[list[documentDoc]](t, b.do(t, http.MethodGet, "/documents?tag=audit", orgA, nil), http.StatusOK)
	require.Len(t, tagged.Items, 1)
	require.Equal(t, created.ID, tagged.Items[0].ID)
	paged := ok[list[documentDoc]](t, b.do(t, http.MethodGet, "/documents?limit=1", orgA, nil), http.StatusOK)
	require.Len(t, paged.Items, 1)
	require.NotEmpty(t, paged.NextCursor)
	rest := ok[list[documentDoc]](t, b.do(t, http.MethodGet, "/documents?limit=1&cursor="+paged.NextCursor, orgA, nil), http.StatusOK)
	require.Equal(t, created.ID, rest.Items[0].ID)

	// A workflow reads the uploaded versions by doc: reference.
	rec := b.do(t, http.MethodPost, "/custom-tables", orgA, map[string]any{
		"name": "lines", "fields": map[string]string{"invoice": "text", "amount": "number"},
	})
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	wf := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("import", `{"actions":[
	  {"type":"loop","properties":{"mode":"foreach","items":"doc:`+created.ID+`@1","steps":[
	    {"type":"custom-table","properties":{"table":"lines","operation":"write","fields":{"invoice":"@item.invoice","amount":"@item.amount"}}}]}}]}`)), http.StatusCreated)
	run := b.execute(t, orgA, wf.ID, nil)
	b.work(t)
	status := ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil), http.StatusOK)
	require.Equal(t, "completed", status["status"], status["reason"])
	rows := ok[list[rowDoc]](t, b.do(t, http.MethodGet, "/custom-tables/lines/rows", orgA, nil), http.StatusOK)
	require.Len(t, rows.Items, 2)
	require.Equal(t, map[string]any{"invoice": "INV-1", "amount": 10.5}, rows.Items[0].Data)

	rec = b.do(t, http.MethodDelete, "/documents/"+created.ID, orgA, nil)
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	require.Empty(t, rec.Body.String())
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/documents/" + created.ID},
		{http.MethodGet, "/documents/" + created.ID + "/content"},
		{http.MethodGet, "/documents/" + created.ID + "/content?version=1"},
		{http.MethodDelete, "/documents/" + created.ID},
	} {
		problem(t, b.do(t, tc.method, tc.path, orgA, nil), http.StatusNotFound, "not_found")
	}
	problem(t, b.post(t, "/documents/"+created.ID+"/versions", orgA, filePart("x.csv", "text/csv", "a\n")), http.StatusNotFound, "not_found")
	listed = ok[list[documentDoc]](t, b.do(t, http.MethodGet, "/documents", orgA, nil), http.StatusOK)
	require.Len(t, listed.Items, 1)
}

// TestDocumentUploadLimit: a file of exactly 25 MiB is taken; one byte more is 413
// body_too_large, as is a body past the request limit.
func TestDocumentUploadLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	atLimit := strings.Repeat("x", documents.MaxSize)
	d := b.uploadDocument(t, orgA, filePart("big.bin", "", atLimit))
	require.Equal(t, int64(documents.MaxSize), d.SizeBytes)

	p := problem(t, b.post(t, "/documents", orgA, filePart("big.bin", "", atLimit+"x")), http.StatusRequestEntityTooLarge, "body_too_large")
	require.Contains(t, p.Detail, "25 MiB")
	p = problem(t, b.post(t, "/documents/"+d.ID+"/versions", orgA, filePart("big.bin", "", atLimit+"x")), http.StatusRequestEntityTooLarge, "body_too_large")
	require.Contains(t, p.Detail, "25 MiB")
	p = problem(t, b.post(t, "/documents", orgA, filePart("huge.bin", "", atLimit+strings.Repeat("x", 2<<20))), http.StatusRequestEntityTooLarge, "body_too_large")
	require.Contains(t, p.Detail, "25 MiB")

	got := ok[documentDoc](t, b.do(t, http.MethodGet, "/documents/"+d.ID, orgA, nil), http.StatusOK)
	require.Equal(t, 1, got.Version, "no refused upload made a version")
}

// TestDocumentUploadConfiguredLimit: a deployment's own limit (engine.Config.MaxDocumentBytes,
// svcflow --max-document-mib) replaces the 25 MiB: a larger file is taken, one byte past
// the limit is 413 naming it, and the refused upload leaves nothing behind.
func TestDocumentUploadConfiguredLimit(t *testing.T) {
	t.Parallel()
	st := store.OpenTest(t, "sqlite")
	const limit = 26 << 20
	eng, err := engine.New(engine.Config{Store: st, Logger: testlog.Quiet(), Keyring: testKeyring(t), MaxDocumentBytes: limit})
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	srv := runtime.New(eng, runtime.Options{Logger: testlog.Quiet(), Version: "test", IdentityKey: testIdentityKey})
	b := &bundle{eng: eng, st: st, srv: srv, h: srv.Handler(), api: srv.API(), logs: &bytes.Buffer{}}

	pastDefault := strings.Repeat("x", documents.MaxSize+1)
	d := b.uploadDocument(t, orgA, filePart("big.bin", "", pastDefault))
	require.Equal(t, int64(documents.MaxSize+1), d.SizeBytes)
	atLimit := strings.Repeat("y", limit)
	v := ok[documentDoc](t, b.post(t, "/documents/"+d.ID+"/versions", orgA, filePart("big.bin", "", atLimit)), http.StatusCreated)
	require.Equal(t, 2, v.Version)

	p := problem(t, b.post(t, "/documents", orgA, filePart("bigger.bin", "", atLimit+"x")), http.StatusRequestEntityTooLarge, "body_too_large")
	require.Contains(t, p.Detail, "26 MiB")
	p = problem(t, b.post(t, "/documents/"+d.ID+"/versions", orgA, filePart("bigger.bin", "", atLimit+"x")), http.StatusRequestEntityTooLarge, "body_too_large")
	require.Contains(t, p.Detail, "26 MiB")
	// Past the request's limit too (the file and 1 MiB of framing): cut off while read.
	p = problem(t, b.post(t, "/documents", orgA, filePart("huge.bin", "", atLimit+strings.Repeat("x", 2<<20))), http.StatusRequestEntityTooLarge, "body_too_large")
	require.Contains(t, p.Detail, "26 MiB")

	listed := ok[list[documentDoc]](t, b.do(t, http.MethodGet, "/documents", orgA, nil), http.StatusOK)
	require.Len(t, listed.Items, 1, "no refused upload made a document")
	got := ok[documentDoc](t, b.do(t, http.MethodGet, "/documents/"+d.ID, orgA, nil), http.StatusOK)
	require.Equal(t, 2, got.Version, "no refused upload made a version")
}

func TestDocumentBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doc := b.uploadDocument(t, orgA, filePart("a.csv", "text/csv", "a\n1\n"))
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		name     string
		method   string
		path     string
		body     any
		headers  []string
		status   int
		code     string
		location string
	}{
		{name: "no file part", path: "/documents", body: []part{field("name", "x")}, status: 422, code: "validation_failed", location: "body.file"},
		{name: "empty file", path: "/documents", body: []part{filePart("a.csv", "text/csv", "")}, status: 422, code: "validation_failed", location: "body.file"},
		{name: "two files", path: "/documents", body: []part{filePart("a.csv", "text/csv", "a"), filePart("b.csv", "text/csv", "b")}, status: 422, code: "validation_failed", location: "body.file"},
		{name: "expires_at not RFC 3339", path: "/documents", body: []part{filePart("a.csv", "text/csv", "a"), field("expires_at", "tomorrow")}, status: 422, code: "validation_failed", location: "body.expires_at"},
		{name: "expires_at in the past", path: "/documents", body: []part{filePart("a.csv", "text/csv", "a"), field("expires_at", past)}, status: 422, code: "validation_failed", location: "body.expires_at"},
		{name: "content_type not a media type", path: "/documents", body: []part{filePart("a.csv", "text/csv", "a"), field("content_type", "csv")}, status: 422, code: "validation_failed", location: "body.content_type"},
		{name: "tag with a control character", path: "/documents", body: []part{filePart("a.csv", "text/csv", "a"), field("tags", "ok,\x01bad")}, status: 422, code: "validation_failed", location: "body.tags"},
		{name: "version without a file", path: "/documents/" + doc.ID + "/versions", body: []part{field("content_type", "text/csv")}, status: 422, code: "validation_failed", location: "body.file"},
		{name: "JSON instead of multipart", path: "/documents", body: map[string]string{"name": "x"}, status: 415, code: "unsupported_media_type"},
		{name: "no Content-Type", path: "/documents", body: "file=x", headers: []string{"Content-Type:"}, status: 415, code: "unsupported_media_type"},
		{name: "broken multipart", path: "/documents", body: "--nope\r\nnot a part", headers: []string{multipartHeader}, status: 400, code: "malformed_multipart"},
		{name: "version to an unknown document", path: "/documents/doc_nope/versions", body: []part{filePart("a.csv", "text/csv", "a")}, status: 404, code: "not_found"},
		{name: "unknown document", method: http.MethodGet, path: "/documents/doc_nope", status: 404, code: "not_found"},
		{name: "unknown version", method: http.MethodGet, path: "/documents/" + doc.ID + "/content?version=9", status: 404, code: "not_found"},
		{name: "version 0", method: http.MethodGet, path: "/documents/" + doc.ID + "/content?version=0", status: 422, code: "validation_failed", location: "query.version"},
		{name: "version not an integer", method: http.MethodGet, path: "/documents/" + doc.ID + "/content?version=two", status: 422, code: "validation_failed", location: "query.version"},
		{name: "negative version", method: http.MethodGet, path: "/documents/" + doc.ID + "/content?version=-1", status: 422, code: "validation_failed", location: "query.version"},
		{name: "no X-Org-Id", path: "/documents", body: []part{filePart("a.csv", "text/csv", "a")}, headers: []string{"X-Org-Id:"}, status: 401, code: "missing_org"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			body, headers := tc.body, tc.headers
			if parts, isParts := tc.body.([]part); isParts {
				ct, raw := multipartBody(t, parts...)
				body, headers = raw, append([]string{"Content-Type: " + ct}, headers...)
			}
			p := problem(t, b.do(t, method, tc.path, orgA, body, headers...), tc.status, tc.code)
			if tc.location != "" {
				var locations []string
				for _, d := range p.Errors {
					locations = append(locations, d.Location)
				}
				require.Contains(t, locations, tc.location, "%+v", p)
			}
		})
	}
	listed := ok[list[documentDoc]](t, b.do(t, http.MethodGet, "/documents", orgA, nil), http.StatusOK)
	require.Len(t, listed.Items, 1, "no refused upload left a document")
	got := ok[documentDoc](t, b.do(t, http.MethodGet, "/documents/"+doc.ID, orgA, nil), http.StatusOK)
	require.Equal(t, 1, got.Version, "no refused upload left a version")
}

// A CSV export with a '"' inside a field that is not quoted (`55" screen`) is read as
// Python's csv module reads it (issue 31: the step failed with a parse error); a quoted
// field whose quotes are wrong fails the step with its line and column.
func TestCSVWithBareQuotes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := b.do(t, http.MethodPost, "/custom-tables", orgA, map[string]any{
		"name": "screens", "fields": map[string]string{"item": "text", "size": "text"},
	})
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	importer := func(doc documentDoc) workflowDoc {
		return ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("import-"+doc.ID, `{"actions":[
		  {"type":"loop","properties":{"mode":"foreach","items":"doc:`+doc.ID+`","steps":[
		    {"type":"custom-table","properties":{"table":"screens","operation":"write","fields":{"item":"@item.item","size":"@item.size"}}}]}}]}`)), http.StatusCreated)
	}
	run := func(wf workflowDoc) map[string]any {
		r := b.execute(t, orgA, wf.ID, nil)
		b.work(t)
		return ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+r.ID+"/status", orgA, nil), http.StatusOK)
	}

	doc := b.uploadDocument(t, orgA, filePart("export.csv", "text/csv", "item,size\nTV,55\" screen\nruler,\"12\"\" long\"\n"))
	status := run(importer(doc))
	require.Equal(t, "completed", status["status"], status["reason"])
	rows := ok[list[rowDoc]](t, b.do(t, http.MethodGet, "/custom-tables/screens/rows", orgA, nil), http.StatusOK)
	require.Len(t, rows.Items, 2)
	require.Equal(t, map[string]any{"item": "TV", "size": `55" screen`}, rows.Items[0].Data)
	require.Equal(t, map[string]any{"item": "ruler", "size": `12" long`}, rows.Items[1].Data)

	doc = b.uploadDocument(t, orgA, filePart("broken.csv", "text/csv", "item,size\nTV,55\" screen\n\"TV\" 2,\"55\"\n"))
	status = run(importer(doc))
	require.Equal(t, "failed", status["status"])
	require.Contains(t, status["reason"], `parse error on line 3, column 4: extraneous or missing " in quoted-field`)
}
