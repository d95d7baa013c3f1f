package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Webhook registrations (storage.Webhooks): one row per registration, its secret
// sealed. Every query names the org. The registration and the health columns are written
// by different statements, so a PATCH and a delivery's outcome never undo each other.

type webhookModel struct {
	bun.BaseModel `bun:"table:webhooks,alias:wh"`

	OrgID               string     `bun:"org_id,pk"`
	ID                  string     `bun:"id,pk"`
	Event               string     `bun:"event"`
	EventAlias          string     `bun:"event_alias"`
	URL                 string     `bun:"url"`
	Filter              string     `bun:"filter"`
	AutoPayload         string     `bun:"auto_payload"`
	SecretSealed        []byte     `bun:"secret_sealed"`
	MasterKeyID         string     `bun:"master_key_id"`
	Disabled            bool       `bun:"disabled"`
	DisabledAt          *time.Time `bun:"disabled_at"`
	ConsecutiveFailures int        `bun:"consecutive_failures"`
	CreatedAt           time.Time  `bun:"created_at"`
	UpdatedAt           time.Time  `bun:"updated_at"`
}

func webhookToModel(w *svctype.Webhook) (*webhookModel, error) {
	m := &webhookModel{
		OrgID: w.OrgID, ID: w.ID, Event: w.Event, EventAlias: w.EventAlias, URL: w.URL,
		MasterKeyID: w.MasterKeyID, Disabled: w.Disabled, DisabledAt: dbTimePtr(w.DisabledAt),
		ConsecutiveFailures: w.ConsecutiveFailures, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt,
	}
	if w.HasSecret {
		m.SecretSealed = w.Sealed
	} else {
		m.MasterKeyID = ""
	}
	if w.Filter != nil {
		raw, err := json.Marshal(w.Filter)
		if err != nil {
			return nil, err
		}
		m.Filter = string(raw)
	}
	if len(w.AutoPayload) > 0 {
		raw, err := json.Marshal(w.AutoPayload)
		if err != nil {
			return nil, err
		}
		m.AutoPayload = string(raw)
	}
	return m, nil
}

func (m *webhookModel) toWebhook() (*svctype.Webhook, error) {
	w := &svctype.Webhook{
		ID: m.ID, OrgID: m.OrgID, Event: m.Event, EventAlias: m.EventAlias, URL: m.URL,
		HasSecret: len(m.SecretSealed) > 0, Sealed: m.SecretSealed, MasterKeyID: m.MasterKeyID,
		Disabled: m.Disabled, DisabledAt: utcPtr(m.DisabledAt), ConsecutiveFailures: m.ConsecutiveFailures,
		CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC(),
	}
	if m.Filter != "" {
		w.Filter = &svctype.WebhookFilter{}
		if err := json.Unmarshal([]byte(m.Filter), w.Filter); err != nil {
			return nil, fmt.Errorf("webhook %q: stored filter: %w", m.ID, err)
		}
	}
	if m.AutoPayload != "" {
		if err := json.Unmarshal([]byte(m.AutoPayload), &w.AutoPayload); err != nil {
			return nil, fmt.Errorf("webhook %q: stored auto_payload: %w", m.ID, err)
		}
	}
	return w, nil
}

// InsertWebhook inserts a registration; ErrConflict when the org has one of that id.
func (q *querier) InsertWebhook(ctx context.Context, w *svctype.Webhook) error {
	const op = "insert webhook"
	w.CreatedAt = orNow(w.CreatedAt, q.now())
	w.UpdatedAt = orNow(w.UpdatedAt, w.CreatedAt)
	w.DisabledAt = dbTimePtr(w.DisabledAt)
	m, err := webhookToModel(w)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return insertNew(ctx, q.w, op, m)
}

func (q *querier) GetWebhook(ctx context.Context, orgID, id string) (*svctype.Webhook, error) {
	var m webhookModel
	if err := q.r.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx); err != nil {
		return nil, wrap("get webhook", err)
	}
	return m.toWebhook()
}

// ListWebhooks pages by (created_at, id), oldest first.
func (q *querier) ListWebhooks(ctx context.Context, orgID string, f storage.WebhookListFilter) (svctype.Page[svctype.Webhook], error) {
	sel := q.r.NewSelect().Model((*webhookModel)(nil)).Where("org_id = ?", orgID)
	if f.Event != "" {
		sel = sel.Where("event = ?", f.Event)
	}
	if f.NotKeyID != "" {
		sel = sel.Where("master_key_id <> '' AND master_key_id <> ?", f.NotKeyID)
	}
	return pageByCreated(ctx, "list webhooks", sel, false, f.ListOptions,
		func(m *webhookModel) (time.Time, string) { return m.CreatedAt, m.ID },
		valueOf((*webhookModel).toWebhook))
}

