package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/svcflow/svcflow/engine/storage"
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

// The picked jobs are locked one by one through the primary key (a LATERAL subquery on
// the id alone, which no plan reads by another index). A prepared statement's generic plan
// is made once, with the sizes the tables had then; made while the queue was short (a
// worker's first claims) and used after a burst, a join of jobs with the picked ones was
// hashed over a sequential scan of every queued job, at every claim (20,000 queued: 7 ms
// a claim instead of 0.4), until the server planned it again after an ANALYZE of jobs
// (TestClaimLocksByTheKey). The lease's UPDATE still joins: with such a plan it may scan
// the queue once, until autovacuum analyzes jobs (docs/operations.md).

// pgClaimCTEs are the claim's CTEs (after WITH RECURSIVE): the organizations with jobs,
// each one's oldest due jobs, the round robin, the jobs locked. Its %[1]s is now, %[2]s how
// many jobs, %[3]s the organization served last, and %[4]s a further condition on the
// candidates ("" for ClaimJobs; a step commit's claim leaves out its own job). A step
// commit's claim (pgcommit.go) is these CTEs and pgClaimLease's, in its own statement.
var pgClaimCTEs = strings.TrimPrefix(orgsWithJobs, "WITH RECURSIVE ") + `, cands AS (
	SELECT d.id, d.org_id, row_number() OVER (PARTITION BY d.org_id ORDER BY d.run_at, d.id) AS turn
	FROM orgs CROSS JOIN LATERAL (
		SELECT id, org_id, run_at FROM jobs
		WHERE org_id = orgs.org_id AND run_at <= %[1]s AND (lease_until IS NULL OR lease_until < %[1]s)%[4]s
		ORDER BY run_at, id LIMIT %[2]s) d
), picked AS (
	SELECT id, org_id FROM cands ORDER BY turn, org_id <= %[3]s, org_id LIMIT %[2]s
), locked AS (
	SELECT l.id, l.org_id FROM picked p CROSS JOIN LATERAL (
		SELECT j.id, j.org_id FROM jobs j WHERE j.id = p.id
		AND j.run_at <= %[1]s AND (j.lease_until IS NULL OR j.lease_until < %[1]s)
		FOR UPDATE SKIP LOCKED) l
)`

// pgClaimLease leases the locked jobs until %s.
const pgClaimLease = `UPDATE jobs SET lease_token = gen_random_uuid()::text, lease_until = %s,
	attempts = jobs.attempts + 1, claims = jobs.claims + 1
FROM locked WHERE jobs.org_id = locked.org_id AND jobs.id = locked.id
RETURNING jobs.*`

// pgClaim's parameters: $1 now, $2 how many jobs, $3 the organization served last, $4 the
// new lease's end.
var pgClaim = "WITH RECURSIVE " + fmt.Sprintf(pgClaimCTEs, "$1", "$2", "$3", "") + "\n" + fmt.Sprintf(pgClaimLease, "$4")

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

// A claim in the statement of the commit that ends a job (storage.NextClaim): the worker's
// slot frees as the run ends, and the claim it would send next goes with that commit. The
// same CTEs as pgClaim, the same parameters but one more condition: the commit's own job,
// which the statement deletes, is no candidate (a row is never written twice by one
// statement's CTEs). It is read last, after the commit's job and run are locked, and takes
// nothing it would wait for (SKIP LOCKED), so it adds no lock wait to the commit's. What it
// leased is handed to the NextClaim once the transaction commits (txClaims).

// claimNext adds nc's claim to b, for a commit that deletes the job self, and returns the
// expression the final SELECT reads (the leased jobs as a JSON array, NULL for none), and
// the organization served last it started after; "" when nc wants nothing.
func (q *querier) claimNext(b *pgStatement, nc *storage.NextClaim, self *svctype.Job) (string, string) {
	if nc == nil || nc.Want == nil || q.rr == nil || q.claims == nil {
		return "", ""
	}
	n := nc.Want()
	if n <= 0 {
		return "", ""
	}
	q.rr.Lock()
	lastOrg := q.rr.lastOrg
	q.rr.Unlock()
	t := q.now()
	ph := func(arg any) string {
		b.args = append(b.args, arg)
		return "$" + strconv.Itoa(len(b.args))
	}
	now, limit, last := ph(t), ph(n), ph(lastOrg)
	notSelf := " AND NOT (org_id = " + ph(self.OrgID) + " AND id = " + ph(self.ID) + ")"
	b.ctes = append(b.ctes, fmt.Sprintf(pgClaimCTEs, now, limit, last, notSelf),
		"claimed AS ("+fmt.Sprintf(pgClaimLease, ph(dbTime(t.Add(nc.Lease))))+")")
	b.recursive = true
	return "(SELECT json_agg(claimed) FROM claimed)", lastOrg
}

// txClaims are the claims made by a transaction's step commits, until it commits.
type txClaims struct {
	made []madeClaim
}

// madeClaim is one step commit's claim: what it leased, from which organization on.
type madeClaim struct {
	nc      *storage.NextClaim
	lastOrg string
	jobs    []jobModel
}

// add records nc's claim, whose statement returned leased (a JSON array of jobs rows, or
// NULL for none).
func (c *txClaims) add(nc *storage.NextClaim, lastOrg string, leased sql.NullString) error {
	var jobs []jobModel
	if leased.Valid {
		var rows []claimedRow
		if err := json.Unmarshal([]byte(leased.String), &rows); err != nil {
			return fmt.Errorf("store: claim jobs: %w", err)
		}
		for _, r := range rows {
			jobs = append(jobs, r.model())
		}
	}
	c.made = slices.DeleteFunc(c.made, func(m madeClaim) bool { return m.nc == nc })
	c.made = append(c.made, madeClaim{nc: nc, lastOrg: lastOrg, jobs: jobs})
	return nil
}

// committed hands each claim's jobs to its NextClaim and moves the round robin on, as
// pgClaimJobs does: the transaction that leased them has committed.
func (c *txClaims) committed(rr *roundRobin) {
	for _, m := range c.made {
		m.nc.Tried = true
		m.nc.Jobs = nil
		if len(m.jobs) == 0 {
			continue
		}
		m.nc.Jobs = claimedJobs(m.jobs)
		rr.Lock()
		if rr.lastOrg == m.lastOrg {
			rr.lastOrg = lastTurn(m.jobs, m.lastOrg)
		}
		rr.Unlock()
	}
}

// claimedRow is a jobs row as json_agg writes it.
type claimedRow struct {
	ID         int64      `json:"id"`
	OrgID      string     `json:"org_id"`
	Kind       string     `json:"kind"`
	RunID      string     `json:"run_id"`
	WorkflowID string     `json:"workflow_id"`
	RunAt      time.Time  `json:"run_at"`
	Attempts   int        `json:"attempts"`
	Claims     int64      `json:"claims"`
	LeaseToken *string    `json:"lease_token"`
	LeaseUntil *time.Time `json:"lease_until"`
	Payload    *string    `json:"payload"`
}

func (r claimedRow) model() jobModel {
	m := jobModel{
		ID: r.ID, OrgID: r.OrgID, Kind: r.Kind, RunID: r.RunID, WorkflowID: r.WorkflowID,
		RunAt: r.RunAt, Attempts: r.Attempts, Claims: r.Claims, LeaseToken: r.LeaseToken, LeaseUntil: r.LeaseUntil,
	}
	if r.Payload != nil {
		m.Payload = json.RawMessage(*r.Payload)
	}
	return m
}
