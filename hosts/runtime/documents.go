package runtime

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/documents"
)

// Upload limits. One file is at most the engine's document size (Documents.MaxSize: 25 MiB
// unless the deployment sets another): larger is 413 body_too_large. The request may be
// uploadFraming larger, for the other fields and the multipart framing; a body past that is
// cut off while it is read, also 413.
const (
	uploadFraming = 1 << 20
	// uploadMemory: a file part up to this size is held in memory, a larger one in a
	// temporary file removed when the request ends.
	uploadMemory = 8 << 20
)

// maxDocumentBytes is the largest file an upload may carry: the engine's limit (the
// default one for a server built without an engine, to describe its routes).
func (s *Server) maxDocumentBytes() int {
	if s.eng == nil {
		return documents.MaxSize
	}
	return s.eng.Documents.MaxSize()
}

// maxUploadBytes is the largest upload request body.
func (s *Server) maxUploadBytes() int64 { return int64(s.maxDocumentBytes()) + uploadFraming }

const codeMalformedMultipart = "malformed_multipart"

// Document is a document as the routes answer it.
type Document struct {
	ID          string            `json:"id" doc:"Document id (doc_<uuid>); doc:<id> reads it in a workflow."`
	Name        string            `json:"name"`
	ContentType string            `json:"content_type" doc:"The latest version's content type."`
	Tags        []string          `json:"tags" nullable:"false"`
	SizeBytes   int64             `json:"size_bytes" doc:"The latest version's size in bytes."`
	Version     int               `json:"version" doc:"The latest version's number (1 for a new document)."`
	Versions    []DocumentVersion `json:"versions,omitempty" doc:"Every version, oldest first (not in listings)."`
	ExpiresAt   *time.Time        `json:"expires_at,omitempty" doc:"When the worker deletes the document (document.expired)."`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
}

// DocumentVersion is one version of a document.
type DocumentVersion struct {
	Version     int       `json:"version"`
	ContentType string    `json:"content_type"`
	SizeBytes   int64     `json:"size_bytes"`
	SHA256      string    `json:"sha256" doc:"Hex SHA-256 of the content."`
	CreatedAt   time.Time `json:"created_at"`
}

func documentOf(d documents.Document) Document {
	out := Document{
		ID: d.ID, Name: d.Name, ContentType: d.ContentType, Tags: d.Tags, SizeBytes: d.SizeBytes,
		Version: d.Version, ExpiresAt: d.ExpiresAt, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
	}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	for _, v := range d.Versions {
		out.Versions = append(out.Versions, DocumentVersion{
			Version: v.Version, ContentType: v.ContentType, SizeBytes: v.SizeBytes, SHA256: v.SHA256, CreatedAt: v.CreatedAt,
		})
	}
	return out
}

// uploadBody documents a multipart upload body. The handlers read the form themselves
// (Huma gets a plain multipart.Form), so that every problem is located as body.<field>.
func uploadBody(withDocumentFields bool) *huma.RequestBody {
	props := map[string]*huma.Schema{
		"file": {Type: huma.TypeString, Format: "binary", ContentEncoding: "binary",
			Description: "The content: required, one file, at most 25 MiB."},
		"content_type": {Type: huma.TypeString, MaxLength: ptr(documents.MaxContentTypeLength),
			Description: "Content type; default the file part's, else the one the file's name implies " +
				"(else the document's). CSV, JSON and XLSX are readable by doc: references."},
	}
	if withDocumentFields {
		props["name"] = &huma.Schema{Type: huma.TypeString, MaxLength: ptr(documents.MaxNameLength),
			Description: "Document name; default the file's name."}
		props["tags"] = &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString},
			Description: "Tags: comma-separated, or the field repeated."}
		props["expires_at"] = &huma.Schema{Type: huma.TypeString, Format: "date-time",
			Description: "RFC 3339 date-time in the future: the worker deletes the document then (document.expired)."}
	}
	return &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
		"multipart/form-data": {Schema: &huma.Schema{Type: huma.TypeObject, Properties: props, Required: []string{"file"}}},
	}}
}

func ptr[T any](v T) *T { return &v }

// DocumentPath is the input of the routes under /documents/{documentId}.
type DocumentPath struct {
	OrgParam
	DocumentID string `path:"documentId" doc:"Document id (doc_<uuid>)."`
}

// DocumentContent is the answer of GET /documents/{documentId}/content: the bytes as stored.
type DocumentContent struct {
	ContentType        string `header:"Content-Type"`
	ContentDisposition string `header:"Content-Disposition"`
	NoSniff            string `header:"X-Content-Type-Options"`
	Version            int    `header:"X-Document-Version" doc:"The version served."`
	Body               []byte
}

var documentNotFound = failure{notFound: "document not found"}

