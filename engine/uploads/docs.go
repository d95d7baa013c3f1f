// Package uploads is the engine's side of documents (spec: Documents): versioned uploads,
// their events and expiry, and the doc: references that read a version as rows in step
// properties, foreach items and nway legs. The rules of content (formats, extraction,
// limits, where blobs live) are package documents'.
package uploads

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Documents: versioned uploads, their expiry, and the doc: references that read them as
// rows. The rules of content (formats, extraction, limits, where blobs live) are package
// documents'; this file is the engine's side: validation, transactions, events and jobs.

// Events of documents (spec section 6). They belong to no run: RunID is empty.
const (
	EventDocumentUploaded       = "document.uploaded"        // document_id, name, content_type, size_bytes
	EventDocumentVersionCreated = "document.version_created" // document_id, version, content_type, size_bytes
	EventDocumentDeleted        = "document.deleted"         // document_id
	EventDocumentExpired        = "document.expired"         // document_id, name, expires_at
)

// JobDocumentExpire is the job that deletes a document at its expires_at; its payload is
// {document_id}.
const JobDocumentExpire = "document_expire"

// DocPrefix is the prefix of document references in step properties: doc:doc_<id> for the
// latest version, doc:doc_<id>@<N> for version N.
const DocPrefix = "doc:"

// Documents is the documents of every organization.
type Documents struct {
	core  *core.Core
	store Store
	blobs documents.BlobStore
	log   *slog.Logger
	now   func() time.Time
	refs  *docRefs
	// maxSize is the largest content one version may have, in bytes.
	maxSize int
}

// New returns the documents over st, their content in blobs (nil: in the database, with
// its version row). One version's content is at most maxSize bytes (0: documents.MaxSize,
// 25 MiB).
func New(c *core.Core, st Store, blobs documents.BlobStore, maxSize int) *Documents {
	if maxSize <= 0 {
		maxSize = documents.MaxSize
	}
	d := &Documents{core: c, store: st, blobs: blobs, log: c.Logger(), now: c.Now, maxSize: maxSize}
	d.refs = &docRefs{e: d, cache: map[docRowsKey][]any{}}
	return d
}

// MaxSize is the largest content one version may have, in bytes.
func (e *Documents) MaxSize() int { return e.maxSize }

// Register puts the doc: resolver on c's evaluator and the expiry job on c.
func (e *Documents) Register(c *core.Core) {
	c.Evaluator().RegisterPrefix(DocPrefix, e.Resolve)
	c.Evaluator().RegisterPin(DocPrefix, e.Pin)
	c.RegisterJob(JobDocumentExpire, e.Expire)
}

// Pin names the version a doc: reference (without its prefix) reads now: doc_<id> becomes
// doc_<id>@<latest>; a reference with its version is already exact. What a foreach reads
// its items from, once, so that a version uploaded while it runs is not mixed in.
func (e *Documents) Pin(ctx context.Context, ref string) (string, error) {
	org := svctype.OrgFrom(ctx)
	id, version, err := parseDocRef(ref)
	if err != nil || version > 0 || org == "" {
		return ref, err
	}
	_, v, err := e.store.GetDocumentVersion(ctx, org, id, 0)
	if errors.Is(err, core.ErrNotFound) {
		return ref, nil // Resolve says what is missing
	}
	if err != nil {
		return "", err
	}
	return id + "@" + strconv.Itoa(v.Version), nil
}

// Resolve reads a doc: reference (without its prefix) of the organization in ctx as an
// array of records: the evaluator's resolver of DocPrefix.
func (e *Documents) Resolve(ctx context.Context, ref string) (any, error) {
	return e.refs.resolve(ctx, ref)
}

// documentBlobs is where the content of work done through q (the store, or a transaction)
// lives, and whether that is q's own database: then it commits with q's transaction and
// DeleteDocument removes it. Content is in the database until the engine is configured with
// a documents.BlobStore.
func (e *Documents) documentBlobs(q documents.BlobTable) (blobs documents.BlobStore, inDB bool) {
	if e.blobs != nil {
		return e.blobs, false
	}
	return documents.DBBlobs(q), true
}

// DocumentUpload is a new document.
type DocumentUpload struct {
	// Name is required (hosts default it to the uploaded file's name).
	Name string
	// ContentType is stored as given when it names a type; when it is empty or
	// application/octet-stream, the name's extension decides (documents.ContentTypeFor).
	ContentType string
	// Tags: trimmed; empty ones dropped, repeats removed, order kept.
	Tags []string
	// ExpiresAt, when set, must be in the future: the worker deletes the document then.
	ExpiresAt *time.Time
	Content   []byte
}

