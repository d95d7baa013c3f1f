package store

import (
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/jsonnum"
)

// The runtime models: how rows are read and written. They follow the latest schema, which
// the migrations of engine/store/migrations create in SQL of their own. JSON documents that
// the store never looks into are text on both dialects, so their bytes come back as written
// (PostgreSQL's jsonb would reorder keys); table_rows.data, which ReadRows and UpdateRows
// query, is jsonb on PostgreSQL.

type workflowModel struct {
	bun.BaseModel `bun:"table:workflows,alias:w"`

	OrgID      string          `bun:"org_id,pk"`
	ID         string          `bun:"id,pk"`
	Name       string          `bun:"name"`
	Version    int             `bun:"version"`
	Definition json.RawMessage `bun:"definition,type:text"`
	Warnings   json.RawMessage `bun:"warnings,type:text"`
	CreatedAt  time.Time       `bun:"created_at"`
	UpdatedAt  time.Time       `bun:"updated_at"`
}

type workflowVersionModel struct {
	bun.BaseModel `bun:"table:workflow_versions,alias:wv"`

	OrgID      string          `bun:"org_id,pk"`
	ID         string          `bun:"id,pk"`
	Version    int             `bun:"version,pk"`
	Name       string          `bun:"name"`
	Definition json.RawMessage `bun:"definition,type:text"`
	Warnings   json.RawMessage `bun:"warnings,type:text"`
	CreatedAt  time.Time       `bun:"created_at"`
}

type runModel struct {
	bun.BaseModel `bun:"table:runs,alias:r"`

	OrgID           string          `bun:"org_id,pk"`
	ID              string          `bun:"id,pk"`
	WorkflowID      string          `bun:"workflow_id"`
	WorkflowVersion int             `bun:"workflow_version"`
	Status          string          `bun:"status"`
	Input           json.RawMessage `bun:"input,type:text"`
	Definition      json.RawMessage `bun:"definition,type:text"`
	Cursor          json.RawMessage `bun:"cursor,type:text"`
	Reason          string          `bun:"reason"`
	IdempotencyKey  *string         `bun:"idempotency_key"`
	CreatedAt       time.Time       `bun:"created_at"`
	UpdatedAt       time.Time       `bun:"updated_at"`
	FinishedAt      *time.Time      `bun:"finished_at"`
}

type idempotencyModel struct {
	bun.BaseModel `bun:"table:idempotency_keys,alias:ik"`

	OrgID     string    `bun:"org_id,pk"`
	Key       string    `bun:"key,pk"`
	RunID     string    `bun:"run_id"`
	ExpiresAt time.Time `bun:"expires_at"`
	// Request is svctype.Run.IdempotencyRequest ('' for a key kept before schema
	// 20261128000230: it matches any request).
	Request string `bun:"request"`
}

type contextModel struct {
	bun.BaseModel `bun:"table:run_context,alias:rc"`

	OrgID string          `bun:"org_id,pk"`
	RunID string          `bun:"run_id,pk"`
	Key   string          `bun:"key,pk"`
	Value json.RawMessage `bun:"value,type:text"`
	// Size is the value's length in bytes (0: written before sizes were kept); Parts, when
	// not 0, says the value is an array in that many run_context_parts rows and Value is
	// their description (contextparts.go).
	Size  int64 `bun:"size"`
	Parts int   `bun:"parts"`
}

type stepModel struct {
	bun.BaseModel `bun:"table:run_steps,alias:rs"`

	OrgID        string          `bun:"org_id,pk"`
	RunID        string          `bun:"run_id,pk"`
	Idx          int             `bun:"idx,pk"`
	Type         string          `bun:"type"`
	Status       string          `bun:"status"`
	InputSummary json.RawMessage `bun:"input_summary,type:text"`
	Output       json.RawMessage `bun:"output,type:text"`
	Effects      json.RawMessage `bun:"effects,type:text"`
	Decisions    json.RawMessage `bun:"decisions,type:text"`
	Error        string          `bun:"error"`
	StartedAt    *time.Time      `bun:"started_at"`
	FinishedAt   *time.Time      `bun:"finished_at"`
}

type loopItemModel struct {
	bun.BaseModel `bun:"table:loop_items,alias:li"`

	OrgID  string          `bun:"org_id,pk"`
	RunID  string          `bun:"run_id,pk"`
	Step   int             `bun:"step,pk"`
	Item   int             `bun:"item,pk"`
	Output json.RawMessage `bun:"output,type:text"`
}

