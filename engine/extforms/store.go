package extforms

import (
	"context"
	"encoding/json"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Store is what external forms read outside a transaction: the forms, their submissions,
// and what a form being checked triggers. engine/storage documents each method's contract.
type Store interface {
	Triggers
	GetExternalForm(ctx context.Context, orgID, id string) (*svctype.ExternalForm, error)
	ListExternalForms(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.ExternalForm], error)
	ListFormSubmissions(ctx context.Context, orgID, formID string, opts svctype.ListOptions) (svctype.Page[svctype.FormSubmission], error)
}

// Tx is what external forms read and write in a transaction (a change's, a submission's):
// the form, held locked, its submissions, the workflow or studio process a form triggers,
// and who submitted in the run it starts. The transaction itself (storage.Tx) goes to the
// core, which starts that run and emits the events in it.
type Tx interface {
	CreateExternalForm(ctx context.Context, f *svctype.ExternalForm) error
	LockExternalForm(ctx context.Context, orgID, id string, exclusive bool) (*svctype.ExternalForm, error)
	ReplaceExternalForm(ctx context.Context, f *svctype.ExternalForm) error
	DeleteExternalForm(ctx context.Context, orgID, id string) error
	CreateFormSubmission(ctx context.Context, s *svctype.FormSubmission) error
	Triggers
	PutContext(ctx context.Context, orgID, runID, key string, value json.RawMessage) error
}

// Triggers reads what a form starts: a workflow, or the one a process of the studio
// published (trigger_process_id).
type Triggers interface {
	GetWorkflow(ctx context.Context, orgID, id string) (*svctype.Workflow, error)
	GetProcess(ctx context.Context, orgID, id string) (*svctype.Process, error)
}
