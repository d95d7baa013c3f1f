package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// runIDLen is the length of a whole run id, run-<uuid>: a RunFilter.RunID this long is
// looked up by the primary key, a shorter one as a prefix.
const runIDLen = len("run-") + 36

// ListRuns pages runs newest first. Items carry no Definition: a listing does not need the
// snapshot, and it is the largest column; GetRun returns it. A search by key reads the
// search key index in its own order (org, value, created_at, run id) and joins each run by
// its primary key, so it costs the runs it returns, not the runs the organization has.
func (q *querier) ListRuns(ctx context.Context, orgID string, f storage.RunFilter) (svctype.Page[svctype.Run], error) {
	const op = "list runs"
	var page svctype.Page[svctype.Run]
	limit := pageLimit(f.ListOptions)
	sel, err := q.listRunsQuery(orgID, f, limit)
	if err != nil {
		return page, err
	}
	var ms []runModel
	if err := sel.Scan(ctx, &ms); err != nil {
		return page, wrap(op, err)
	}
	page, err = pageOf(ms, limit, func(m *runModel) string { return encodeTimeCursor(m.CreatedAt, m.ID) }, (*runModel).toRun)
	if err != nil {
		return page, wrap(op, err)
	}
	return page, nil
}

// listRunsQuery is ListRuns' query: limit+1 runs of f, newest first.
func (q *querier) listRunsQuery(orgID string, f storage.RunFilter, limit int) (*bun.SelectQuery, error) {
	sel := q.r.NewSelect().Model((*runModel)(nil)).ExcludeColumn("definition").Where("r.org_id = ?", orgID)
	created, id := "r.created_at", "r.id"
	if f.Key != "" {
		sel = sel.Join("JOIN run_search_keys AS k ON k.org_id = r.org_id AND k.run_id = r.id").
			Where("k.org_id = ?", orgID).Where("k.value = ?", f.Key)
		created, id = "k.created_at", "k.run_id"
	}
	if f.WorkflowID != "" {
		sel = sel.Where("r.workflow_id = ?", f.WorkflowID)
	}
	if len(f.Statuses) > 0 {
		statuses := make([]string, len(f.Statuses))
		for i, st := range f.Statuses {
			statuses[i] = string(st)
		}
		sel = sel.Where("r.status IN (?)", bun.In(statuses))
	}
	if !f.CreatedAfter.IsZero() {
		sel = sel.Where(created+" >= ?", dbTime(f.CreatedAfter))
	}
	if !f.CreatedBefore.IsZero() {
		sel = sel.Where(created+" < ?", dbTime(f.CreatedBefore))
	}
	switch {
	case len(f.RunID) == runIDLen:
		sel = sel.Where("r.id = ?", f.RunID)
	case f.RunID != "":
		// The caller checked the prefix is of [a-z0-9-]: nothing in it for LIKE to read.
		sel = sel.Where("r.id LIKE ?", f.RunID+"%")
	}
	if f.Cursor != "" {
		at, after, err := decodeTimeCursor(f.Cursor)
		if err != nil {
			return nil, err
		}
		sel = sel.Where("("+created+" < ? OR ("+created+" = ? AND "+id+" < ?))", at, at, after)
	}
	return sel.OrderExpr(created + " DESC, " + id + " DESC").Limit(int64(limit + 1)), nil
}

// WorkflowNames reads the current names of the workflows of ids, in one query by primary
// key (a page of runs names a few workflows).
func (q *querier) WorkflowNames(ctx context.Context, orgID string, ids []string) (map[string]string, error) {
	names := make(map[string]string, len(ids))
	if len(ids) == 0 {
		return names, nil
	}
	var rows []struct {
		ID   string `bun:"id"`
		Name string `bun:"name"`
	}
	err := q.r.NewSelect().Model((*workflowModel)(nil)).Column("id", "name").
		Where("org_id = ?", orgID).Where("id IN (?)", bun.In(ids)).Scan(ctx, &rows)
	if err != nil {
		return nil, wrap("workflow names", err)
	}
	for _, r := range rows {
		names[r.ID] = r.Name
	}
	return names, nil
}

// runSearchKeyModel is one row of the search key index.
type runSearchKeyModel struct {
	bun.BaseModel `bun:"table:run_search_keys,alias:k"`

	OrgID     string    `bun:"org_id,pk"`
	Value     string    `bun:"value,pk"`
	CreatedAt time.Time `bun:"created_at,pk"`
	RunID     string    `bun:"run_id,pk"`
}

// PutRunSearchKeys writes the run's index rows in one statement.
func (q *querier) PutRunSearchKeys(ctx context.Context, orgID, runID string, createdAt time.Time, values []string) error {
	if len(values) == 0 {
		return nil
	}
	ms := make([]runSearchKeyModel, 0, len(values))
	seen := make(map[string]bool, len(values))
	for _, v := range values {
		if !seen[v] {
			seen[v] = true
			ms = append(ms, runSearchKeyModel{OrgID: orgID, Value: v, CreatedAt: dbTime(createdAt), RunID: runID})
		}
	}
	if _, err := q.w.NewInsert().Model(&ms).On("CONFLICT DO NOTHING").Exec(ctx); err != nil {
		return wrap("put run search keys", err)
	}
	return nil
}
