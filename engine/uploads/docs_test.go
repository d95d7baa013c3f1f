package uploads_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xuri/excelize/v2"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

type docEvent struct {
	name       string
	deliveryID string
	payload    map[string]any
}

// docEvents lists an org's events that belong to no run: the document events.
func docEvents(t *testing.T, b *enginetest.Bundle, org string) []docEvent {
	t.Helper()
	page, err := b.St.ListRunEvents(b.Ctx, org, "", svctype.ListOptions{Limit: 500})
	require.NoError(t, err)
	out := make([]docEvent, len(page.Items))
	for i, e := range page.Items {
		require.True(t, strings.HasPrefix(e.DeliveryID, "dlv_"), e.DeliveryID)
		out[i] = docEvent{name: e.Event, deliveryID: e.DeliveryID}
		require.NoError(t, json.Unmarshal(e.Payload, &out[i].payload))
	}
	return out
}

func xlsxOf(t *testing.T, rows [][]any) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	for i, row := range rows {
		cell, err := excelize.CoordinatesToCellName(1, i+1)
		require.NoError(t, err)
		require.NoError(t, f.SetSheetRow("Sheet1", cell, &row))
	}
	var buf bytes.Buffer
	require.NoError(t, f.Write(&buf))
	return buf.Bytes()
}

func TestDocumentLifecycle(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		d := b.Upload(t, "acme", "march.csv", "", "invoice,amount\nINV-1,10\n", "finance", " q1 ", "finance", "")
		require.True(t, strings.HasPrefix(d.ID, "doc_"), d.ID)
		require.Equal(t, "text/csv", d.ContentType, "from the extension")
		require.Equal(t, []string{"finance", "q1"}, d.Tags)
		require.Equal(t, 1, d.Version)
		require.Equal(t, int64(24), d.SizeBytes)
		require.Len(t, d.Versions, 1)

		d2 := b.AddVersion(t, "acme", d.ID, "application/json", []byte(`[{"invoice":"INV-2","amount":20}]`))
		require.Equal(t, 2, d2.Version)
		require.Equal(t, "application/json", d2.ContentType)
		require.Len(t, d2.Versions, 2)
		d3 := b.AddVersion(t, "acme", d.ID, "", []byte("invoice,amount\nINV-3,30\n"))
		require.Equal(t, "text/csv", d3.ContentType, "no type given: the document's name decides")

		got, err := b.Eng.GetDocument(b.Ctx, "acme", d.ID)
		require.NoError(t, err)
		require.Equal(t, 3, got.Version)
		require.Equal(t, []int{1, 2, 3}, []int{got.Versions[0].Version, got.Versions[1].Version, got.Versions[2].Version})

		for _, tc := range []struct {
			version int
			want    string
			ct      string
		}{
			{0, "invoice,amount\nINV-3,30\n", "text/csv"},
			{1, "invoice,amount\nINV-1,10\n", "text/csv"},
			{2, `[{"invoice":"INV-2","amount":20}]`, "application/json"},
		} {
			_, v, data, err := b.Eng.DocumentContent(b.Ctx, "acme", d.ID, tc.version)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(data))
			require.Equal(t, tc.ct, v.ContentType)
		}
		_, _, _, err = b.Eng.DocumentContent(b.Ctx, "acme", d.ID, 4)
		require.ErrorIs(t, err, engine.ErrNotFound)

		other := b.Upload(t, "acme", "other.json", "application/json", `[]`)
		page, err := b.Eng.ListDocuments(b.Ctx, "acme", documents.ListFilter{})
		require.NoError(t, err)
		require.Equal(t, []string{other.ID, d.ID}, []string{page.Items[0].ID, page.Items[1].ID})
		page, err = b.Eng.ListDocuments(b.Ctx, "acme", documents.ListFilter{Tag: "q1"})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)

		// Another organization sees nothing of it.
		_, err = b.Eng.GetDocument(b.Ctx, "rival", d.ID)
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, _, _, err = b.Eng.DocumentContent(b.Ctx, "rival", d.ID, 0)
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.AddDocumentVersion(b.Ctx, "rival", d.ID, []byte("x"), "text/plain")
		require.ErrorIs(t, err, engine.ErrNotFound)
		require.ErrorIs(t, b.Eng.DeleteDocument(b.Ctx, "rival", d.ID), engine.ErrNotFound)
		page, err = b.Eng.ListDocuments(b.Ctx, "rival", documents.ListFilter{})
		require.NoError(t, err)
		require.Empty(t, page.Items)
		require.Empty(t, docEvents(t, b, "rival"))

		require.NoError(t, b.Eng.DeleteDocument(b.Ctx, "acme", d.ID))
		_, err = b.Eng.GetDocument(b.Ctx, "acme", d.ID)
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, _, _, err = b.Eng.DocumentContent(b.Ctx, "acme", d.ID, 1)
		require.ErrorIs(t, err, engine.ErrNotFound)
		require.ErrorIs(t, b.Eng.DeleteDocument(b.Ctx, "acme", d.ID), engine.ErrNotFound)

		events := docEvents(t, b, "acme")
		require.Len(t, events, 5)
		require.Equal(t, docEvent{name: "document.uploaded", deliveryID: events[0].deliveryID, payload: map[string]any{
			"document_id": d.ID, "name": "march.csv", "content_type": "text/csv", "size_bytes": float64(24),
		}}, events[0])
		require.Equal(t, "document.version_created", events[1].name)
		require.Equal(t, map[string]any{
			"document_id": d.ID, "version": float64(2), "content_type": "application/json", "size_bytes": float64(33),
		}, events[1].payload)
		require.Equal(t, float64(3), events[2].payload["version"])
		require.Equal(t, "document.uploaded", events[3].name)
		require.Equal(t, docEvent{name: "document.deleted", deliveryID: events[4].deliveryID, payload: map[string]any{"document_id": d.ID}}, events[4])

		// Each event records the document it is about, for webhook filters, even once the
		// document is gone.
		for i, want := range []string{"text/csv", "application/json", "text/csv"} {
			subj, err := b.St.GetEventSubject(b.Ctx, "acme", events[i].deliveryID)
			require.NoError(t, err)
			require.Equal(t, documents.EventSubject{DeliveryID: events[i].deliveryID, DocumentID: d.ID, ContentType: want, Tags: []string{"finance", "q1"}}, *subj)
		}
		subj, err := b.St.GetEventSubject(b.Ctx, "acme", events[4].deliveryID)
		require.NoError(t, err)
		require.Equal(t, []string{"finance", "q1"}, subj.Tags)
	})
}

