package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Documents: a document row with its latest version's content type and size, one row per
// immutable version, tags indexed in document_tags for the ?tag= filter, and (when content
// is kept in the database) one document_blobs row per version.

type documentModel struct {
	bun.BaseModel `bun:"table:documents,alias:d"`

	OrgID       string          `bun:"org_id,pk"`
	ID          string          `bun:"id,pk"`
	Name        string          `bun:"name"`
	ContentType string          `bun:"content_type"`
	Tags        json.RawMessage `bun:"tags,type:text"`
	SizeBytes   int64           `bun:"size_bytes"`
	Version     int             `bun:"version"`
	ExpiresAt   *time.Time      `bun:"expires_at"`
	CreatedAt   time.Time       `bun:"created_at"`
	UpdatedAt   time.Time       `bun:"updated_at"`
}

type documentVersionModel struct {
	bun.BaseModel `bun:"table:document_versions,alias:dv"`

	OrgID       string    `bun:"org_id,pk"`
	DocumentID  string    `bun:"document_id,pk"`
	Version     int       `bun:"version,pk"`
	ContentType string    `bun:"content_type"`
	SizeBytes   int64     `bun:"size_bytes"`
	SHA256      string    `bun:"sha256"`
	CreatedAt   time.Time `bun:"created_at"`
}

type documentBlobModel struct {
	bun.BaseModel `bun:"table:document_blobs,alias:db"`

	OrgID      string `bun:"org_id,pk"`
	DocumentID string `bun:"document_id,pk"`
	Version    int    `bun:"version,pk"`
	Data       []byte `bun:"data"`
}

type documentTagModel struct {
	bun.BaseModel `bun:"table:document_tags,alias:dt"`

	OrgID      string `bun:"org_id,pk"`
	DocumentID string `bun:"document_id,pk"`
	Tag        string `bun:"tag,pk"`
}

type eventSubjectModel struct {
	bun.BaseModel `bun:"table:document_event_subjects,alias:des"`

	OrgID       string          `bun:"org_id,pk"`
	DeliveryID  string          `bun:"delivery_id,pk"`
	DocumentID  string          `bun:"document_id"`
	ContentType string          `bun:"content_type"`
	Tags        json.RawMessage `bun:"tags,type:text"`
}

func (m *documentModel) toDocument() (*documents.Document, error) {
	d := &documents.Document{
		ID: m.ID, OrgID: m.OrgID, Name: m.Name, ContentType: m.ContentType, SizeBytes: m.SizeBytes,
		Version: m.Version, ExpiresAt: utcPtr(m.ExpiresAt), CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC(),
		Tags: []string{},
	}
	if len(m.Tags) > 0 {
		if err := json.Unmarshal(m.Tags, &d.Tags); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func (m *documentVersionModel) toVersion() documents.Version {
	return documents.Version{
		Version: m.Version, ContentType: m.ContentType, SizeBytes: m.SizeBytes, SHA256: m.SHA256,
		CreatedAt: m.CreatedAt.UTC(),
	}
}

func marshalTags(tags []string) (json.RawMessage, error) {
	if tags == nil {
		tags = []string{}
	}
	return json.Marshal(tags)
}

// CreateDocument inserts a document, its version 1 and its tags; an empty ID gets
// doc_<uuid>.
func (q *querier) CreateDocument(ctx context.Context, doc *documents.Document) error {
	const op = "create document"
	if len(doc.Versions) != 1 || doc.Versions[0].Version != 1 {
		return fmt.Errorf("store: %s: a new document has exactly version 1", op)
	}
	if doc.ID == "" {
		doc.ID = documents.IDPrefix + newID()
	}
	t := q.now()
	doc.CreatedAt = orNow(doc.CreatedAt, t)
	doc.UpdatedAt = orNow(doc.UpdatedAt, doc.CreatedAt)
	doc.ExpiresAt = dbTimePtr(doc.ExpiresAt)
	v := &doc.Versions[0]
	v.CreatedAt = orNow(v.CreatedAt, doc.CreatedAt)
	doc.Version, doc.ContentType, doc.SizeBytes = 1, v.ContentType, v.SizeBytes
	if doc.Tags == nil {
		doc.Tags = []string{}
	}
	tags, err := marshalTags(doc.Tags)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	m := &documentModel{
		OrgID: doc.OrgID, ID: doc.ID, Name: doc.Name, ContentType: doc.ContentType, Tags: tags,
		SizeBytes: doc.SizeBytes, Version: 1, ExpiresAt: doc.ExpiresAt, CreatedAt: doc.CreatedAt, UpdatedAt: doc.UpdatedAt,
	}
	return q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		if err := insertNew(ctx, db, op, m); err != nil {
			return err
		}
		vm := versionModelOf(doc.OrgID, doc.ID, v)
		if _, err := db.NewInsert().Model(vm).Exec(ctx); err != nil {
			return wrap(op, err)
		}
		return insertTags(ctx, db, doc.OrgID, doc.ID, doc.Tags, op)
	})
}

