package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Org config (secrets.Store): one row per organization and key name holding the sealed
// value and the id of the master key it is sealed under. The store never sees plaintext.

type orgConfigModel struct {
	bun.BaseModel `bun:"table:org_config,alias:oc"`

	OrgID       string    `bun:"org_id,pk"`
	KeyName     string    `bun:"key_name,pk"`
	Sealed      []byte    `bun:"sealed"`
	MasterKeyID string    `bun:"master_key_id"`
	CreatedAt   time.Time `bun:"created_at"`
	UpdatedAt   time.Time `bun:"updated_at"`
}

func (m *orgConfigModel) toRecord() secrets.Record {
	return secrets.Record{
		OrgID: m.OrgID, Key: m.KeyName, Sealed: m.Sealed, KeyID: m.MasterKeyID,
		CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC(),
	}
}

// PutOrgConfig inserts the record, or replaces the sealed value of an existing one. The
// insert does nothing on a conflict (an error would abort the caller's PostgreSQL
// transaction) and the update follows in the same transaction, so "created" is exact.
func (q *querier) PutOrgConfig(ctx context.Context, r *secrets.Record) (bool, error) {
	const op = "put org config"
	r.UpdatedAt = orNow(r.UpdatedAt, q.now())
	r.CreatedAt = r.UpdatedAt
	m := &orgConfigModel{
		OrgID: r.OrgID, KeyName: r.Key, Sealed: r.Sealed, MasterKeyID: r.KeyID,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	created := false
	err := q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		res, err := db.NewInsert().Model(m).On("CONFLICT DO NOTHING").Exec(ctx)
		if err != nil {
			return wrap(op, err)
		}
		n, err := affectedRows(op, res)
		if err != nil || n > 0 {
			created = n > 0
			return err
		}
		var stored orgConfigModel
		err = db.NewUpdate().Model(&stored).
			Set("sealed = ?", r.Sealed).
			Set("master_key_id = ?", r.KeyID).
			Set("updated_at = ?", r.UpdatedAt).
			Where("org_id = ? AND key_name = ?", r.OrgID, r.Key).
			Returning("created_at").
			Scan(ctx)
		if err != nil {
			return wrap(op, err) // none: deleted between the two statements
		}
		r.CreatedAt = stored.CreatedAt.UTC()
		return nil
	})
	return created, err
}

// GetOrgConfig returns one record.
func (q *querier) GetOrgConfig(ctx context.Context, orgID, key string) (*secrets.Record, error) {
	var m orgConfigModel
	err := q.r.NewSelect().Model(&m).Where("org_id = ? AND key_name = ?", orgID, key).Scan(ctx)
	if err != nil {
		return nil, wrap("get org config", err)
	}
	r := m.toRecord()
	return &r, nil
}

// ListOrgConfig pages an organization's records by key name.
func (q *querier) ListOrgConfig(ctx context.Context, orgID string, f secrets.ListFilter) (svctype.Page[secrets.Record], error) {
	sel := q.r.NewSelect().Model((*orgConfigModel)(nil)).Where("org_id = ?", orgID)
	if f.NotKeyID != "" {
		sel = sel.Where("master_key_id <> ?", f.NotKeyID)
	}
	return pageByName(ctx, "list org config", sel, "key_name", f.ListOptions,
		func(m *orgConfigModel) string { return m.KeyName },
		func(m *orgConfigModel) (secrets.Record, error) { return m.toRecord(), nil })
}

// DeleteOrgConfig removes one record.
func (q *querier) DeleteOrgConfig(ctx context.Context, orgID, key string) error {
	const op = "delete org config"
	res, err := q.w.NewDelete().Model((*orgConfigModel)(nil)).
		Where("org_id = ? AND key_name = ?", orgID, key).
		Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

// ListOrgConfigOrgs pages the organizations that hold records, by id. It selects org_id
// only: rotation goes organization by organization, and every read of values names one.
func (q *querier) ListOrgConfigOrgs(ctx context.Context, f secrets.ListFilter) (svctype.Page[string], error) {
	return sealedOrgs[orgConfigModel](ctx, q, "list org config organizations", "", f)
}

// ResealOrgConfig swaps the sealed value if it is still old's.
func (q *querier) ResealOrgConfig(ctx context.Context, old *secrets.Record, sealed []byte, keyID string) error {
	const op = "reseal org config"
	res, err := q.w.NewUpdate().Model((*orgConfigModel)(nil)).
		Set("sealed = ?", sealed).
		Set("master_key_id = ?", keyID).
		Where("org_id = ? AND key_name = ? AND sealed = ?", old.OrgID, old.Key, old.Sealed).
		Exec(ctx)
	return resealOutcome(op, res, err, func() error { _, err := q.GetOrgConfig(ctx, old.OrgID, old.Key); return err })
}

// sealedOrgs pages the organizations with rows of model M that hold a sealed value (under
// another master key than f.NotKeyID, when set), by id, selecting org_id only: rotation
// goes organization by organization, and every read of a sealed value names one. where, when
// not empty, narrows the rows (a registration without a secret has nothing sealed).
func sealedOrgs[M any](ctx context.Context, q *querier, op, where string, f secrets.ListFilter) (svctype.Page[string], error) {
	sel := q.r.NewSelect().Model((*M)(nil)).ColumnExpr("DISTINCT org_id")
	if where != "" {
		sel = sel.Where(where)
	}
	if f.NotKeyID != "" {
		sel = sel.Where("master_key_id <> ?", f.NotKeyID)
	}
	org := func(org *string) string { return *org }
	return pageByName(ctx, op, sel, "org_id", f.ListOptions, org, func(o *string) (string, error) { return *o, nil })
}