// UploadDocument stores a new document as version 1 and emits document.uploaded.
func (e *Documents) UploadDocument(ctx context.Context, orgID string, in DocumentUpload) (*documents.Document, error) {
	var doc *documents.Document
	err := e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		var err error
		doc, err = e.UploadDocumentTx(ctx, stx, orgID, in)
		return err
	})
	if err != nil {
		return nil, err
	}
	if doc.ExpiresAt != nil {
		e.core.Notify()
	}
	return doc, nil
}

// UploadDocumentTx is UploadDocument inside the caller's transaction: the document, its
// content (when kept in the database), its expiry job and its event exist only if stx commits.
func (e *Documents) UploadDocumentTx(ctx context.Context, stx storage.Tx, orgID string, in DocumentUpload) (*documents.Document, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	tx := Tx(stx)
	now := e.now().UTC()
	name, contentType, tags, err := checkUpload(in, now, e.maxSize)
	if err != nil {
		return nil, err
	}
	doc := &documents.Document{
		ID: documents.IDPrefix + uuid.NewString(), OrgID: orgID, Name: name, Tags: tags,
		ExpiresAt: in.ExpiresAt, CreatedAt: now, UpdatedAt: now,
		Versions: []documents.Version{{
			Version: 1, ContentType: contentType, SizeBytes: int64(len(in.Content)),
			SHA256: sha256Hex(in.Content), CreatedAt: now,
		}},
	}
	if err := tx.CreateDocument(ctx, doc); err != nil {
		return nil, err
	}
	blobs, _ := e.documentBlobs(tx)
	if err := blobs.Put(ctx, documents.BlobKey{OrgID: orgID, DocumentID: doc.ID, Version: 1}, in.Content); err != nil {
		return nil, err
	}
	if doc.ExpiresAt != nil {
		payload, _ := json.Marshal(map[string]string{"document_id": doc.ID})
		job := &svctype.Job{OrgID: orgID, Kind: JobDocumentExpire, RunAt: *doc.ExpiresAt, Payload: payload}
		if err := tx.EnqueueJob(ctx, job); err != nil {
			return nil, err
		}
	}
	err = e.appendDocumentEvent(ctx, stx, doc, EventDocumentUploaded, map[string]any{
		"document_id": doc.ID, "name": doc.Name, "content_type": doc.ContentType, "size_bytes": doc.SizeBytes,
	})
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// AddDocumentVersion stores content as the next version of a document and emits
// document.version_created. An empty contentType (or application/octet-stream) takes the
// type the document's name implies. It returns the document with its versions.
func (e *Documents) AddDocumentVersion(ctx context.Context, orgID, id string, content []byte, contentType string) (*documents.Document, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	if err := checkContent(content, e.maxSize); err != nil {
		return nil, err
	}
	var doc *documents.Document
	err := e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		cur, _, err := tx.GetDocumentVersion(ctx, orgID, id, 0)
		if err != nil {
			return err
		}
		ct, err := checkContentType(contentType, cur.Name)
		if err != nil {
			return err
		}
		v := &documents.Version{
			ContentType: ct, SizeBytes: int64(len(content)), SHA256: sha256Hex(content), CreatedAt: e.now().UTC(),
		}
		if doc, err = tx.AddDocumentVersion(ctx, orgID, id, v); err != nil {
			return err
		}
		blobs, _ := e.documentBlobs(tx)
		if err := blobs.Put(ctx, documents.BlobKey{OrgID: orgID, DocumentID: id, Version: v.Version}, content); err != nil {
			return err
		}
		err = e.appendDocumentEvent(ctx, stx, doc, EventDocumentVersionCreated, map[string]any{
			"document_id": id, "version": v.Version, "content_type": v.ContentType, "size_bytes": v.SizeBytes,
		})
		if err != nil {
			return err
		}
		doc, err = tx.GetDocument(ctx, orgID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// GetDocument returns a document with its versions, oldest first.
func (e *Documents) GetDocument(ctx context.Context, orgID, id string) (*documents.Document, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	return e.store.GetDocument(ctx, orgID, id)
}

// ListDocuments pages an organization's documents, newest first, optionally those with a tag.
func (e *Documents) ListDocuments(ctx context.Context, orgID string, f documents.ListFilter) (svctype.Page[documents.Document], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[documents.Document]{}, err
	}
	return e.store.ListDocuments(ctx, orgID, f)
}

// DocumentContent returns a document, one of its versions (the latest for version 0) and
// that version's content.
func (e *Documents) DocumentContent(ctx context.Context, orgID, id string, version int) (*documents.Document, *documents.Version, []byte, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, nil, nil, err
	}
	if version < 0 {
		return nil, nil, nil, core.Invalid("/version", "must be a positive integer")
	}
	doc, v, err := e.store.GetDocumentVersion(ctx, orgID, id, version)
	if err != nil {
		return nil, nil, nil, err
	}
	blobs, _ := e.documentBlobs(e.store)
	data, err := blobs.Get(ctx, documents.BlobKey{OrgID: orgID, DocumentID: id, Version: v.Version})
	if err != nil {
		return nil, nil, nil, err
	}
	return doc, v, data, nil
}

// DeleteDocument removes a document with all its versions and content, and emits
// document.deleted.
func (e *Documents) DeleteDocument(ctx context.Context, orgID, id string) error {
	if err := core.CheckOrg(orgID); err != nil {
		return err
	}
	var gone *documents.Document
	err := e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		var err error
		if gone, err = tx.DeleteDocument(ctx, orgID, id); err != nil {
			return err
		}
		return e.appendDocumentEvent(ctx, stx, gone, EventDocumentDeleted, map[string]any{"document_id": id})
	})
	if err != nil {
		return err
	}
	e.dropBlobs(ctx, gone)
	return nil
}