func (s *Server) registerDocuments() {
	upload := huma.Middlewares{s.readMultipart}

	o := op("upload-document", http.MethodPost, "/documents", "Upload a document (version 1)", "Documents")
	o.Description = "multipart/form-data with a `file` part (at most 25 MiB unless the deployment sets another limit, " +
		"svcflow --max-document-mib; else 413 body_too_large) and " +
		"optional `name`, `tags`, `content_type` and `expires_at`. Emits document.uploaded."
	o.DefaultStatus = http.StatusCreated
	o.MaxBodyBytes = s.maxUploadBytes()
	o.Middlewares = upload
	o.RequestBody = uploadBody(true)
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType}
	register(s, o, failure{}, s.uploadDocument)

	o = op("list-documents", http.MethodGet, "/documents", "List the organization's documents, newest first", "Documents")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{in: "query"}, s.listDocuments)

	o = op("get-document", http.MethodGet, "/documents/{documentId}", "A document with its versions", "Documents")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, documentNotFound, s.getDocument)

	o = op("create-document-version", http.MethodPost, "/documents/{documentId}/versions", "Upload a new version of a document", "Documents")
	o.Description = "multipart/form-data with a `file` part (at most 25 MiB unless the deployment sets another limit) and an optional `content_type`. " +
		"The new version is the latest plus one; earlier versions stay readable (doc:<id>@<N>). Emits document.version_created."
	o.DefaultStatus = http.StatusCreated
	o.MaxBodyBytes = s.maxUploadBytes()
	o.Middlewares = upload
	o.RequestBody = uploadBody(false)
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType}
	register(s, o, documentNotFound, s.createDocumentVersion)

	o = op("get-document-content", http.MethodGet, "/documents/{documentId}/content", "A version's content, as uploaded", "Documents")
	o.Description = "Answers the bytes of the latest version, or of `?version=N`, with that version's Content-Type (any type: what was uploaded)."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	o.Responses = map[string]*huma.Response{"200": {
		Description: "The content.",
		Content:     map[string]*huma.MediaType{"*/*": {Schema: &huma.Schema{Type: huma.TypeString, Format: "binary"}}},
	}}
	register(s, o, failure{notFound: "document or version not found", in: "query"}, s.getDocumentContent)

	o = op("delete-document", http.MethodDelete, "/documents/{documentId}", "Delete a document with all its versions", "Documents")
	o.Description = "Emits document.deleted."
	o.DefaultStatus = http.StatusNoContent
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, documentNotFound, s.deleteDocument)
}

type uploadDocumentInput struct {
	OrgParam
	RawBody multipart.Form
}

func (s *Server) uploadDocument(ctx context.Context, in *uploadDocumentInput) (*answer[Document], error) {
	form := &in.RawBody
	content, filename, partType, err := readFilePart(form, s.maxDocumentBytes())
	if err != nil {
		return nil, err
	}
	up := engine.DocumentUpload{Content: content, Name: formValue(form, "name"), ContentType: formValue(form, "content_type")}
	if strings.TrimSpace(up.Name) == "" {
		up.Name = filename
	}
	if strings.TrimSpace(up.ContentType) == "" {
		up.ContentType = documents.ContentTypeFor(partType, filename)
	}
	for _, v := range form.Value["tags"] {
		up.Tags = append(up.Tags, strings.Split(v, ",")...)
	}
	if raw := strings.TrimSpace(formValue(form, "expires_at")); raw != "" {
		t, err := time.Parse(time.RFC3339, raw)
		if err != nil {
			return nil, engine.Invalid("/expires_at", "must be an RFC 3339 date-time, e.g. 2026-01-31T12:00:00Z")
		}
		up.ExpiresAt = &t
	}
	doc, err := s.eng.Documents.UploadDocument(ctx, in.OrgID, up)
	if err != nil {
		return nil, err
	}
	return &answer[Document]{Body: documentOf(*doc)}, nil
}

type listDocumentsInput struct {
	OrgParam
	Paging
	Tag string `query:"tag" maxLength:"100" doc:"Only documents carrying this tag."`
}

func (s *Server) listDocuments(ctx context.Context, in *listDocumentsInput) (*answer[List[Document]], error) {
	page, err := s.eng.Documents.ListDocuments(ctx, in.OrgID, documents.ListFilter{Tag: in.Tag, ListOptions: in.options()})
	if err != nil {
		return nil, err
	}
	return &answer[List[Document]]{Body: listOf(page, documentOf)}, nil
}

func (s *Server) getDocument(ctx context.Context, in *DocumentPath) (*answer[Document], error) {
	doc, err := s.eng.Documents.GetDocument(ctx, in.OrgID, in.DocumentID)
	if err != nil {
		return nil, err
	}
	return &answer[Document]{Body: documentOf(*doc)}, nil
}

type createDocumentVersionInput struct {
	DocumentPath
	RawBody multipart.Form
}