type eventModel struct {
	bun.BaseModel `bun:"table:events,alias:e"`

	Seq        int64           `bun:"seq,pk,autoincrement"`
	DeliveryID string          `bun:"delivery_id"`
	OrgID      string          `bun:"org_id"`
	RunID      string          `bun:"run_id"`
	Event      string          `bun:"event"`
	Timestamp  time.Time       `bun:"ts"`
	Payload    json.RawMessage `bun:"payload,type:text"`
}

type jobModel struct {
	bun.BaseModel `bun:"table:jobs,alias:j"`

	ID         int64           `bun:"id,pk,autoincrement"`
	OrgID      string          `bun:"org_id"`
	Kind       string          `bun:"kind"`
	RunID      string          `bun:"run_id"`
	WorkflowID string          `bun:"workflow_id"`
	RunAt      time.Time       `bun:"run_at"`
	Attempts   int             `bun:"attempts"`
	Claims     int64           `bun:"claims"`
	LeaseToken *string         `bun:"lease_token"`
	LeaseUntil *time.Time      `bun:"lease_until"`
	Payload    json.RawMessage `bun:"payload,type:text"`
}

type tableModel struct {
	bun.BaseModel `bun:"table:custom_tables,alias:ct"`

	OrgID     string          `bun:"org_id,pk"`
	Name      string          `bun:"name,pk"`
	Fields    json.RawMessage `bun:"fields,type:text"`
	Indexes   *string         `bun:"indexes,type:text"`
	CreatedAt time.Time       `bun:"created_at"`
}

type rowModel struct {
	bun.BaseModel `bun:"table:table_rows,alias:tr"`

	ID        string  `bun:"id,pk"`
	OrgID     string  `bun:"org_id"`
	TableName string  `bun:"table_name"`
	KeyHash   *string `bun:"key_hash"`
	// KeyColumns is the JSON array of the upsert's key columns, in order: what KeyHash is
	// recomputed from when a patch changes one of them. NULL with KeyHash (InsertRow).
	KeyColumns *string         `bun:"key_columns"`
	Data       json.RawMessage `bun:"data"`
	CreatedAt  time.Time       `bun:"created_at"`
	UpdatedAt  time.Time       `bun:"updated_at"`
}

// Conversions between engine types and models. Times leave the store in UTC.

func workflowToModel(w *svctype.Workflow) (*workflowModel, error) {
	warnings, err := marshalOptional(w.Warnings, len(w.Warnings) == 0)
	if err != nil {
		return nil, err
	}
	return &workflowModel{
		OrgID: w.OrgID, ID: w.ID, Name: w.Name, Version: w.Version,
		Definition: nonEmpty(w.Definition), Warnings: warnings,
		CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt,
	}, nil
}