// Expire runs a JobDocumentExpire job (a core.JobHandler): it deletes the document and emits
// document.expired in one transaction fenced by the job's lease. A document deleted
// earlier only completes the job.
func (e *Documents) Expire(ctx context.Context, job *svctype.Job) error {
	var p struct {
		DocumentID string `json:"document_id"`
	}
	_ = json.Unmarshal(job.Payload, &p)
	var gone *documents.Document
	err := e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		if err := tx.RenewJob(ctx, job, e.core.Lease()); err != nil {
			return err
		}
		if p.DocumentID == "" {
			e.log.Warn("document_expire job without a document_id", "job_id", job.ID)
			return tx.CompleteJob(ctx, job)
		}
		doc, err := tx.DeleteDocument(ctx, job.OrgID, p.DocumentID)
		if errors.Is(err, core.ErrNotFound) {
			return tx.CompleteJob(ctx, job)
		}
		if err != nil {
			return err
		}
		payload := map[string]any{"document_id": doc.ID, "name": doc.Name, "expires_at": doc.ExpiresAt}
		if err := e.appendDocumentEvent(ctx, stx, doc, EventDocumentExpired, payload); err != nil {
			return err
		}
		gone = doc
		return tx.CompleteJob(ctx, job)
	})
	if err != nil {
		return err
	}
	e.dropBlobs(ctx, gone)
	return nil
}

// dropBlobs removes a deleted document's content when it lives outside the database (in the
// database it went with the rows). The rows are gone already, so a failure leaves only an
// unreferenced file: it is logged, not returned.
func (e *Documents) dropBlobs(ctx context.Context, doc *documents.Document) {
	if doc == nil {
		return
	}
	blobs, inDB := e.documentBlobs(e.store)
	if inDB {
		return
	}
	for _, v := range doc.Versions {
		err := blobs.Delete(ctx, documents.BlobKey{OrgID: doc.OrgID, DocumentID: doc.ID, Version: v.Version})
		if err != nil && !errors.Is(err, core.ErrNotFound) {
			e.log.Warn("document content not removed", "document_id", doc.ID, "version", v.Version, "err", err)
		}
	}
}

// appendDocumentEvent writes a document event to the outbox and records the document it is
// about (its tags and content type, for webhook filters) under the event's delivery id.
func (e *Documents) appendDocumentEvent(ctx context.Context, stx storage.Tx, doc *documents.Document, name string, payload map[string]any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("%s payload: %w", name, err)
	}
	ev := svctype.Event{
		DeliveryID: "dlv_" + uuid.NewString(), OrgID: doc.OrgID, Event: name,
		Timestamp: e.now().UTC(), Payload: b,
	}
	if err := e.core.Emit(ctx, stx, []svctype.Event{ev}, &core.EventSubject{ContentType: doc.ContentType, Tags: doc.Tags}); err != nil {
		return err
	}
	return Tx(stx).PutEventSubjects(ctx, doc.OrgID, []documents.EventSubject{{
		DeliveryID: ev.DeliveryID, DocumentID: doc.ID, ContentType: doc.ContentType, Tags: doc.Tags,
	}})
}

