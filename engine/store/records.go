package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Run context, step records, loop progress and the outbox: what a step commit writes.

func (q *querier) PutContext(ctx context.Context, orgID, runID, key string, value json.RawMessage) error {
	if st := q.fast(); st != nil {
		_, err := q.exec(ctx, st.putContext, orgID, runID, key, jsonArg(value), len(value))
		return wrap("put context", err)
	}
	if q.pgTx() {
		_, err := q.pgExec(ctx, pgPutContext, orgID, runID, key, jsonArg(value), len(value))
		return wrap("put context", err)
	}
	m := &contextModel{OrgID: orgID, RunID: runID, Key: key, Value: nonEmpty(value), Size: int64(len(value))}
	_, err := q.w.NewInsert().Model(m).
		On("CONFLICT (org_id, run_id, key) DO UPDATE").
		Set("value = EXCLUDED.value").
		Set("size = EXCLUDED.size").
		Set("parts = 0").
		Exec(ctx)
	return wrap("put context", err)
}

func (q *querier) GetContext(ctx context.Context, orgID, runID string, keys ...string) (map[string]json.RawMessage, error) {
	var ms []contextModel
	var err error
	if st := q.fastRead(); st != nil && len(keys) == 0 {
		err = q.queryInto(ctx, st.getContext, &ms, orgID, runID)
	} else {
		sel := q.r.NewSelect().Model(&ms).Where("org_id = ? AND run_id = ?", orgID, runID)
		if len(keys) > 0 {
			sel = sel.Where(`"key" IN (?)`, bun.List(keys))
		}
		err = sel.Scan(ctx)
	}
	if err != nil {
		return nil, wrap("get context", err)
	}
	out := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		if m.Parts > 0 {
			if m.Value, err = q.joinParts(ctx, &m); err != nil {
				return nil, err
			}
		}
		out[m.Key] = m.Value
	}
	return out, nil
}

func (q *querier) PutStep(ctx context.Context, orgID string, rec *svctype.StepRecord) error {
	const op = "put step"
	m, err := stepToModel(orgID, rec)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	if st := q.fast(); st != nil {
		_, err := q.exec(ctx, st.putStep, m.OrgID, m.RunID, m.Idx, m.Type, m.Status,
			jsonArg(m.InputSummary), jsonArg(m.Output), jsonArg(m.Effects), jsonArg(m.Decisions),
			m.Error, sqliteTimePtr(m.StartedAt), sqliteTimePtr(m.FinishedAt))
		return wrap(op, err)
	}
	if q.pgTx() {
		_, err := q.pgExec(ctx, pgPutStep, m.OrgID, m.RunID, m.Idx, m.Type, m.Status,
			jsonArg(m.InputSummary), jsonArg(m.Output), jsonArg(m.Effects), jsonArg(m.Decisions),
			m.Error, m.StartedAt, m.FinishedAt)
		return wrap(op, err)
	}
	_, err = q.w.NewInsert().Model(m).
		On("CONFLICT (org_id, run_id, idx) DO UPDATE").
		Set("type = EXCLUDED.type").
		Set("status = EXCLUDED.status").
		Set("input_summary = EXCLUDED.input_summary").
		Set("output = EXCLUDED.output").
		Set("effects = EXCLUDED.effects").
		Set("decisions = EXCLUDED.decisions").
		Set("error = EXCLUDED.error").
		Set("started_at = EXCLUDED.started_at").
		Set("finished_at = EXCLUDED.finished_at").
		Exec(ctx)
	return wrap(op, err)
}

func (q *querier) ListSteps(ctx context.Context, orgID, runID string) ([]svctype.StepRecord, error) {
	var ms []stepModel
	var err error
	if st := q.fastRead(); st != nil {
		err = q.queryInto(ctx, st.listSteps, &ms, orgID, runID)
	} else {
		err = q.r.NewSelect().Model(&ms).
			Where("org_id = ? AND run_id = ?", orgID, runID).
			Order("idx").
			Scan(ctx)
	}
	if err != nil {
		return nil, wrap("list steps", err)
	}
	out := make([]svctype.StepRecord, len(ms))
	for i := range ms {
		if out[i], err = ms[i].toStep(); err != nil {
			return nil, wrap("list steps", err)
		}
	}
	return out, nil
}

func (q *querier) StepStatuses(ctx context.Context, orgID, runID string) (map[int]svctype.StepStatus, error) {
	var rows []struct {
		Idx    int    `bun:"idx"`
		Status string `bun:"status"`
	}
	var err error
	if st := q.fastRead(); st != nil {
		err = q.queryInto(ctx, st.stepStatuses, &rows, orgID, runID)
	} else {
		err = q.r.NewSelect().Model((*stepModel)(nil)).Column("idx", "status").
			Where("org_id = ? AND run_id = ?", orgID, runID).
			Scan(ctx, &rows)
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, wrap("step statuses", err)
	}
	out := make(map[int]svctype.StepStatus, len(rows))
	for _, r := range rows {
		out[r.Idx] = svctype.StepStatus(r.Status)
	}
	return out, nil
}

