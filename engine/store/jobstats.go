package store

import (
	"context"
	"fmt"
)

// JobStats counts the jobs of every organization by state, for an operator's metrics:
// queued (due, not leased), scheduled (not yet due), leased (a worker holds it), and
// lease_expired (held by a worker that stopped renewing it: it is claimable again, and a
// number that stays above zero means workers are dying or stalled). It is the one read of
// the jobs table across organizations besides the claim, and says nothing of any one
// organization.
func (s *Store) JobStats(ctx context.Context) (map[string]int, error) {
	t := s.now()
	var row struct {
		Queued       int `bun:"queued"`
		Scheduled    int `bun:"scheduled"`
		Leased       int `bun:"leased"`
		LeaseExpired int `bun:"lease_expired"`
	}
	err := s.read.NewSelect().Model((*jobModel)(nil)).
		ColumnExpr("COALESCE(SUM(CASE WHEN lease_token IS NULL AND run_at <= ? THEN 1 ELSE 0 END), 0) AS queued", t).
		ColumnExpr("COALESCE(SUM(CASE WHEN lease_token IS NULL AND run_at > ? THEN 1 ELSE 0 END), 0) AS scheduled", t).
		ColumnExpr("COALESCE(SUM(CASE WHEN lease_token IS NOT NULL AND lease_until >= ? THEN 1 ELSE 0 END), 0) AS leased", t).
		ColumnExpr("COALESCE(SUM(CASE WHEN lease_token IS NOT NULL AND lease_until < ? THEN 1 ELSE 0 END), 0) AS lease_expired", t).
		Scan(ctx, &row)
	if err != nil {
		return nil, fmt.Errorf("store: job stats: %w", err)
	}
	return map[string]int{"queued": row.Queued, "scheduled": row.Scheduled, "leased": row.Leased, "lease_expired": row.LeaseExpired}, nil
}