// checkUpload validates a new document and returns its name, content type and tags.
func checkUpload(in DocumentUpload, now time.Time, maxSize int) (string, string, []string, error) {
	ve := &core.ValidationError{}
	name := strings.TrimSpace(in.Name)
	switch {
	case name == "":
		ve.Problems = append(ve.Problems, core.Problem{Pointer: "/name", Message: "required: the document's name (or a file name)"})
	case len(name) > documents.MaxNameLength:
		ve.Problems = append(ve.Problems, core.Problem{Pointer: "/name", Message: fmt.Sprintf("at most %d bytes", documents.MaxNameLength)})
	case hasControl(name):
		ve.Problems = append(ve.Problems, core.Problem{Pointer: "/name", Message: "must not contain control characters"})
	}
	contentType, err := checkContentType(in.ContentType, name)
	if err != nil {
		ve.Problems = append(ve.Problems, err.(*core.ValidationError).Problems...)
	}
	tags, tagProblems := normalizeTags(in.Tags)
	ve.Problems = append(ve.Problems, tagProblems...)
	if err := checkContent(in.Content, maxSize); err != nil {
		ve.Problems = append(ve.Problems, err.(*core.ValidationError).Problems...)
	}
	switch {
	case in.ExpiresAt == nil:
	case !in.ExpiresAt.After(now):
		ve.Problems = append(ve.Problems, core.Problem{Pointer: "/expires_at", Message: "must be in the future"})
	case !core.StorableTime(*in.ExpiresAt):
		ve.Problems = append(ve.Problems, core.Problem{Pointer: "/expires_at", Message: "a time before the year 10000"})
	}
	if len(ve.Problems) > 0 {
		return "", "", nil, ve
	}
	return name, contentType, tags, nil
}

func checkContent(content []byte, maxSize int) error {
	switch {
	case len(content) == 0:
		return core.Invalid("/file", "is empty")
	case len(content) > maxSize:
		return core.Invalid("/file", "is larger than the %s limit", documents.SizeText(maxSize))
	}
	return nil
}

// checkContentType decides the content type to store (documents.ContentTypeFor) and
// checks that it is a media type.
func checkContentType(declared, name string) (string, error) {
	ct := documents.ContentTypeFor(declared, name)
	if len(ct) > documents.MaxContentTypeLength {
		return "", core.Invalid("/content_type", "at most %d bytes", documents.MaxContentTypeLength)
	}
	mt, params, err := mime.ParseMediaType(ct)
	if typ, sub, ok := strings.Cut(mt, "/"); err != nil || !ok || typ == "" || sub == "" {
		return "", core.Invalid("/content_type", "%q is not a media type (type/subtype)", ct)
	}
	return mime.FormatMediaType(mt, params), nil
}