// UpdateWebhook overwrites the registration columns and reads back created_at.
func (q *querier) UpdateWebhook(ctx context.Context, w *svctype.Webhook) error {
	const op = "update webhook"
	w.UpdatedAt = orNow(w.UpdatedAt, q.now())
	m, err := webhookToModel(w)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	var created time.Time
	err = q.w.NewUpdate().Model(m).
		Column("event", "event_alias", "url", "filter", "auto_payload", "secret_sealed", "master_key_id", "updated_at").
		Where("org_id = ? AND id = ?", w.OrgID, w.ID).
		Returning("created_at").
		Scan(ctx, &created)
	if err != nil {
		return wrap(op, err)
	}
	w.CreatedAt = created.UTC()
	return nil
}

func (q *querier) DeleteWebhook(ctx context.Context, orgID, id string) error {
	const op = "delete webhook"
	res, err := q.w.NewDelete().Model((*webhookModel)(nil)).
		Where("org_id = ? AND id = ?", orgID, id).
		Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

// DisableWebhook disables an enabled registration (nothing for a disabled or missing one).
func (q *querier) DisableWebhook(ctx context.Context, orgID, id string, at time.Time) error {
	const op = "disable webhook"
	_, err := q.w.NewUpdate().Model((*webhookModel)(nil)).
		Set("disabled = ?", true).
		Set("disabled_at = ?", dbTime(at)).
		Where("org_id = ? AND id = ? AND disabled = ?", orgID, id, false).
		Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return nil
}

// EnableWebhook enables a registration and resets its failures, writing only when there
// is something to change: a success on a healthy target (every delivery's) is one
// statement that changes no row.
func (q *querier) EnableWebhook(ctx context.Context, orgID, id string) (bool, error) {
	const op = "enable webhook"
	res, err := q.w.NewUpdate().Model((*webhookModel)(nil)).
		Set("disabled = ?", false).
		Set("disabled_at = NULL").
		Set("consecutive_failures = 0").
		Where("org_id = ? AND id = ? AND (disabled = ? OR consecutive_failures <> 0)", orgID, id, true).
		Exec(ctx)
	if err != nil {
		return false, wrap(op, err)
	}
	n, err := affectedRows(op, res)
	return n > 0, err
}

// RecordWebhookFailure counts a failure and disables at threshold, in one statement (the
// right-hand sides read the row as it was).
func (q *querier) RecordWebhookFailure(ctx context.Context, orgID, id string, threshold int, at time.Time) (*svctype.Webhook, error) {
	const op = "record webhook failure"
	var ms []webhookModel
	err := q.w.NewUpdate().Model(&ms).
		Set("consecutive_failures = consecutive_failures + 1").
		Set("disabled_at = CASE WHEN disabled = ? AND consecutive_failures + 1 >= ? THEN ? ELSE disabled_at END", false, threshold, dbTime(at)).
		Set("disabled = CASE WHEN consecutive_failures + 1 >= ? THEN ? ELSE disabled END", threshold, true).
		Where("org_id = ? AND id = ?", orgID, id).
		Returning("*").
		Scan(ctx)
	if err != nil {
		return nil, wrap(op, err)
	}
	if len(ms) == 0 {
		return nil, notFound(op)
	}
	return ms[0].toWebhook()
}

// ListWebhookSecretOrgs pages the organizations with webhook secrets, by id. It selects
// org_id only.
func (q *querier) ListWebhookSecretOrgs(ctx context.Context, f secrets.ListFilter) (svctype.Page[string], error) {
	return sealedOrgs[webhookModel](ctx, q, "list webhook secret organizations", "master_key_id <> ''", f)
}

// ResealWebhookSecret swaps the sealed secret if it is still old's.
func (q *querier) ResealWebhookSecret(ctx context.Context, old *svctype.Webhook, sealed []byte, keyID string) error {
	const op = "reseal webhook secret"
	res, err := q.w.NewUpdate().Model((*webhookModel)(nil)).
		Set("secret_sealed = ?", sealed).
		Set("master_key_id = ?", keyID).
		Where("org_id = ? AND id = ? AND secret_sealed = ?", old.OrgID, old.ID, old.Sealed).
		Exec(ctx)
	return resealOutcome(op, res, err, func() error { _, err := q.GetWebhook(ctx, old.OrgID, old.ID); return err })
}