// TestConfiguredDocumentLimit: engine.Config.MaxDocumentBytes replaces the 25 MiB for
// new documents and new versions alike, and a refused one stores nothing.
func TestConfiguredDocumentLimit(t *testing.T) {
	t.Parallel()
	st := store.OpenTest(t, "sqlite")
	eng, err := engine.New(engine.Config{Store: st, MaxDocumentBytes: 1000})
	require.NoError(t, err)
	ctx := t.Context()
	d, err := eng.UploadDocument(ctx, "acme", engine.DocumentUpload{Name: "a.bin", Content: bytes.Repeat([]byte("x"), 1000)})
	require.NoError(t, err)
	_, err = eng.UploadDocument(ctx, "acme", engine.DocumentUpload{Name: "b.bin", Content: bytes.Repeat([]byte("x"), 1001)})
	var ve *engine.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "/file", ve.Problems[0].Pointer)
	require.Contains(t, ve.Problems[0].Message, "1000 bytes")
	_, err = eng.AddDocumentVersion(ctx, "acme", d.ID, bytes.Repeat([]byte("x"), 1001), "")
	require.ErrorAs(t, err, &ve)
	page, err := eng.ListDocuments(ctx, "acme", documents.ListFilter{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, 1, page.Items[0].Version)
}

func TestDocumentValidation(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	future := time.Now().Add(time.Hour)
	past := time.Now().Add(-time.Minute)
	manyTags := make([]string, documents.MaxTags+1)
	for i := range manyTags {
		manyTags[i] = fmt.Sprintf("t%d", i)
	}
	ok := engine.DocumentUpload{Name: "a.csv", Content: []byte("a\n1\n"), ExpiresAt: &future}
	for _, tc := range []struct {
		name     string
		edit     func(u *engine.DocumentUpload)
		pointers []string
	}{
		{"no name", func(u *engine.DocumentUpload) { u.Name = "  " }, []string{"/name"}},
		{"long name", func(u *engine.DocumentUpload) { u.Name = strings.Repeat("n", 256) }, []string{"/name"}},
		{"control character in name", func(u *engine.DocumentUpload) { u.Name = "a\x00.csv" }, []string{"/name"}},
		{"empty content", func(u *engine.DocumentUpload) { u.Content = nil }, []string{"/file"}},
		{"content past 25 MiB", func(u *engine.DocumentUpload) { u.Content = make([]byte, documents.MaxSize+1) }, []string{"/file"}},
		{"not a media type", func(u *engine.DocumentUpload) { u.ContentType = "csv" }, []string{"/content_type"}},
		{"expiry in the past", func(u *engine.DocumentUpload) { u.ExpiresAt = &past }, []string{"/expires_at"}},
		{"too many tags", func(u *engine.DocumentUpload) { u.Tags = manyTags }, []string{"/tags"}},
		{"tag with a comma", func(u *engine.DocumentUpload) { u.Tags = []string{"a,b"} }, []string{"/tags"}},
		{"several at once", func(u *engine.DocumentUpload) { u.Name, u.Content = "", nil }, []string{"/name", "/file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := ok
			tc.edit(&u)
			_, err := b.Eng.UploadDocument(b.Ctx, "acme", u)
			var ve *engine.ValidationError
			require.ErrorAs(t, err, &ve)
			var got []string
			for _, p := range ve.Problems {
				got = append(got, p.Pointer)
			}
			require.Equal(t, tc.pointers, got, ve.Error())
		})
	}
	_, err := b.Eng.UploadDocument(b.Ctx, "bad org", ok)
	require.ErrorIs(t, err, engine.ErrInvalidOrg)
	d := b.Upload(t, "acme", "a.csv", "", "a\n1\n")
	_, err = b.Eng.AddDocumentVersion(b.Ctx, "acme", d.ID, nil, "")
	var ve *engine.ValidationError
	require.ErrorAs(t, err, &ve)
	_, _, _, err = b.Eng.DocumentContent(b.Ctx, "acme", d.ID, -1)
	require.ErrorAs(t, err, &ve)
	page, err := b.Eng.ListDocuments(b.Ctx, "acme", documents.ListFilter{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1, "no refused upload left anything")
}

// TestForeachOverDocument runs a workflow whose custom-table step takes a value from @input
// and whose foreach loops read a document: its latest version and version 2.
func TestForeachOverDocument(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		_, err := b.Eng.CreateTable(b.Ctx, "acme", "batches", map[string]string{"name": "text"})
		require.NoError(t, err)
		_, err = b.Eng.CreateTable(b.Ctx, "acme", "lines", map[string]string{
			"batch": "text", "source": "text", "invoice": "text", "amount": "number", "customer": "text",
		})
		require.NoError(t, err)

		d := b.Upload(t, "acme", "invoices.csv", "text/csv",
			"\xEF\xBB\xBFinvoice,customer,amount\nINV-1,\"Smith, John\",10.5\nINV-2,Acme,20\n")
		b.AddVersion(t, "acme", d.ID, "application/json",
			[]byte(`[{"invoice":"INV-3","customer":"Zed","amount":30},{"invoice":"INV-4","customer":"Ann","amount":40},{"invoice":"INV-5","customer":"Bo","amount":50}]`))
		b.AddVersion(t, "acme", d.ID, documents.MediaXLSX, xlsxOf(t, [][]any{
			{"invoice", "customer", "amount"}, {"INV-6", "Cy", 60.25},
		}))

		loop := func(items, source string) string {
			return `{"type": "loop", "properties": {"mode": "foreach", "items": "` + items + `", "result_key": "` + source + `",
			  "steps": [{"type": "custom-table", "properties": {"table": "lines", "operation": "write",
			    "fields": {"batch": "@input.batch", "source": "` + source + `", "invoice": "@item.invoice",
			               "customer": "@item.customer", "amount": "@item.amount"}}}]}}`
		}
		def := `{"actions": [
		  {"type": "custom-table", "outputKey": "saved", "properties": {"table": "batches", "operation": "write", "fields": {"name": "@input.batch"}}},
		  ` + loop("doc:"+d.ID, "latest") + `,
		  ` + loop("doc:"+d.ID+"@2", "v2") + `,
		  ` + loop("doc:"+d.ID+"@1", "v1") + `
		]}`
		w := b.Workflow(t, "acme", "import", def)
		doc := b.Execute(t, "acme", w.ID, `{"batch": "march"}`)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Len(t, doc.Context["latest"], 1)
		require.Len(t, doc.Context["v2"], 3)
		require.Len(t, doc.Context["v1"], 2)

		batches, err := b.Eng.ReadRows(b.Ctx, "acme", "batches", nil, 0)
		require.NoError(t, err)
		require.Len(t, batches, 1)
		require.Equal(t, "march", batches[0].Data["name"])

		rows, err := b.Eng.ReadRows(b.Ctx, "acme", "lines", nil, 0)
		require.NoError(t, err)
		type line struct {
			source, invoice, customer string
			amount                    any
		}
		var lines []line
		for _, r := range rows {
			require.Equal(t, "march", r.Data["batch"])
			lines = append(lines, line{r.Data["source"].(string), r.Data["invoice"].(string), r.Data["customer"].(string), r.Data["amount"]})
		}
		require.Equal(t, []line{
			{"latest", "INV-6", "Cy", json.Number("60.25")},
			{"v2", "INV-3", "Zed", json.Number("30")},
			{"v2", "INV-4", "Ann", json.Number("40")},
			{"v2", "INV-5", "Bo", json.Number("50")},
			{"v1", "INV-1", "Smith, John", json.Number("10.5")},
			{"v1", "INV-2", "Acme", json.Number("20")},
		}, lines)
	})
}