func (q *querier) PutLoopItem(ctx context.Context, orgID, runID string, step, item int, output json.RawMessage) error {
	m := &loopItemModel{OrgID: orgID, RunID: runID, Step: step, Item: item, Output: nonEmpty(output)}
	_, err := q.w.NewInsert().Model(m).
		On("CONFLICT (org_id, run_id, step, item) DO UPDATE").
		Set("output = EXCLUDED.output").
		Exec(ctx)
	return wrap("put loop item", err)
}

// PutLoopItems puts consecutive elements' outputs, 500 rows a statement.
func (q *querier) PutLoopItems(ctx context.Context, orgID, runID string, step, first int, outputs []json.RawMessage) error {
	ms := make([]loopItemModel, len(outputs))
	for i, out := range outputs {
		ms[i] = loopItemModel{OrgID: orgID, RunID: runID, Step: step, Item: first + i, Output: nonEmpty(out)}
	}
	for chunk := range slices.Chunk(ms, 500) {
		_, err := q.w.NewInsert().Model(&chunk).
			On("CONFLICT (org_id, run_id, step, item) DO UPDATE").
			Set("output = EXCLUDED.output").
			Exec(ctx)
		if err != nil {
			return wrap("put loop items", err)
		}
	}
	return nil
}

// ListLoopItems returns the outputs of a loop's elements in element order.
func (q *querier) ListLoopItems(ctx context.Context, orgID, runID string, step int) ([]json.RawMessage, error) {
	var outputs []json.RawMessage
	err := q.r.NewSelect().Model((*loopItemModel)(nil)).Column("output").
		Where("org_id = ? AND run_id = ? AND step = ?", orgID, runID, step).
		Order("item").
		Scan(ctx, &outputs)
	if err != nil {
		return nil, wrap("list loop items", err)
	}
	return outputs, nil
}

// AppendEvents inserts events in one statement and sets their Seq (and a DeliveryID and a
// Timestamp where missing).
func (q *querier) AppendEvents(ctx context.Context, events []svctype.Event) error {
	if len(events) == 0 {
		return nil
	}
	t := q.now()
	ms := make([]eventModel, len(events))
	for i := range events {
		e := &events[i]
		if e.DeliveryID == "" {
			e.DeliveryID = newID()
		}
		e.Timestamp = orNow(e.Timestamp, t)
		ms[i] = eventModel{
			DeliveryID: e.DeliveryID, OrgID: e.OrgID, RunID: e.RunID, Event: e.Event,
			Timestamp: e.Timestamp, Payload: nonEmpty(e.Payload),
		}
	}
	if st := q.fast(); st != nil {
		// One prepared insert per event beats compiling a multi-row statement each time.
		for i, m := range ms {
			res, err := q.exec(ctx, st.appendEvent, m.DeliveryID, m.OrgID, m.RunID, m.Event,
				sqliteTime(m.Timestamp), jsonArg(m.Payload))
			if err != nil {
				return wrap("append events", err)
			}
			// seq is the rowid.
			if events[i].Seq, err = res.LastInsertId(); err != nil {
				return wrap("append events", err)
			}
		}
		return nil
	}
	var seqs []int64
	err := q.w.NewInsert().Model(&ms).Returning("seq").Scan(ctx, &seqs)
	if err != nil {
		return wrap("append events", err)
	}
	// One statement numbers its rows in VALUES order; RETURNING's order is not promised.
	slices.Sort(seqs)
	for i := range events {
		if i < len(seqs) {
			events[i].Seq = seqs[i]
		}
	}
	return nil
}

// ListRunEvents pages a run's events oldest first.
func (q *querier) ListRunEvents(ctx context.Context, orgID, runID string, opts svctype.ListOptions) (svctype.Page[svctype.Event], error) {
	const op = "list run events"
	var page svctype.Page[svctype.Event]
	limit := pageLimit(opts)
	sel := q.r.NewSelect().Model((*eventModel)(nil)).
		Where("org_id = ? AND run_id = ?", orgID, runID).
		Order("seq").
		Limit(int64(limit + 1))
	if opts.Cursor != "" {
		parts, err := decodeCursor(opts.Cursor, 1)
		if err != nil {
			return page, err
		}
		after, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil {
			return page, malformedCursor()
		}
		sel = sel.Where("seq > ?", after)
	}
	var ms []eventModel
	if err := sel.Scan(ctx, &ms); err != nil {
		return page, wrap(op, err)
	}
	page, err := pageOf(ms, limit, func(m *eventModel) string { return encodeCursor(strconv.FormatInt(m.Seq, 10)) }, func(m *eventModel) (svctype.Event, error) { return m.toEvent(), nil })
	if err != nil {
		return page, wrap(op, err)
	}
	return page, nil
}
