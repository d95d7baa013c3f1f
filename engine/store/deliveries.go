package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Webhook deliveries, their attempts, and the circuit of each target address.

type deliveryModel struct {
	bun.BaseModel `bun:"table:deliveries,alias:dl"`

	OrgID          string     `bun:"org_id,pk"`
	ID             string     `bun:"id,pk"`
	Event          string     `bun:"event,notnull"`
	RunID          string     `bun:"run_id,notnull"`
	WebhookID      string     `bun:"webhook_id,notnull"`
	Target         string     `bun:"target,notnull"`
	Signed         bool       `bun:"signed,notnull"`
	Body           []byte     `bun:"body,notnull"`
	Status         string     `bun:"status,notnull"`
	Attempts       int        `bun:"attempts,notnull"`
	Recorded       int        `bun:"recorded,notnull"`
	NextAttemptAt  *time.Time `bun:"next_attempt_at"`
	LastStatusCode int        `bun:"last_status_code,notnull"`
	LastError      string     `bun:"last_error,notnull"`
	CreatedAt      time.Time  `bun:"created_at,notnull"`
	UpdatedAt      time.Time  `bun:"updated_at,notnull"`
	CompletedAt    *time.Time `bun:"completed_at"`
}

func deliveryToModel(d *svctype.Delivery) deliveryModel {
	return deliveryModel{
		OrgID: d.OrgID, ID: d.ID, Event: d.Event, RunID: d.RunID, WebhookID: d.WebhookID, Target: d.Target,
		Signed: d.Signed, Body: d.Body, Status: string(d.Status), Attempts: d.Attempts, Recorded: d.Recorded,
		NextAttemptAt: dbTimePtr(d.NextAttemptAt), LastStatusCode: d.LastStatusCode, LastError: d.LastError,
		CreatedAt: dbTime(d.CreatedAt), UpdatedAt: dbTime(d.UpdatedAt), CompletedAt: dbTimePtr(d.CompletedAt),
	}
}

func (m *deliveryModel) toDelivery() (svctype.Delivery, error) {
	return svctype.Delivery{
		OrgID: m.OrgID, ID: m.ID, Event: m.Event, RunID: m.RunID, WebhookID: m.WebhookID, Target: m.Target,
		Signed: m.Signed, Body: m.Body, Status: svctype.DeliveryStatus(m.Status), Attempts: m.Attempts, Recorded: m.Recorded,
		Skipped: max(m.Recorded-m.Attempts, 0), NextAttemptAt: utcPtr(m.NextAttemptAt), LastStatusCode: m.LastStatusCode, LastError: m.LastError,
		CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC(), CompletedAt: utcPtr(m.CompletedAt),
	}, nil
}

type deliveryAttemptModel struct {
	bun.BaseModel `bun:"table:delivery_attempts,alias:da"`

	OrgID         string     `bun:"org_id,pk"`
	DeliveryID    string     `bun:"delivery_id,pk"`
	N             int        `bun:"n,pk"`
	At            time.Time  `bun:"at,notnull"`
	Outcome       string     `bun:"outcome,notnull"`
	StatusCode    int        `bun:"status_code,notnull"`
	LatencyMS     int64      `bun:"latency_ms,notnull"`
	Error         string     `bun:"error,notnull"`
	NextAttemptAt *time.Time `bun:"next_attempt_at"`
}

type circuitModel struct {
	bun.BaseModel `bun:"table:webhook_circuits,alias:wc"`

	OrgID     string          `bun:"org_id,pk"`
	URLHash   string          `bun:"url_hash,pk"`
	State     json.RawMessage `bun:"state,type:text,notnull"`
	UpdatedAt time.Time       `bun:"updated_at,notnull"`
}

// CreateDeliveries inserts deliveries whose IDs the caller set.
func (q *querier) CreateDeliveries(ctx context.Context, ds []svctype.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	ms := make([]deliveryModel, len(ds))
	for i := range ds {
		ms[i] = deliveryToModel(&ds[i])
	}
	_, err := q.w.NewInsert().Model(&ms).Exec(ctx)
	return wrap("create deliveries", err)
}

