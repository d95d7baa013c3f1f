// Package documents owns an organization's versioned documents: their types, the storage
// they need (Store for metadata, BlobStore for content), the choice of where content lives,
// and extraction of CSV, JSON and XLSX content into rows for doc: references. Extraction is
// pure: functions over bytes that do no I/O. The package declares storage but implements
// only the content side of it (DBBlobs over a Store, DirBlobs over a directory); the bun
// implementation of Store is engine/store's. It knows nothing of HTTP or of the executor.
package documents

import (
	"context"
	"strconv"
	"time"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Limits.
const (
	// MaxSize is the largest content one version may have by default: 25 MiB. A deployment
	// sets its own (engine.Config.MaxDocumentBytes, svcflow --max-document-mib).
	MaxSize = 25 << 20
	// MaxRows is the most rows a doc: reference extracts from one version (spec section 8).
	MaxRows = 10_000
	// MaxMatchRows is the most rows the matchers (matcher, nway_match) take from a document
	// given as one of their legs: they read the document whole, by design, and keep nothing
	// of it in the run's context but their results. The document size limit bounds it as
	// well. It is twice the million records a leg of a large reconciliation holds, so that
	// a leg of "a million" with its duplicates and unrelated records (1,028,616 in the
	// generated 1,000,000 × 1,000,000 set) is not refused a few rows short.
	MaxMatchRows = 2_000_000
	// MinCells is the most cells (rows × columns, counting the empty cells a short row is
	// given) a table may always extract to; a document larger than MinCells bytes may have
	// one cell per byte. A stored cell costs at least a byte in CSV and about two in XLSX,
	// so only padding passes it: many short rows under a wide header, or cells far to the
	// right, which cost nothing to send and a record of every column each to extract (an
	// 8 KB CSV took 6.5 s and 627 MB, a 12 KB XLSX 15 s and 3.7 GB).
	MinCells = 1_000_000
	// MaxNameLength bounds a document's name, in bytes.
	MaxNameLength = 255
	// MaxTags bounds a document's tags; MaxTagLength bounds one tag, in bytes.
	MaxTags      = 50
	MaxTagLength = 100
	// MaxContentTypeLength bounds a declared content type, in bytes.
	MaxContentTypeLength = 255
)

// SizeText writes a size limit for people: "25 MiB", or its bytes when it is not a whole
// number of MiB.
func SizeText(n int) string {
	if n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// IDPrefix starts every document id: doc_<uuid>.
const IDPrefix = "doc_"

// Document is one document of an organization, with the metadata of its latest version.
type Document struct {
	ID    string `json:"id"`
	OrgID string `json:"-"`
	Name  string `json:"name"`
	// ContentType and SizeBytes are the latest version's.
	ContentType string   `json:"content_type"`
	Tags        []string `json:"tags"`
	SizeBytes   int64    `json:"size_bytes"`
	// Version is the latest version's number (1 for a new document).
	Version int `json:"version"`
	// Versions, oldest first, are filled by Store.GetDocument and DeleteDocument only.
	Versions  []Version  `json:"versions,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// Version is one immutable content of a document.
type Version struct {
	Version     int    `json:"version"`
	ContentType string `json:"content_type"`
	SizeBytes   int64  `json:"size_bytes"`
	// SHA256 is the hex SHA-256 of the content.
	SHA256    string    `json:"sha256"`
	CreatedAt time.Time `json:"created_at"`
}

// ListFilter narrows Store.ListDocuments.
type ListFilter struct {
	// Tag, when set, keeps the documents that carry it.
	Tag string
	svctype.ListOptions
}

// BlobKey names one version's content.
type BlobKey struct {
	OrgID      string
	DocumentID string
	Version    int
}

// EventSubject is the document an outbox event is about, as it was when the event was
// written. Document events carry only the spec's payload fields; a webhook registration's
// filter ({tags, content_type}) matches against this record, found by the event's
// delivery id, so that it still applies after the document is gone.
type EventSubject struct {
	DeliveryID  string   `json:"delivery_id"`
	DocumentID  string   `json:"document_id"`
	ContentType string   `json:"content_type"`
	Tags        []string `json:"tags"`
}

// Store is the documents part of the engine's store (engine.Querier embeds it), so that
// document metadata, database blobs, events and jobs commit in one transaction. Every method
// takes the organization (directly, in doc, or in key) and puts it in every query: another
// organization's document is svctype.ErrNotFound.
type Store interface {
	// CreateDocument inserts doc as version 1: doc.Versions must hold exactly that version,
	// whose ContentType and SizeBytes doc repeats. ErrConflict when the id is taken.
	CreateDocument(ctx context.Context, doc *Document) error
	// AddDocumentVersion makes v the next version of a document (v.Version is set) and
	// returns the document as it now is (without Versions). ErrNotFound.
	AddDocumentVersion(ctx context.Context, orgID, id string, v *Version) (*Document, error)
	// GetDocument returns a document with its versions, oldest first. ErrNotFound.
	GetDocument(ctx context.Context, orgID, id string) (*Document, error)
	// ListDocuments pages an organization's documents, newest first, without Versions; the
	// cursor is opaque.
	ListDocuments(ctx context.Context, orgID string, f ListFilter) (svctype.Page[Document], error)
	// GetDocumentVersion returns a document (without Versions) and one of its versions
	// (the latest for version 0). ErrNotFound for a missing document or version.
	GetDocumentVersion(ctx context.Context, orgID, id string, version int) (*Document, *Version, error)
	// DeleteDocument removes a document, its versions, its tags and its database blobs, and
	// returns what it removed (with Versions). ErrNotFound.
	DeleteDocument(ctx context.Context, orgID, id string) (*Document, error)

	BlobTable

	// Event subjects: PutEventSubjects records what document events are about;
	// GetEventSubject finds one by delivery id (ErrNotFound).
	PutEventSubjects(ctx context.Context, orgID string, subjects []EventSubject) error
	GetEventSubject(ctx context.Context, orgID, deliveryID string) (*EventSubject, error)
}

// BlobTable is the database blobs of a Store: content kept in the database, in the caller's
// transaction (DBBlobs). PutDocumentBlob needs the version row to exist (ErrNotFound
// otherwise) and replaces an existing blob; GetDocumentBlob and DeleteDocumentBlob:
// ErrNotFound.
type BlobTable interface {
	PutDocumentBlob(ctx context.Context, key BlobKey, data []byte) error
	GetDocumentBlob(ctx context.Context, key BlobKey) ([]byte, error)
	DeleteDocumentBlob(ctx context.Context, key BlobKey) error
}

// BlobMapper is a BlobStore that can map a blob's content into memory instead of reading
// it (DirBlobs): a reader that keeps a large document for a while (a matcher's CSV leg,
// CSVRecords.Hold) then holds none of it on the Go heap. unmap releases the mapping;
// nothing read from data may be used after it.
type BlobMapper interface {
	Map(ctx context.Context, key BlobKey) (data []byte, unmap func(), err error)
}

// BlobStore keeps document content, one blob per version. Get and Delete of a missing blob
// are svctype.ErrNotFound; Put replaces.
type BlobStore interface {
	Put(ctx context.Context, key BlobKey, data []byte) error
	Get(ctx context.Context, key BlobKey) ([]byte, error)
	Delete(ctx context.Context, key BlobKey) error
}
