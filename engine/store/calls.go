package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Outbound call intents: a row per call a step is making, written before the call goes out
// and deleted with the call's result (svctype.CallIntent).

type callModel struct {
	bun.BaseModel `bun:"table:step_calls,alias:sc"`

	OrgID     string          `bun:"org_id,pk"`
	RunID     string          `bun:"run_id,pk"`
	CallKey   string          `bun:"call_key,pk"`
	Tries     int             `bun:"tries,notnull"`
	Claim     string          `bun:"claim,notnull"`
	Attempts  json.RawMessage `bun:"attempts,type:text"`
	UpdatedAt time.Time       `bun:"updated_at,notnull"`
}

// OpenCall records a try of call key of a run, made under claim (the job's lease token):
// the intent is inserted with Tries 1, or its Tries and Attempts grow by one when it is
// already open. It returns the intent as it was before this try, or nil when there was none,
// and the intent as it now stands.
func (q *querier) OpenCall(ctx context.Context, orgID, runID, key, claim string, at time.Time) (before, now *svctype.CallIntent, err error) {
	const op = "open call"
	m := &callModel{}
	err = q.w.NewSelect().Model(m).
		Where("org_id = ? AND run_id = ? AND call_key = ?", orgID, runID, key).
		Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		m = nil
	case err != nil:
		return nil, nil, wrap(op, err)
	}
	var cur svctype.CallIntent
	if m != nil {
		cur = svctype.CallIntent{RunID: runID, Key: key, Tries: m.Tries, Claim: m.Claim}
		if len(m.Attempts) > 0 {
			if err := json.Unmarshal(m.Attempts, &cur.Attempts); err != nil {
				return nil, nil, wrap(op, err)
			}
		}
		prev := cur
		prev.Attempts = append([]svctype.CallAttempt(nil), cur.Attempts...)
		before = &prev
	} else {
		cur = svctype.CallIntent{RunID: runID, Key: key}
	}
	cur.Tries++
	cur.Claim = claim
	cur.Attempts = append(cur.Attempts, svctype.CallAttempt{Try: cur.Tries, At: dbTime(at)})
	attempts, err := json.Marshal(cur.Attempts)
	if err != nil {
		return nil, nil, wrap(op, err)
	}
	row := &callModel{OrgID: orgID, RunID: runID, CallKey: key, Tries: cur.Tries, Claim: claim, Attempts: attempts, UpdatedAt: dbTime(at)}
	if m == nil {
		_, err = q.w.NewInsert().Model(row).Exec(ctx)
	} else {
		_, err = q.w.NewUpdate().Model(row).Column("tries", "claim", "attempts", "updated_at").
			Where("org_id = ? AND run_id = ? AND call_key = ?", orgID, runID, key).Exec(ctx)
	}
	if err != nil {
		return nil, nil, wrap(op, err)
	}
	return before, &cur, nil
}

// CloseCalls deletes every open call intent of a run.
func (q *querier) CloseCalls(ctx context.Context, orgID, runID string) error {
	_, err := q.w.NewDelete().Model((*callModel)(nil)).
		Where("org_id = ? AND run_id = ?", orgID, runID).Exec(ctx)
	return wrap("close calls", err)
}