func TestDocumentReferenceErrors(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	mine := b.Upload(t, "acme", "rows.csv", "text/csv", "n\n1\n")
	pdf := b.Upload(t, "acme", "scan.pdf", "application/pdf", "%PDF-1.4")
	var big strings.Builder
	big.WriteString("n\n")
	for i := range documents.MaxRows + 1 {
		fmt.Fprintf(&big, "%d\n", i)
	}
	tooBig := b.Upload(t, "acme", "big.csv", "text/csv", big.String())
	b.AddVersion(t, "acme", tooBig.ID, "text/csv", []byte("n\n1\n"))
	theirs := b.Upload(t, "rival", "theirs.csv", "text/csv", "n\n1\n")

	for _, tc := range []struct {
		name, items, reason string
	}{
		{"missing document", "doc:doc_nope", `document doc_nope not found`},
		{"missing version", "doc:" + mine.ID + "@9", "document " + mine.ID + " has no version 9"},
		{"bad version", "doc:" + mine.ID + "@x", `version "x" is not a positive integer`},
		{"version zero", "doc:" + mine.ID + "@0", `version "0" is not a positive integer`},
		{"row limit", "doc:" + tooBig.ID + "@1", "document " + tooBig.ID + " version 1 has 10001 rows; the limit is 10,000"},
		{"unsupported format", "doc:" + pdf.ID, "document " + pdf.ID + " version 1: unsupported document format"},
		{"another org's document", "doc:" + theirs.ID, "document " + theirs.ID + " not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := b.Workflow(t, "acme", tc.name, `{"actions": [{"type": "loop", "properties": {"mode": "foreach",
			  "items": "`+tc.items+`", "steps": [{"type": "custom-table", "properties": {"table": "none", "operation": "read"}}]}}]}`)
			// The subtests share one engine: another subtest's Work may be the one that takes
			// this run, so work until it has ended rather than once.
			run, err := b.Eng.Execute(b.Ctx, "acme", w.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
			require.NoError(t, err)
			var doc *engine.RunStatusDoc
			require.Eventually(t, func() bool {
				_, err := b.Eng.Work(b.Ctx)
				require.NoError(t, err)
				doc, err = b.Eng.RunStatus(b.Ctx, "acme", run.ID)
				require.NoError(t, err)
				return doc.Status != svctype.RunRunning
			}, 30*time.Second, 10*time.Millisecond)
			require.Equal(t, svctype.RunFailed, doc.Status)
			require.Contains(t, doc.Reason, tc.reason)
			require.Contains(t, doc.Reason, tc.items, "the reason names the reference")
		})
	}

	// The latest version of the big document is small: the limit is per version.
	w := b.Workflow(t, "acme", "latest-small", `{"actions": [{"type": "loop", "outputKey": "out", "properties": {"mode": "foreach",
	  "items": "doc:`+tooBig.ID+`", "steps": [{"type": "echo", "outputKey": "e", "properties": {"n": "@item.n"}}]}}]}`)
	b.Eng.RegisterStep("echo", func(_ context.Context, call *svctype.StepCall) (any, error) { return call.Properties, nil })
	doc := b.Execute(t, "acme", w.ID, `{}`)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	require.Equal(t, []any{map[string]any{"n": json.Number("1")}}, doc.Context["out"])
}

func TestDocumentExpiry(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			// The engine and its store share a clock, moved on by the hour once every
			// document is uploaded: the expiries due within it fall due.
			clk := enginetest.NewClock(time.Now().UTC().Truncate(time.Second))
			st := store.OpenTest(t, dialect, store.WithNow(clk.Now))
			eng, err := engine.New(engine.Config{Store: st, Now: clk.Now})
			require.NoError(t, err)
			b := &enginetest.Bundle{Eng: eng, St: st, Ctx: context.Background()}

			upload := func(name string, in time.Duration) *documents.Document {
				at := clk.Now().Add(in)
				d, err := eng.UploadDocument(b.Ctx, "acme", engine.DocumentUpload{
					Name: name, Content: []byte("n\n1\n"), Tags: []string{"tmp"}, ExpiresAt: &at,
				})
				require.NoError(t, err)
				require.Equal(t, at, *d.ExpiresAt)
				return d
			}
			soon := upload("soon.csv", 30*time.Minute)
			b.AddVersion(t, "acme", soon.ID, "text/csv", []byte("n\n2\n"))
			later := upload("later.csv", 48*time.Hour)
			gone := upload("gone.csv", 20*time.Minute)
			require.NoError(t, eng.DeleteDocument(b.Ctx, "acme", gone.ID))
			require.Equal(t, 3, store.CountAllJobs(t, st), "one expiry job per upload with expires_at")
			jobs, err := st.ClaimJobs(b.Ctx, 10, time.Minute)
			require.NoError(t, err)
			require.Empty(t, jobs, "none is due yet")
			clk.Advance(time.Hour)

			// A worker whose lease was lost changes nothing.
			jobs, err = st.ClaimJobs(b.Ctx, 10, time.Minute)
			require.NoError(t, err)
			require.Len(t, jobs, 2, "soon's and gone's jobs are due, later's is not")
			for i := range jobs {
				stale := jobs[i]
				stale.LeaseToken = "not-the-holder"
				require.NoError(t, eng.RunJob(b.Ctx, &stale))
			}
			_, err = eng.GetDocument(b.Ctx, "acme", soon.ID)
			require.NoError(t, err, "a job without its lease must not expire the document")

			for i := range jobs {
				require.NoError(t, eng.RunJob(b.Ctx, &jobs[i]))
			}
			_, err = eng.GetDocument(b.Ctx, "acme", soon.ID)
			require.ErrorIs(t, err, engine.ErrNotFound)
			for v := 1; v <= 2; v++ {
				_, err = st.GetDocumentBlob(b.Ctx, documents.BlobKey{OrgID: "acme", DocumentID: soon.ID, Version: v})
				require.ErrorIs(t, err, engine.ErrNotFound, "version %d's content goes too", v)
			}
			_, err = eng.GetDocument(b.Ctx, "acme", later.ID)
			require.NoError(t, err)
			require.Equal(t, 1, store.CountAllJobs(t, st), "only later's job is left")
			ran, err := eng.Work(b.Ctx)
			require.NoError(t, err)
			require.Zero(t, ran)

			var names []string
			var expired docEvent
			for _, e := range docEvents(t, b, "acme") {
				names = append(names, e.name)
				if e.name == "document.expired" {
					expired = e
				}
			}
			require.Equal(t, []string{
				"document.uploaded", "document.version_created", "document.uploaded", "document.uploaded",
				"document.deleted", "document.expired",
			}, names, "the document deleted before its expiry gets no document.expired")
			require.Equal(t, map[string]any{
				"document_id": soon.ID, "name": "soon.csv",
				"expires_at": soon.ExpiresAt.UTC().Format(time.RFC3339Nano),
			}, expired.payload)
			subj, err := st.GetEventSubject(b.Ctx, "acme", expired.deliveryID)
			require.NoError(t, err)
			require.Equal(t, []string{"tmp"}, subj.Tags)
		})
	}
}

// A document uploaded once is read by a workflow as rows: doc:<id> is its latest version,
// doc:<id>@<N> version N.
func ExampleEngine_UploadDocument() {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite::memory:")
	if err != nil {
		panic(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		panic(err)
	}
	eng, _ := engine.New(engine.Config{Store: st})
	doc, err := eng.UploadDocument(ctx, "demo", engine.DocumentUpload{
		Name: "invoices.csv", Content: []byte("invoice,amount\nINV-1,120.50\nINV-2,80\n"),
	})
	if err != nil {
		panic(err)
	}
	eng.RegisterStep("label", func(_ context.Context, call *svctype.StepCall) (any, error) {
		return fmt.Sprintf("%s=%v", call.Properties["invoice"], call.Properties["amount"]), nil
	})
	w, err := eng.CreateWorkflow(ctx, "demo", engine.WorkflowInput{Name: "labels", Definition: json.RawMessage(`{
		"actions": [{"type": "loop", "properties": {"mode": "foreach", "items": "doc:` + doc.ID + `", "result_key": "labels",
		  "steps": [{"type": "label", "properties": {"invoice": "@item.invoice", "amount": "@item.amount"}}]}}]}`)})
	if err != nil {
		panic(err)
	}
	run, _ := eng.Execute(ctx, "demo", w.ID, nil, engine.ExecuteOptions{})
	_, _ = eng.Work(ctx)
	status, _ := eng.RunStatus(ctx, "demo", run.ID)
	fmt.Println(doc.ContentType, status.Status, status.Context["labels"])
	// Output: text/csv completed [INV-1=120.5 INV-2=80]
}

// With Config.Blobs set to a directory, content lives there: written with the version,
// read back by content and doc: references, removed with the document.
func TestDocumentsInDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := store.OpenTest(t, "sqlite")
	eng, err := engine.New(engine.Config{Store: st, Blobs: documents.NewDirBlobs(dir)})
	require.NoError(t, err)
	ctx := context.Background()
	d, err := eng.UploadDocument(ctx, "acme", engine.DocumentUpload{Name: "a.csv", Content: []byte("k,v\nx,1\n")})
	require.NoError(t, err)
	_, err = eng.AddDocumentVersion(ctx, "acme", d.ID, []byte("k,v\ny,2\nz,3\n"), "text/csv")
	require.NoError(t, err)
	files := 0
	require.NoError(t, filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			files++
		}
		return err
	}))
	require.Equal(t, 2, files, "one file per version")
	_, _, body, err := eng.DocumentContent(ctx, "acme", d.ID, 1)
	require.NoError(t, err)
	require.Equal(t, "k,v\nx,1\n", string(body))
	rows, err := eng.Evaluator().Resolve(svctype.WithOrg(ctx, "acme"), "doc:"+d.ID, nil)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	_, _, _, err = eng.DocumentContent(ctx, "other", d.ID, 1)
	require.ErrorIs(t, err, engine.ErrNotFound)
	require.NoError(t, eng.DeleteDocument(ctx, "acme", d.ID))
	files = 0
	require.NoError(t, filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			files++
		}
		return err
	}))
	require.Zero(t, files)
}

// TestMatcherReadsLargeDocuments: the matchers take a document given as a leg whole, past
// the 10,000 rows of every other doc: reference; the same reference elsewhere is still
// refused, also once the matcher has read (and cached) it.
func TestMatcherReadsLargeDocuments(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	var left, right strings.Builder
	left.WriteString("id,amount\n")
	right.WriteString("id,amount\n")
	const n = documents.MaxRows + 500
	for i := range n {
		fmt.Fprintf(&left, "R%06d,%d.50\n", i, i%97)
		if i%10 != 0 { // every tenth has no counterpart
			fmt.Fprintf(&right, "R%06d,%d.52\n", i, i%97)
		}
	}
	l := b.Upload(t, "acme", "left.csv", "text/csv", left.String())
	r := b.Upload(t, "acme", "right.csv", "text/csv", right.String())
	w := b.Workflow(t, "acme", "big-match", `{"actions": [{"type": "matcher", "properties": {
	  "left": "doc:`+l.ID+`", "right": "doc:`+r.ID+`", "matchOn": ["id"], "tolerance": 0.05,
	  "outputMatched": "matched", "outputUnmatchedLeft": "ul", "outputUnmatchedRight": "ur"}}]}`)
	doc := b.Execute(t, "acme", w.ID, `{}`)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	matched, err := b.Eng.RunContext(b.Ctx, "acme", doc.ID, "matched", 0, 1)
	require.NoError(t, err)
	require.Equal(t, n-n/10, matched.Total, "every record with a counterpart (nine in ten) within tolerance")

	// Elsewhere the reference keeps its limit.
	w = b.Workflow(t, "acme", "big-loop", `{"actions": [{"type": "loop", "properties": {"mode": "foreach",
	  "items": "doc:`+l.ID+`", "steps": [{"type": "custom-table", "properties": {"table": "none", "operation": "read"}}]}}]}`)
	doc = b.Execute(t, "acme", w.ID, `{}`)
	require.Equal(t, svctype.RunFailed, doc.Status)
	require.Contains(t, doc.Reason, fmt.Sprintf("has %d rows; the limit is 10,000", n))
}

// TestMatcherReadsCSVLegsAsBytes: a matcher's doc: legs are extracted straight into JSON
// bytes (no map per record) and matched as such; what it stores is what the same records,
// decoded, give.
func TestMatcherReadsCSVLegsAsBytes(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	var left, right strings.Builder
	left.WriteString("ref,amount,date,memo\n")
	right.WriteString("ref,amount,date,memo\n")
	for i := range 400 {
		amount := fmt.Sprintf("%d.%02d", i, i%100)
		if i%9 == 0 {
			amount = "" // null in a numeric column
		}
		fmt.Fprintf(&left, "R%03d,%s,2026-02-%02d,\"<a & \"\"b\"\">\"\n", i, amount, 1+i%28)
		if i%5 != 0 {
			fmt.Fprintf(&right, "R%03d,%d.%02d,2026-02-%02d,café\n", i, i, (i+1)%100, 1+(i+2)%28)
		}
	}
	legs := uploadCSVLegs(t, b, left.String(), right.String())
	a := legs.matchAsDecoded(t, b, "csv", `"matchOn": ["ref"], "tolerance": 0.05, "dateWindowDays": 3`)
	ev, err := b.Eng.Evidence(b.Ctx, "acme", a.ID)
	require.NoError(t, err)
	require.Contains(t, string(ev.Steps[0].InputSummary), `"bytes"`, "the legs were given as bytes")
}

// csvLegs are two CSV documents of acme, and the same records decoded as an execute input
// {"l": [...], "r": [...]}.
type csvLegs struct {
	l, r         *documents.Document
	lrecs, rrecs []map[string]any
	input        string
}

func uploadCSVLegs(t *testing.T, b *enginetest.Bundle, left, right string) *csvLegs {
	t.Helper()
	c := &csvLegs{l: b.Upload(t, "acme", "left.csv", "text/csv", left), r: b.Upload(t, "acme", "right.csv", "text/csv", right)}
	var err error
	c.lrecs, err = documents.ExtractLimit("text/csv", "left.csv", []byte(left), documents.MaxRows)
	require.NoError(t, err)
	c.rrecs, err = documents.ExtractLimit("text/csv", "right.csv", []byte(right), documents.MaxRows)
	require.NoError(t, err)
	input, err := json.Marshal(map[string]any{"l": c.lrecs, "r": c.rrecs})
	require.NoError(t, err)
	c.input = string(input)
	return c
}

// matchAsDecoded runs a matcher with props over the legs as doc: references and over the
// same records inline: both complete, with the same arrays. It returns the doc: run.
func (c *csvLegs) matchAsDecoded(t *testing.T, b *enginetest.Bundle, name, props string) *engine.RunStatusDoc {
	t.Helper()
	onDocs := b.Workflow(t, "acme", name+" documents", `{"actions": [{"type": "matcher", "properties": {
	  "left": "doc:`+c.l.ID+`", "right": "doc:`+c.r.ID+`", `+props+`}}]}`)
	decoded := b.Workflow(t, "acme", name+" decoded", `{"actions": [{"type": "matcher", "properties": {
	  "left": "@input.l", "right": "@input.r", `+props+`}}]}`)
	a := b.Execute(t, "acme", onDocs.ID, `{}`)
	d := b.Execute(t, "acme", decoded.ID, c.input)
	require.Equal(t, svctype.RunCompleted, a.Status, a.Reason)
	require.Equal(t, svctype.RunCompleted, d.Status, d.Reason)
	b.SameArrays(t, "acme", a.ID, d.ID, "matched", "unmatchedLeft", "unmatchedRight")
	return a
}

// TestMatcherReadsPlainCSVLegsFromTheirBytes: a matcher's doc: legs that are plain CSV
// (no quotes, no carriage returns) are read from the documents' own bytes, never written as
// JSON, and match as the same records decoded do: numbers in any written form, blank
// numeric cells (null), text that looks numeric, bytes that are not UTF-8, blank lines,
// short rows, keys on a numeric column and on a text one.
func TestMatcherReadsPlainCSVLegsFromTheirBytes(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	var left, right strings.Builder
	left.WriteString("\xEF\xBB\xBFref,amount,date,memo,code,num\n\n")
	right.WriteString("ref,amount,date,memo,code,num,extra\n")
	nums := []string{"%d", "%d.0", " %d ", "%d00e-2"}
	forms := []string{"%d.%02d", " %d.%02d ", "+%d.%02d", "%d.%02d0"}
	for i := range 300 {
		amount := fmt.Sprintf(forms[i%len(forms)], i, i%100)
		if i%11 == 0 {
			amount = "  " // null in a numeric column
		}
		memo := fmt.Sprintf("<a & b> %d", i)
		if i%13 == 0 {
			memo = "caf\xe9 \xff" // not UTF-8
		}
		fmt.Fprintf(&left, "R%03d,%s,2026-02-%02d,%s,%03d,"+nums[i%len(nums)]+"\n", i, amount, 1+i%28, memo, i%40, i%40)
		if i%17 == 0 {
			left.WriteString(",,,\n\n") // a blank row and a blank line
		}
		if i%5 != 0 {
			fmt.Fprintf(&right, "R%03d,%de-2,2026-02-%02d,%s,%03d,%d", i, i*100+(i+1)%100, 1+(i+2)%28, memo, i%40, i%40)
			if i%7 == 0 {
				right.WriteString(",x,\n") // a trailing cell, then an empty one
			} else {
				right.WriteString("\n")
			}
		}
	}
	legs := uploadCSVLegs(t, b, left.String(), right.String())
	for name, props := range map[string]string{
		"text key":                    `"matchOn": ["ref"], "tolerance": 0.05, "dateWindowDays": 3, "descriptionField": "memo"`,
		"text key that looks numeric": `"matchOn": ["code"], "amountField": "amount", "tolerance": 0.5`,
		"numeric key":                 `"matchOn": ["num"], "amountField": "amount", "tolerance": 0.5`,
		"two keys":                    `"matchOn": ["ref", "code"], "dateWindowDays": 2`,
	} {
		t.Run(name, func(t *testing.T) {
			a := legs.matchAsDecoded(t, b, name, props)
			ev, err := b.Eng.Evidence(b.Ctx, "acme", a.ID)
			require.NoError(t, err)
			var summary map[string]any
			require.NoError(t, json.Unmarshal(ev.Steps[0].InputSummary, &summary))
			require.Equal(t, map[string]any{"truncated": true, "length": float64(len(legs.lrecs)), "bytes": float64(left.Len() - 3)}, summary["left"],
				"the left leg was read from the document's bytes (its byte order mark left out)")
			require.EqualValues(t, len(legs.rrecs), summary["right"].(map[string]any)["length"])
		})
	}
}

// TestMatcherMapsCSVLegFiles: with document content as files, a matcher's plain CSV legs
// are the files mapped, not read: the run matches as the same records decoded do, and once
// nothing refers to the legs the mappings are released (Linux: /proc/self/maps).
func TestMatcherMapsCSVLegFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := store.OpenTest(t, "sqlite")
	eng, err := engine.New(engine.Config{Store: st, Blobs: documents.NewDirBlobs(dir)})
	require.NoError(t, err)
	b := &enginetest.Bundle{Eng: eng, St: st, Ctx: context.Background()}
	var left, right strings.Builder
	left.WriteString("ref,amount\n")
	right.WriteString("ref,amount\n")
	for i := range 2000 {
		fmt.Fprintf(&left, "R%04d,%d.%02d\n", i, i, i%100)
		if i%3 != 0 {
			fmt.Fprintf(&right, "R%04d,%d.%02d\n", i, i, (i+1)%100)
		}
	}
	legs := uploadCSVLegs(t, b, left.String(), right.String())
	legs.matchAsDecoded(t, b, "mapped", `"matchOn": ["ref"], "tolerance": 0.05`)

	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps: mappings not observable here")
	}
	// A leg as the matcher gets it: the document's file, mapped while it is held.
	leg, err := eng.Evaluator().Resolve(svctype.WithRawJSON(svctype.WithOrg(b.Ctx, "acme")), "doc:"+legs.l.ID, nil)
	require.NoError(t, err)
	recs, ok := leg.(*documents.CSVRecords)
	require.True(t, ok, "%T", leg)
	require.Equal(t, len(legs.lrecs), recs.Len())
	maps, _ = os.ReadFile("/proc/self/maps")
	require.Contains(t, string(maps), dir, "the leg's file is mapped")
	runtime.KeepAlive(recs)
	require.Eventually(t, func() bool {
		runtime.GC()
		maps, _ = os.ReadFile("/proc/self/maps")
		return !strings.Contains(string(maps), dir)
	}, 10*time.Second, 20*time.Millisecond, "the legs' mappings are released once nothing refers to them")
}

// TestMatcherLegErrors: a matcher's two doc: legs are read side by side; a leg that cannot
// be read fails the run with that leg's reason, the left's when both fail, as when they
// were read one after the other.
func TestMatcherLegErrors(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	ok := b.Upload(t, "acme", "ok.csv", "text/csv", "id,amount\nA,1\n")
	pdf := b.Upload(t, "acme", "scan.pdf", "application/pdf", "%PDF-1.4")
	for _, tc := range []struct{ name, left, right, reason string }{
		{"right missing", "doc:" + ok.ID, "doc:doc_nope", "document doc_nope not found"},
		{"left missing", "doc:doc_gone", "doc:" + ok.ID, "document doc_gone not found"},
		{"both fail", "doc:" + pdf.ID, "doc:doc_nope", "document " + pdf.ID + " version 1: unsupported document format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := b.Workflow(t, "acme", tc.name, `{"actions": [{"type": "matcher", "properties": {
			  "left": "`+tc.left+`", "right": "`+tc.right+`", "matchOn": ["id"]}}]}`)
			doc := b.Execute(t, "acme", w.ID, `{}`)
			require.Equal(t, svctype.RunFailed, doc.Status)
			require.Contains(t, doc.Reason, tc.reason)
		})
	}
}