func (q *querier) GetDelivery(ctx context.Context, orgID, id string) (*svctype.Delivery, error) {
	var m deliveryModel
	if err := q.r.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx); err != nil {
		return nil, wrap("get delivery", err)
	}
	d, err := m.toDelivery()
	return &d, err
}

// UpdateDelivery writes the status, attempts, next attempt, last answer and times of d.
func (q *querier) UpdateDelivery(ctx context.Context, d *svctype.Delivery) error {
	const op = "update delivery"
	m := deliveryToModel(d)
	res, err := q.w.NewUpdate().Model(&m).
		Column("status", "attempts", "recorded", "next_attempt_at", "last_status_code", "last_error", "updated_at", "completed_at").
		Where("org_id = ? AND id = ?", d.OrgID, d.ID).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

// ListDeliveries pages an organization's deliveries newest first, those of one registered
// webhook when webhookID is set.
func (q *querier) ListDeliveries(ctx context.Context, orgID, webhookID string, opts svctype.ListOptions) (svctype.Page[svctype.Delivery], error) {
	sel := q.r.NewSelect().Model((*deliveryModel)(nil)).ExcludeColumn("body").Where("org_id = ?", orgID)
	if webhookID != "" {
		sel = sel.Where("webhook_id = ?", webhookID)
	}
	return pageByCreated(ctx, "list deliveries", sel, true, opts,
		func(m *deliveryModel) (time.Time, string) { return m.CreatedAt, m.ID }, (*deliveryModel).toDelivery)
}

func (q *querier) AddDeliveryAttempt(ctx context.Context, orgID string, a *svctype.DeliveryAttempt) error {
	m := deliveryAttemptModel{OrgID: orgID, DeliveryID: a.DeliveryID, N: a.N, At: dbTime(a.At), Outcome: a.Outcome,
		StatusCode: a.StatusCode, LatencyMS: a.LatencyMS, Error: a.Error, NextAttemptAt: dbTimePtr(a.NextAttemptAt)}
	_, err := q.w.NewInsert().Model(&m).Exec(ctx)
	return wrap("add delivery attempt", err)
}

// ListDeliveryAttempts returns a delivery's attempts in order.
func (q *querier) ListDeliveryAttempts(ctx context.Context, orgID, deliveryID string) ([]svctype.DeliveryAttempt, error) {
	var ms []deliveryAttemptModel
	err := q.r.NewSelect().Model(&ms).Where("org_id = ? AND delivery_id = ?", orgID, deliveryID).Order("n").Scan(ctx)
	if err != nil {
		return nil, wrap("list delivery attempts", err)
	}
	out := make([]svctype.DeliveryAttempt, len(ms))
	for i, m := range ms {
		out[i] = svctype.DeliveryAttempt{DeliveryID: m.DeliveryID, N: m.N, At: m.At.UTC(), Outcome: m.Outcome,
			StatusCode: m.StatusCode, LatencyMS: m.LatencyMS, Error: m.Error, NextAttemptAt: utcPtr(m.NextAttemptAt)}
	}
	return out, nil
}

// urlHash keys a circuit: the target's address is not stored (a catch-all URL may carry a
// token in its path).
func urlHash(url string) string {
	sum := sha256.Sum256([]byte(url))
	return hex.EncodeToString(sum[:])
}

// GetCircuit returns the stored state of the organization's circuit for url, nil when there
// is none.
func (q *querier) GetCircuit(ctx context.Context, orgID, url string) (json.RawMessage, error) {
	var m circuitModel
	err := q.w.NewSelect().Model(&m).Where("org_id = ? AND url_hash = ?", orgID, urlHash(url)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("get circuit", err)
	}
	return m.State, nil
}

// PutCircuit stores the state of the organization's circuit for url.
func (q *querier) PutCircuit(ctx context.Context, orgID, url string, state json.RawMessage) error {
	m := circuitModel{OrgID: orgID, URLHash: urlHash(url), State: state, UpdatedAt: dbTime(q.now())}
	_, err := q.w.NewInsert().Model(&m).
		On("CONFLICT (org_id, url_hash) DO UPDATE").
		Set("state = EXCLUDED.state, updated_at = EXCLUDED.updated_at").
		Exec(ctx)
	return wrap("put circuit", err)
}
