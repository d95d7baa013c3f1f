package engine

import "github.com/svcflow/svcflow/engine/docs"

// Documents (engine/docs).
type DocumentUpload = docs.DocumentUpload

const (
	EventDocumentUploaded       = docs.EventDocumentUploaded
	EventDocumentVersionCreated = docs.EventDocumentVersionCreated
	EventDocumentDeleted        = docs.EventDocumentDeleted
	EventDocumentExpired        = docs.EventDocumentExpired
	JobDocumentExpire           = docs.JobDocumentExpire
	DocPrefix                   = docs.DocPrefix
)
