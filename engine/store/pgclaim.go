package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/svcflow/svcflow/engine/svctype"
)

// A claim on PostgreSQL in one statement. ClaimJobs read its candidates (every
// organization's oldest due jobs), picked among them round robin in Go, then leased the
// picked ones: two statements, two round trips. pgClaim does all three in one prepared
// statement, so that a claim costs PostgreSQL one parse-free execution: the same loose
// index scan over the organizations with jobs, the same round robin (each organization's
// first job, in organization order starting after the one this Store served last, then
// each one's second, ...), and the lease taken FOR UPDATE SKIP LOCKED, the lease checked
// again on the locked row, so that claimers in many processes never take one job twice.

// pgClaim's parameters: $1 now, $2 how many jobs, $3 the organization served last, $4 the
// new lease's end.
const pgClaim = orgsWithJobs + `, cands AS (
	SELECT d.id, d.org_id, row_number() OVER (PARTITION BY d.org_id ORDER BY d.run_at, d.id) AS turn
	FROM orgs CROSS JOIN LATERAL (
		SELECT id, org_id, run_at FROM jobs
		WHERE org_id = orgs.org_id AND run_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
		ORDER BY run_at, id LIMIT $2) d
), picked AS (
	SELECT id, org_id FROM cands ORDER BY turn, org_id <= $3, org_id LIMIT $2
), locked AS (
	SELECT j.id, j.org_id FROM jobs j JOIN picked p ON j.org_id = p.org_id AND j.id = p.id
	WHERE j.run_at <= $1 AND (j.lease_until IS NULL OR j.lease_until < $1)
	FOR UPDATE OF j SKIP LOCKED
)
UPDATE jobs SET lease_token = gen_random_uuid()::text, lease_until = $4,
	attempts = jobs.attempts + 1, claims = jobs.claims + 1
FROM locked WHERE jobs.org_id = locked.org_id AND jobs.id = locked.id
RETURNING jobs.*`

// The claim's commit does not wait for its WAL flush. Claims go through a pool of their own
// (Store.claims, postgresClaimConns connections, the Store's connection string otherwise)
// whose connections start with synchronous_commit = off, a startup parameter: no statement
// is added to a claim. A lease is not data: a lease lost in a crash is a job claimed again,
// as a worker's crash after its step's call already makes it (at least once); any later
// durable commit of the server flushes the claim's WAL record with its own (WAL is written
// in order); and the unit's commit checks the lease token it was handed. What a run's
// steps write still commits durably, on the main pool (docs/decisions.md).

// openClaimPool opens the claims' pool on cfg (which it does not change).
func openClaimPool(cfg *pgx.ConnConfig) *sql.DB {
	c := cfg.Copy()
	c.RuntimeParams["synchronous_commit"] = "off"
	db := stdlib.OpenDB(*c)
	db.SetMaxOpenConns(postgresClaimConns)
	db.SetMaxIdleConns(postgresClaimConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db
}

// pgClaimJobs is ClaimJobs on PostgreSQL (pgClaim), through the claims' pool.
func (s *Store) pgClaimJobs(ctx context.Context, t time.Time, n int, lease time.Duration) ([]svctype.Job, error) {
	s.rr.Lock()
	lastOrg := s.rr.lastOrg
	s.rr.Unlock()
	rows, err := s.claims.QueryContext(ctx, pgClaim, pgx.QueryExecModeCacheStatement, t, n, lastOrg, dbTime(t.Add(lease)))
	if err != nil {
		return nil, fmt.Errorf("store: claim jobs: %w", err)
	}
	var claimed []jobModel
	if err := s.write.ScanRows(ctx, rows, &claimed); err != nil {
		return nil, fmt.Errorf("store: claim jobs: %w", err)
	}
	if len(claimed) == 0 {
		return nil, nil
	}
	s.rr.Lock()
	if s.rr.lastOrg == lastOrg {
		s.rr.lastOrg = lastTurn(claimed, lastOrg)
	}
	s.rr.Unlock()
	return claimedJobs(claimed), nil
}

// lastTurn is the organization of the job a round robin over claimed (starting after
// lastOrg) took last: of the organizations that got the most jobs, the last in turn.
func lastTurn(claimed []jobModel, lastOrg string) string {
	got := map[string]int{}
	for _, j := range claimed {
		got[j.OrgID]++
	}
	most := 0
	for _, k := range got {
		most = max(most, k)
	}
	last, lastAfter := "", false
	for org, k := range got {
		if k != most {
			continue
		}
		// In turn, the organizations after lastOrg come first, then the others; in org order
		// within each.
		after := org > lastOrg
		if last == "" || (after == lastAfter && org > last) || (!after && lastAfter) {
			last, lastAfter = org, after
		}
	}
	return last
}
