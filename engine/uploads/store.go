package uploads

import (
	"context"
	"time"

	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Store is what the documents read outside a transaction: documents, their versions and
// (when content is in the database) their blobs. engine/documents documents each method's
// contract.
type Store interface {
	GetDocument(ctx context.Context, orgID, id string) (*documents.Document, error)
	ListDocuments(ctx context.Context, orgID string, f documents.ListFilter) (svctype.Page[documents.Document], error)
	GetDocumentVersion(ctx context.Context, orgID, id string, version int) (*documents.Document, *documents.Version, error)
	documents.BlobTable
}

// Tx is what the documents write in a transaction (an upload's, a new version's, a
// deletion's, an expiry's): the document and its content, the event subjects of its events,
// and its expiry job. The transaction itself (storage.Tx) goes to the core, which emits the
// events in it.
type Tx interface {
	CreateDocument(ctx context.Context, doc *documents.Document) error
	AddDocumentVersion(ctx context.Context, orgID, id string, v *documents.Version) (*documents.Document, error)
	GetDocument(ctx context.Context, orgID, id string) (*documents.Document, error)
	GetDocumentVersion(ctx context.Context, orgID, id string, version int) (*documents.Document, *documents.Version, error)
	DeleteDocument(ctx context.Context, orgID, id string) (*documents.Document, error)
	PutEventSubjects(ctx context.Context, orgID string, subjects []documents.EventSubject) error
	documents.BlobTable

	EnqueueJob(ctx context.Context, job *svctype.Job) error
	RenewJob(ctx context.Context, job *svctype.Job, lease time.Duration) error
	CompleteJob(ctx context.Context, job *svctype.Job) error
}
