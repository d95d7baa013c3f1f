package core

import (
	"context"
	"regexp"
	"slices"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// The runs list: the filter's checks, and each run with its workflow's name.

// runIDPrefix is what a run id search may hold: a run id, or its beginning.
var runIDPrefix = regexp.MustCompile(`^[a-z0-9-]{1,40}$`)

// CheckRunFilter checks a run filter as a listing takes it: known statuses, a run id (or
// its beginning) and a key of at most MaxSearchKeyValue bytes.
func CheckRunFilter(f storage.RunFilter) error {
	for _, st := range f.Statuses {
		if !st.Valid() {
			return Invalid("/status", "unknown run status %q", st)
		}
	}
	if f.RunID != "" && !runIDPrefix.MatchString(f.RunID) {
		return Invalid("/run_id", "a run id or its beginning: at most 40 characters of a-z, 0-9 and -")
	}
	if len(f.Key) > MaxSearchKeyValue {
		return Invalid("/key", "at most %d bytes", MaxSearchKeyValue)
	}
	if !f.CreatedAfter.IsZero() && !f.CreatedBefore.IsZero() && !f.CreatedAfter.Before(f.CreatedBefore) {
		return Invalid("/created_before", "must be later than created_after")
	}
	return nil
}

// ListedRun is a run as the runs list shows it: with the current name of its workflow (""
// once the workflow is deleted).
type ListedRun struct {
	svctype.Run
	WorkflowName string
}

// ListRunsNamed is ListRuns with each run's workflow name, read in one more query for the
// page's workflows.
func (e *Core) ListRunsNamed(ctx context.Context, orgID string, f storage.RunFilter) (svctype.Page[ListedRun], error) {
	page, err := e.ListRuns(ctx, orgID, f)
	if err != nil {
		return svctype.Page[ListedRun]{}, err
	}
	var ids []string
	for _, r := range page.Items {
		if !slices.Contains(ids, r.WorkflowID) {
			ids = append(ids, r.WorkflowID)
		}
	}
	names, err := e.store.WorkflowNames(ctx, orgID, ids)
	if err != nil {
		return svctype.Page[ListedRun]{}, err
	}
	out := svctype.Page[ListedRun]{Items: make([]ListedRun, len(page.Items)), NextCursor: page.NextCursor}
	for i, r := range page.Items {
		out.Items[i] = ListedRun{Run: r, WorkflowName: names[r.WorkflowID]}
	}
	return out, nil
}