func (s *Server) createDocumentVersion(ctx context.Context, in *createDocumentVersionInput) (*answer[Document], error) {
	form := &in.RawBody
	content, filename, partType, err := readFilePart(form, s.maxDocumentBytes())
	if err != nil {
		return nil, err
	}
	ct := formValue(form, "content_type")
	if strings.TrimSpace(ct) == "" {
		ct = documents.ContentTypeFor(partType, filename)
	}
	doc, err := s.eng.Documents.AddDocumentVersion(ctx, in.OrgID, in.DocumentID, content, ct)
	if err != nil {
		return nil, err
	}
	return &answer[Document]{Body: documentOf(*doc)}, nil
}

type getDocumentContentInput struct {
	DocumentPath
	Version int `query:"version" minimum:"1" doc:"Version number (default the latest)."`
}

func (s *Server) getDocumentContent(ctx context.Context, in *getDocumentContentInput) (*DocumentContent, error) {
	doc, v, data, err := s.eng.Documents.DocumentContent(ctx, in.OrgID, in.DocumentID, in.Version)
	if err != nil {
		return nil, err
	}
	return &DocumentContent{
		ContentType:        v.ContentType,
		ContentDisposition: mime.FormatMediaType("attachment", map[string]string{"filename": doc.Name}),
		NoSniff:            "nosniff",
		Version:            v.Version,
		Body:               data,
	}, nil
}

func (s *Server) deleteDocument(ctx context.Context, in *DocumentPath) (*struct{}, error) {
	if err := s.eng.Documents.DeleteDocument(ctx, in.OrgID, in.DocumentID); err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}

// readMultipart parses an upload before Huma does, under the upload limit: a body past it is
// 413 body_too_large, a body that is not multipart/form-data 415, one that does not parse
// 400 malformed_multipart (knownProblem). Huma then finds the form parsed. Temporary files
// go when the request ends.
func (s *Server) readMultipart(ctx huma.Context, next func(huma.Context)) {
	r, w := humachi.Unwrap(ctx)
	r.Body = http.MaxBytesReader(w, r.Body, s.maxUploadBytes())
	err := r.ParseMultipartForm(uploadMemory)
	if r.MultipartForm != nil {
		defer func() { _ = r.MultipartForm.RemoveAll() }()
	}
	if err == nil {
		next(ctx)
		return
	}
	p := s.problem(ctx.Context(), &multipartError{err}, failure{tooLarge: "a document upload is at most " + documents.SizeText(s.maxDocumentBytes())})
	ctx.SetHeader("Content-Type", "application/problem+json")
	ctx.SetStatus(p.Status)
	_ = huma.DefaultJSONFormat.Marshal(ctx.BodyWriter(), p)
}

// multipartError is a request body that ParseMultipartForm could not read.
type multipartError struct{ err error }

func (e *multipartError) Error() string { return e.err.Error() }
func (e *multipartError) Unwrap() error { return e.err }

// formValue is the first value of a form field ("" when absent).
func formValue(form *multipart.Form, name string) string {
	if vs := form.Value[name]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// readFilePart reads the one `file` part of an upload and returns its bytes, its file name
// (base name only) and the Content-Type its part header declared.
func readFilePart(form *multipart.Form, maxSize int) ([]byte, string, string, error) {
	headers := form.File["file"]
	switch {
	case len(headers) == 0:
		if _, isField := form.Value["file"]; isField {
			return nil, "", "", engine.Invalid("/file", "must be a file part (with a filename), not a plain field")
		}
		return nil, "", "", engine.Invalid("/file", "required: the content, as a file part named file")
	case len(headers) > 1:
		return nil, "", "", engine.Invalid("/file", "exactly one file part named file")
	case headers[0].Size > int64(maxSize):
		return nil, "", "", tooLargeProblem(maxSize)
	}
	f, err := headers[0].Open()
	if err != nil {
		return nil, "", "", err
	}
	defer f.Close()
	// Read into a buffer of the part's size: io.ReadAll would grow its slice by doubling,
	// holding up to twice a large file at once.
	buf := bytes.NewBuffer(make([]byte, 0, headers[0].Size+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, int64(maxSize)+1)); err != nil {
		return nil, "", "", err
	}
	data := buf.Bytes()
	if len(data) > maxSize {
		return nil, "", "", tooLargeProblem(maxSize)
	}
	name := path.Base(strings.ReplaceAll(headers[0].Filename, `\`, "/"))
	if name == "." || name == "/" {
		name = ""
	}
	return data, name, headers[0].Header.Get("Content-Type"), nil
}

func tooLargeProblem(maxSize int) *Problem {
	limit := documents.SizeText(maxSize)
	return newProblem(http.StatusRequestEntityTooLarge, codeBodyTooLarge, "the file is larger than "+limit,
		&ProblemDetail{Location: "body.file", Pointer: "/file", Message: "at most " + limit})
}