func normalizeTags(in []string) ([]string, []core.Problem) {
	tags := []string{}
	seen := map[string]bool{}
	var problems []core.Problem
	for _, t := range in {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		switch {
		case len(t) > documents.MaxTagLength:
			problems = append(problems, core.Problem{Pointer: "/tags", Message: fmt.Sprintf("tag %.20q... is longer than %d bytes", t, documents.MaxTagLength)})
		case hasControl(t) || strings.Contains(t, ","):
			problems = append(problems, core.Problem{Pointer: "/tags", Message: fmt.Sprintf("tag %q must not contain commas or control characters", t)})
		}
		tags = append(tags, t)
	}
	if len(tags) > documents.MaxTags {
		problems = append(problems, core.Problem{Pointer: "/tags", Message: fmt.Sprintf("at most %d tags", documents.MaxTags)})
	}
	return tags, problems
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// doc: references.

// docRefs resolves doc: tokens for the evaluator. Versions never change, so a version's
// rows are cached (the resolver runs again for every foreach element); the document is
// still looked up on every call, so a deleted document or another organization's is never
// served from the cache.
type docRefs struct {
	e     *Documents
	mu    sync.Mutex
	cache map[docRowsKey][]any
	order []docRowsKey
	rows  int
}

type docRowsKey struct {
	org, id string
	version int
}

// docCacheRows bounds the rows the cache holds across documents.
const docCacheRows = 50_000

// resolve reads doc_<id> or doc_<id>@<N> of the organization in ctx as an array of
// records. It reads through the engine's store, not the step's transaction (the evaluator
// does not have it): no step transaction writes documents, so this does not wait on one.
// The rows are shared with the cache: callers must not change them (as with @paths).
func (r *docRefs) resolve(ctx context.Context, ref string) (any, error) {
	org := svctype.OrgFrom(ctx)
	if org == "" {
		return nil, errors.New("a doc: reference needs an organization")
	}
	id, version, err := parseDocRef(ref)
	if err != nil {
		return nil, err
	}
	doc, v, err := r.e.store.GetDocumentVersion(ctx, org, id, version)
	if errors.Is(err, core.ErrNotFound) {
		if version > 0 {
			if _, derr := r.e.store.GetDocument(ctx, org, id); derr == nil {
				return nil, fmt.Errorf("document %s has no version %d", id, version)
			}
		}
		return nil, fmt.Errorf("document %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	limit := documents.MaxRows
	if n := svctype.DocRows(ctx); n > 0 {
		limit = n // a kind that reads its documents whole (the matchers)
	}
	key := docRowsKey{org: org, id: id, version: v.Version}
	if rows, ok := r.cached(key); ok {
		if len(rows) > limit { // cached for a reader with a higher limit
			return nil, fmt.Errorf("document %s version %d has %w", id, v.Version, &documents.TooManyRowsError{Rows: len(rows), Limit: limit})
		}
		return rows, nil
	}
	blobs, _ := r.e.documentBlobs(r.e.store)
	blobKey := documents.BlobKey{OrgID: org, DocumentID: id, Version: v.Version}
	if svctype.RawJSONWanted(ctx) {
		// A matcher's leg (not cached): a plain CSV document's records read from its own
		// bytes, else the records as JSON bytes; no map per record either way. A file
		// is mapped rather than read: the leg is then held by the file's pages, not on
		// the heap, where the collector would let twice it grow.
		data, unmap, err := readBlob(ctx, blobs, blobKey)
		if err != nil {
			return nil, fmt.Errorf("document %s version %d: %w", id, v.Version, err)
		}
		recs, ok, err := documents.ReadCSVRecords(v.ContentType, doc.Name, data, limit)
		if ok {
			recs.Hold(unmap)
			return recs, nil
		}
		var b []byte
		if err == nil {
			b, err = documents.ExtractJSONLimit(v.ContentType, doc.Name, data, limit) // a copy
		}
		unmap()
		var tooMany *documents.TooManyRowsError
		if errors.As(err, &tooMany) {
			return nil, fmt.Errorf("document %s version %d has %w", id, v.Version, err)
		}
		if err != nil {
			return nil, fmt.Errorf("document %s version %d: %w", id, v.Version, err)
		}
		return svctype.RawJSON(b), nil
	}
	data, err := blobs.Get(ctx, blobKey)
	if err != nil {
		return nil, fmt.Errorf("document %s version %d: %w", id, v.Version, err)
	}
	recs, err := documents.ExtractLimit(v.ContentType, doc.Name, data, limit)
	var tooMany *documents.TooManyRowsError
	if errors.As(err, &tooMany) {
		return nil, fmt.Errorf("document %s version %d has %w", id, v.Version, err)
	}
	if err != nil {
		return nil, fmt.Errorf("document %s version %d: %w", id, v.Version, err)
	}
	rows := make([]any, len(recs))
	for i, rec := range recs {
		rows[i] = rec
	}
	r.store(key, rows)
	return rows, nil
}

// readBlob maps a blob when its store can (documents.BlobMapper), else reads it; unmap
// releases a mapping (nothing read from data may be used after it).
func readBlob(ctx context.Context, blobs documents.BlobStore, key documents.BlobKey) (data []byte, unmap func(), err error) {
	if m, ok := blobs.(documents.BlobMapper); ok {
		return m.Map(ctx, key)
	}
	data, err = blobs.Get(ctx, key)
	return data, func() {}, err
}

// parseDocRef splits doc_<id>[@<N>]; version 0 means the latest.
func parseDocRef(ref string) (string, int, error) {
	id, ver, versioned := strings.Cut(ref, "@")
	if id == "" {
		return "", 0, errors.New("a doc: reference names a document: doc:doc_<id> or doc:doc_<id>@<version>")
	}
	if !versioned {
		return id, 0, nil
	}
	n, err := strconv.Atoi(ver)
	if err != nil || n < 1 || strings.TrimLeft(ver, "0123456789") != "" {
		return "", 0, fmt.Errorf("document %s: version %q is not a positive integer", id, ver)
	}
	return id, n, nil
}

func (r *docRefs) cached(key docRowsKey) ([]any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rows, ok := r.cache[key]
	return rows, ok
}

func (r *docRefs) store(key docRowsKey, rows []any) {
	if len(rows) > docCacheRows {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.cache[key]; ok {
		return
	}
	for r.rows+len(rows) > docCacheRows && len(r.order) > 0 {
		oldest := r.order[0]
		r.order = r.order[1:]
		r.rows -= len(r.cache[oldest])
		delete(r.cache, oldest)
	}
	r.cache[key] = rows
	r.order = append(r.order, key)
	r.rows += len(rows)
}