func versionModelOf(orgID, id string, v *documents.Version) *documentVersionModel {
	return &documentVersionModel{
		OrgID: orgID, DocumentID: id, Version: v.Version, ContentType: v.ContentType,
		SizeBytes: v.SizeBytes, SHA256: v.SHA256, CreatedAt: v.CreatedAt,
	}
}

func insertTags(ctx context.Context, db bun.IDB, orgID, id string, tags []string, op string) error {
	if len(tags) == 0 {
		return nil
	}
	ms := make([]documentTagModel, 0, len(tags))
	seen := map[string]bool{}
	for _, tag := range tags {
		if !seen[tag] {
			seen[tag] = true
			ms = append(ms, documentTagModel{OrgID: orgID, DocumentID: id, Tag: tag})
		}
	}
	_, err := db.NewInsert().Model(&ms).Exec(ctx)
	return wrap(op, err)
}

// AddDocumentVersion numbers the new version by incrementing the document's version in one
// UPDATE: on PostgreSQL the row lock serializes concurrent uploads, on SQLite the single
// writer does.
func (q *querier) AddDocumentVersion(ctx context.Context, orgID, id string, v *documents.Version) (*documents.Document, error) {
	const op = "add document version"
	v.CreatedAt = orNow(v.CreatedAt, q.now())
	var doc *documents.Document
	err := q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		var m documentModel
		err := db.NewUpdate().Model(&m).
			Set("version = version + 1").
			Set("content_type = ?", v.ContentType).
			Set("size_bytes = ?", v.SizeBytes).
			Set("updated_at = ?", v.CreatedAt).
			Where("org_id = ? AND id = ?", orgID, id).
			Returning("*").
			Scan(ctx)
		if err != nil {
			return wrap(op, err)
		}
		v.Version = m.Version
		if _, err := db.NewInsert().Model(versionModelOf(orgID, id, v)).Exec(ctx); err != nil {
			return wrap(op, err)
		}
		doc, err = m.toDocument()
		return wrap(op, err)
	})
	if err != nil {
		return nil, err
	}
	return doc, nil
}

func (q *querier) getDocument(ctx context.Context, db bun.IDB, orgID, id, op string) (*documents.Document, error) {
	var m documentModel
	if err := db.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx); err != nil {
		return nil, wrap(op, err)
	}
	doc, err := m.toDocument()
	return doc, wrap(op, err)
}

func (q *querier) documentVersions(ctx context.Context, db bun.IDB, orgID, id, op string) ([]documents.Version, error) {
	var ms []documentVersionModel
	err := db.NewSelect().Model(&ms).
		Where("org_id = ? AND document_id = ?", orgID, id).
		Order("version").
		Scan(ctx)
	if err != nil {
		return nil, wrap(op, err)
	}
	out := make([]documents.Version, len(ms))
	for i := range ms {
		out[i] = ms[i].toVersion()
	}
	return out, nil
}

// GetDocument returns a document with its versions, oldest first.
func (q *querier) GetDocument(ctx context.Context, orgID, id string) (*documents.Document, error) {
	const op = "get document"
	doc, err := q.getDocument(ctx, q.r, orgID, id, op)
	if err != nil {
		return nil, err
	}
	if doc.Versions, err = q.documentVersions(ctx, q.r, orgID, id, op); err != nil {
		return nil, err
	}
	return doc, nil
}

// ListDocuments pages an organization's documents newest first.
func (q *querier) ListDocuments(ctx context.Context, orgID string, f documents.ListFilter) (svctype.Page[documents.Document], error) {
	sel := q.r.NewSelect().Model((*documentModel)(nil)).Where("d.org_id = ?", orgID)
	if f.Tag != "" {
		sel = sel.Where("EXISTS (SELECT 1 FROM document_tags AS dt WHERE dt.org_id = d.org_id AND dt.document_id = d.id AND dt.tag = ?)", f.Tag)
	}
	return pageByCreated(ctx, "list documents", sel, true, f.ListOptions,
		func(m *documentModel) (time.Time, string) { return m.CreatedAt, m.ID }, valueOf((*documentModel).toDocument))
}

// GetDocumentVersion returns a document and one version (the latest for version 0).
func (q *querier) GetDocumentVersion(ctx context.Context, orgID, id string, version int) (*documents.Document, *documents.Version, error) {
	const op = "get document version"
	doc, err := q.getDocument(ctx, q.r, orgID, id, op)
	if err != nil {
		return nil, nil, err
	}
	if version == 0 {
		version = doc.Version
	}
	var m documentVersionModel
	err = q.r.NewSelect().Model(&m).
		Where("org_id = ? AND document_id = ? AND version = ?", orgID, id, version).
		Scan(ctx)
	if err != nil {
		return nil, nil, wrap(op, err)
	}
	v := m.toVersion()
	return doc, &v, nil
}