func (m *workflowModel) toWorkflow() (*svctype.Workflow, error) {
	w := &svctype.Workflow{
		ID: m.ID, OrgID: m.OrgID, Name: m.Name, Version: m.Version,
		Definition: m.Definition, CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC(),
	}
	if len(m.Warnings) > 0 {
		if err := json.Unmarshal(m.Warnings, &w.Warnings); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (m *workflowVersionModel) toWorkflow() (*svctype.Workflow, error) {
	wm := workflowModel{
		OrgID: m.OrgID, ID: m.ID, Name: m.Name, Version: m.Version,
		Definition: m.Definition, Warnings: m.Warnings, CreatedAt: m.CreatedAt, UpdatedAt: m.CreatedAt,
	}
	return wm.toWorkflow()
}

func runToModel(r *svctype.Run) (*runModel, error) {
	cursor, err := json.Marshal(r.Cursor)
	if err != nil {
		return nil, err
	}
	m := &runModel{
		OrgID: r.OrgID, ID: r.ID, WorkflowID: r.WorkflowID, WorkflowVersion: r.WorkflowVersion,
		Status: string(r.Status), Input: nonEmpty(r.Input), Definition: nonEmpty(r.Definition),
		Cursor: cursor, Reason: r.Reason, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		FinishedAt: r.FinishedAt,
	}
	if r.IdempotencyKey != "" {
		m.IdempotencyKey = &r.IdempotencyKey
	}
	return m, nil
}

func (m *runModel) toRun() (svctype.Run, error) {
	r := svctype.Run{
		ID: m.ID, OrgID: m.OrgID, WorkflowID: m.WorkflowID, WorkflowVersion: m.WorkflowVersion,
		Status: svctype.RunStatus(m.Status), Input: m.Input, Definition: m.Definition,
		Reason: m.Reason, CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC(),
		FinishedAt: utcPtr(m.FinishedAt),
	}
	if m.IdempotencyKey != nil {
		r.IdempotencyKey = *m.IdempotencyKey
	}
	if len(m.Cursor) > 0 {
		if err := json.Unmarshal(m.Cursor, &r.Cursor); err != nil {
			return r, err
		}
	}
	return r, nil
}

func stepToModel(orgID string, s *svctype.StepRecord) (*stepModel, error) {
	effects, err := marshalOptional(s.Effects, len(s.Effects) == 0)
	if err != nil {
		return nil, err
	}
	decisions, err := marshalOptional(s.Decisions, len(s.Decisions) == 0)
	if err != nil {
		return nil, err
	}
	return &stepModel{
		OrgID: orgID, RunID: s.RunID, Idx: s.Index, Type: s.Type, Status: string(s.Status),
		InputSummary: nonEmpty(s.InputSummary), Output: nonEmpty(s.Output),
		Effects: effects, Decisions: decisions, Error: s.Error,
		StartedAt: dbTimePtr(s.StartedAt), FinishedAt: dbTimePtr(s.FinishedAt),
	}, nil
}

func (m *stepModel) toStep() (svctype.StepRecord, error) {
	s := svctype.StepRecord{
		RunID: m.RunID, Index: m.Idx, Type: m.Type, Status: svctype.StepStatus(m.Status),
		InputSummary: m.InputSummary, Output: m.Output, Error: m.Error,
		StartedAt: utcPtr(m.StartedAt), FinishedAt: utcPtr(m.FinishedAt),
	}
	if len(m.Effects) > 0 {
		if err := json.Unmarshal(m.Effects, &s.Effects); err != nil {
			return s, err
		}
	}
	if len(m.Decisions) > 0 {
		if err := json.Unmarshal(m.Decisions, &s.Decisions); err != nil {
			return s, err
		}
	}
	return s, nil
}

func (m *eventModel) toEvent() svctype.Event {
	return svctype.Event{
		Seq: m.Seq, DeliveryID: m.DeliveryID, OrgID: m.OrgID, RunID: m.RunID,
		Event: m.Event, Timestamp: m.Timestamp.UTC(), Payload: m.Payload,
	}
}

func jobToModel(j *svctype.Job) *jobModel {
	m := &jobModel{
		ID: j.ID, OrgID: j.OrgID, Kind: j.Kind, RunID: j.RunID, WorkflowID: j.WorkflowID,
		RunAt: j.RunAt, Attempts: j.Attempts, Claims: j.Claims, LeaseUntil: dbTimePtr(j.LeaseUntil),
		Payload: nonEmpty(j.Payload),
	}
	if j.LeaseToken != "" {
		m.LeaseToken = &j.LeaseToken
	}
	return m
}

func (m *jobModel) toJob() svctype.Job {
	j := svctype.Job{
		ID: m.ID, OrgID: m.OrgID, Kind: m.Kind, RunID: m.RunID, WorkflowID: m.WorkflowID,
		RunAt: m.RunAt.UTC(), Attempts: m.Attempts, Claims: m.Claims, LeaseUntil: utcPtr(m.LeaseUntil),
		Payload: m.Payload,
	}
	if m.LeaseToken != nil {
		j.LeaseToken = *m.LeaseToken
	}
	return j
}

func (m *tableModel) toTable() (*svctype.Table, error) {
	t := &svctype.Table{OrgID: m.OrgID, Name: m.Name, CreatedAt: m.CreatedAt.UTC(), Indexes: []svctype.TableIndex{}}
	if len(m.Fields) > 0 {
		if err := json.Unmarshal(m.Fields, &t.Fields); err != nil {
			return nil, err
		}
	}
	if m.Indexes != nil {
		defs, err := parseIndexes(*m.Indexes)
		if err != nil {
			return nil, err
		}
		if defs != nil {
			t.Indexes = defs
		}
	}
	return t, nil
}

func (m *rowModel) toRow() (svctype.Row, error) {
	r := svctype.Row{ID: m.ID, CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC()}
	// Numbers as json.Number: a row gives back the digits it was written with.
	if err := jsonnum.Unmarshal(m.Data, &r.Data); err != nil {
		return r, err
	}
	if r.Data == nil {
		r.Data = map[string]any{}
	}
	return r, nil
}

// nonEmpty stores an empty document as NULL: an empty string is not JSON.
func nonEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	return raw
}

func marshalOptional(v any, empty bool) (json.RawMessage, error) {
	if empty {
		return nil, nil
	}
	return json.Marshal(v)
}

// dbTime is t as the store keeps it: UTC, microseconds (PostgreSQL's precision, applied
// on SQLite too so that both return what they were given).
func dbTime(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

func dbTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := dbTime(*t)
	return &v
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}

func now() time.Time {
	return dbTime(time.Now())
}

// orNow returns t in store form, or the current time when t is zero.
func orNow(t, current time.Time) time.Time {
	if t.IsZero() {
		return current
	}
	return dbTime(t)
}
