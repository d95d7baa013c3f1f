package engine

import "github.com/svcflow/svcflow/engine/uploads"

// Documents (engine/docs).
type DocumentUpload = uploads.DocumentUpload

const (
	EventDocumentUploaded       = uploads.EventDocumentUploaded
	EventDocumentVersionCreated = uploads.EventDocumentVersionCreated
	EventDocumentDeleted        = uploads.EventDocumentDeleted
	EventDocumentExpired        = uploads.EventDocumentExpired
	JobDocumentExpire           = uploads.JobDocumentExpire
	DocPrefix                   = uploads.DocPrefix
)
