package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

var _ storage.RunLoader = (*Store)(nil)

// A run taken up on PostgreSQL in one statement. A worker that claims a run another process
// started (the runtime's Execute, or a worker that yielded it) read the run, then its
// context: two statements a claim. pgLoadRun reads both, the run's row beside each of its
// context values, as one prepared statement.

const pgLoadRun = `SELECT r.org_id, r.id, r.workflow_id, r.workflow_version, r.status, r.input,
	r.definition, r.cursor, r.reason, r.idempotency_key, r.created_at, r.updated_at, r.finished_at,
	c.key AS ctx_key, c.value AS ctx_value, c.size AS ctx_size, c.parts AS ctx_parts
FROM runs r LEFT JOIN run_context c ON c.org_id = r.org_id AND c.run_id = r.id
WHERE r.org_id = $1 AND r.id = $2`

// runContextRow is a run's row beside one of its context values (NULLs when it has none).
type runContextRow struct {
	runModel `bun:",extend"`

	CtxKey   *string         `bun:"ctx_key"`
	CtxValue json.RawMessage `bun:"ctx_value"`
	CtxSize  *int64          `bun:"ctx_size"`
	CtxParts *int            `bun:"ctx_parts"`
}

// LoadRun reads a run and its whole context (storage.RunLoader): in one statement on
// PostgreSQL, by GetRun and GetContext on SQLite, whose reads cost no round trip.
func (s *Store) LoadRun(ctx context.Context, orgID, runID string) (*svctype.Run, map[string]json.RawMessage, error) {
	if s.dialect != dialectPostgres {
		return storage.LoadRunApart(ctx, s, orgID, runID)
	}
	const op = "load run"
	rows, err := s.read.DB.QueryContext(ctx, pgLoadRun, pgx.QueryExecModeCacheStatement, orgID, runID)
	if err != nil {
		return nil, nil, wrap(op, err)
	}
	var got []runContextRow
	if err := s.read.ScanRows(ctx, rows, &got); err != nil {
		return nil, nil, wrap(op, err)
	}
	if len(got) == 0 {
		return nil, nil, notFound(op)
	}
	run, err := got[0].runModel.toRun()
	if err != nil {
		return nil, nil, wrap(op, err)
	}
	out := make(map[string]json.RawMessage, len(got))
	for _, r := range got {
		if r.CtxKey == nil {
			continue
		}
		value := r.CtxValue
		if r.CtxParts != nil && *r.CtxParts > 0 {
			m := &contextModel{OrgID: orgID, RunID: runID, Key: *r.CtxKey, Value: value, Parts: *r.CtxParts}
			if r.CtxSize != nil {
				m.Size = *r.CtxSize
			}
			if value, err = s.joinParts(ctx, m); err != nil {
				return nil, nil, fmt.Errorf("store: %s: %w", op, err)
			}
		}
		out[*r.CtxKey] = value
	}
	return &run, out, nil
}