// DeleteDocument removes a document with its versions, tags and database blobs. The
// deletes are explicit rather than left to ON DELETE CASCADE, so that they do not depend on
// SQLite's foreign_keys pragma.
func (q *querier) DeleteDocument(ctx context.Context, orgID, id string) (*documents.Document, error) {
	const op = "delete document"
	var doc *documents.Document
	err := q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		var err error
		if doc, err = q.getDocument(ctx, db, orgID, id, op); err != nil {
			return err
		}
		if doc.Versions, err = q.documentVersions(ctx, db, orgID, id, op); err != nil {
			return err
		}
		for _, model := range []any{(*documentBlobModel)(nil), (*documentVersionModel)(nil), (*documentTagModel)(nil)} {
			_, err := db.NewDelete().Model(model).Where("org_id = ? AND document_id = ?", orgID, id).Exec(ctx)
			if err != nil {
				return wrap(op, err)
			}
		}
		res, err := db.NewDelete().Model((*documentModel)(nil)).Where("org_id = ? AND id = ?", orgID, id).Exec(ctx)
		if err != nil {
			return wrap(op, err)
		}
		return checkAffected(op, res, notFound) // none: deleted concurrently
	})
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// Database blobs.

// PutDocumentBlob inserts or replaces a version's content; the version row must exist (a
// foreign key), else ErrNotFound.
func (q *querier) PutDocumentBlob(ctx context.Context, key documents.BlobKey, data []byte) error {
	if data == nil {
		data = []byte{}
	}
	query := putBlobSQLite
	if q.dialect == dialectPostgres {
		query = putBlobPostgres
	}
	_, err := q.execParams(ctx, query, key.OrgID, key.DocumentID, key.Version, data)
	return wrap("put document blob", err)
}

// PutDocumentBlob's statement, the content a parameter of the driver's: bun writes a
// []byte argument into the statement's text as a hex literal, twice the content's length
// for the database to parse again (a 25 MiB upload: a 50 MiB statement; under -race the
// test uploading two took 30 s of CPU each).
const (
	putBlobSQLite = `INSERT INTO document_blobs (org_id, document_id, version, data) VALUES (?, ?, ?, ?)
	ON CONFLICT (org_id, document_id, version) DO UPDATE SET data = EXCLUDED.data`
	putBlobPostgres = `INSERT INTO document_blobs (org_id, document_id, version, data) VALUES ($1, $2, $3, $4)
	ON CONFLICT (org_id, document_id, version) DO UPDATE SET data = EXCLUDED.data`
)

// execParams runs query with args bound by the driver (not formatted into the text, as
// bun's Exec does), in q's transaction when q is one.
func (q *querier) execParams(ctx context.Context, query string, args ...any) (sql.Result, error) {
	switch db := q.w.(type) {
	case bun.Tx:
		return db.Tx.ExecContext(ctx, query, args...)
	case *bun.DB:
		return db.DB.ExecContext(ctx, query, args...)
	}
	return nil, fmt.Errorf("store: %T cannot bind parameters", q.w)
}

func (q *querier) GetDocumentBlob(ctx context.Context, key documents.BlobKey) ([]byte, error) {
	var data []byte
	err := q.r.NewSelect().Model((*documentBlobModel)(nil)).Column("data").
		Where("org_id = ? AND document_id = ? AND version = ?", key.OrgID, key.DocumentID, key.Version).
		Scan(ctx, &data)
	if err != nil {
		return nil, wrap("get document blob", err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

func (q *querier) DeleteDocumentBlob(ctx context.Context, key documents.BlobKey) error {
	const op = "delete document blob"
	res, err := q.w.NewDelete().Model((*documentBlobModel)(nil)).
		Where("org_id = ? AND document_id = ? AND version = ?", key.OrgID, key.DocumentID, key.Version).
		Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

// Event subjects.

func (q *querier) PutEventSubjects(ctx context.Context, orgID string, subjects []documents.EventSubject) error {
	const op = "put event subjects"
	if len(subjects) == 0 {
		return nil
	}
	ms := make([]eventSubjectModel, len(subjects))
	for i, s := range subjects {
		tags, err := marshalTags(s.Tags)
		if err != nil {
			return fmt.Errorf("store: %s: %w", op, err)
		}
		ms[i] = eventSubjectModel{OrgID: orgID, DeliveryID: s.DeliveryID, DocumentID: s.DocumentID, ContentType: s.ContentType, Tags: tags}
	}
	_, err := q.w.NewInsert().Model(&ms).Exec(ctx)
	return wrap(op, err)
}

func (q *querier) GetEventSubject(ctx context.Context, orgID, deliveryID string) (*documents.EventSubject, error) {
	const op = "get event subject"
	var m eventSubjectModel
	if err := q.r.NewSelect().Model(&m).Where("org_id = ? AND delivery_id = ?", orgID, deliveryID).Scan(ctx); err != nil {
		return nil, wrap(op, err)
	}
	s := &documents.EventSubject{DeliveryID: m.DeliveryID, DocumentID: m.DocumentID, ContentType: m.ContentType, Tags: []string{}}
	if len(m.Tags) > 0 {
		if err := json.Unmarshal(m.Tags, &s.Tags); err != nil {
			return nil, wrap(op, err)
		}
	}
	return s, nil
}
