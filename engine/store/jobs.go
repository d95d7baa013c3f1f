package store

import (
	"context"
	"database/sql"
	"strconv"
	"time"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Jobs. A job is held by whoever has its current lease_token; every change a holder makes
// names the token, and no row matching means the lease is lost.

// EnqueueJob inserts job and sets its ID. A job may be enqueued already leased (LeaseToken
// and LeaseUntil set) by a caller that will run it at once; RunAt defaults to now.
func (q *querier) EnqueueJob(ctx context.Context, job *svctype.Job) error {
	job.RunAt = orNow(job.RunAt, q.now())
	job.LeaseUntil = dbTimePtr(job.LeaseUntil)
	m := jobToModel(job)
	m.ID = 0
	if st := q.fast(); st != nil {
		var token any
		if m.LeaseToken != nil {
			token = *m.LeaseToken
		}
		res, err := q.exec(ctx, st.enqueueJob, m.OrgID, m.Kind, m.RunID, m.WorkflowID, sqliteTime(m.RunAt),
			m.Attempts, token, sqliteTimePtr(m.LeaseUntil), jsonArg(m.Payload))
		if err != nil {
			return wrap("enqueue job", err)
		}
		job.ID, err = res.LastInsertId() // id is the rowid
		return wrap("enqueue job", err)
	}
	if err := q.w.NewInsert().Model(m).Returning("id").Scan(ctx, &job.ID); err != nil {
		return wrap("enqueue job", err)
	}
	if q.dialect == dialectPostgres && m.LeaseToken == nil && !m.RunAt.After(q.now()) {
		return q.notifyJobs(ctx, "enqueue job", job.ID)
	}
	return nil
}

// notifyJobs tells the workers of every process, when the transaction commits, that job id
// can be claimed (PostgreSQL only; the caller checked the dialect). The id is the payload:
// it names the one worker process that claims at once (notify.go).
func (q *querier) notifyJobs(ctx context.Context, op string, id int64) error {
	_, err := q.w.NewRaw("SELECT pg_notify(?, ?)", q.jobsChan(), strconv.FormatInt(id, 10)).Exec(ctx)
	return wrap(op, err)
}

// RenewJob writes RunAt (now when zero), Payload and Attempts, and keeps the lease for
// lease from now, or frees it (no token, no lease_until) when lease is 0; job is updated to
// match.
func (q *querier) RenewJob(ctx context.Context, job *svctype.Job, lease time.Duration) error {
	const op = "renew job"
	if job.LeaseToken == "" {
		return leaseLost(op)
	}
	t := q.now()
	runAt := orNow(job.RunAt, t)
	var leaseUntil time.Time
	if lease > 0 {
		leaseUntil = dbTime(t.Add(lease))
	}
	if st := q.fast(); st != nil {
		if lease > 0 && !job.RunAt.IsZero() {
			// The lease alone when run_at stays; a row that does not match (run_at moved,
			// the lease lost) takes the whole statement, which tells which.
			res, err := q.exec(ctx, st.renewLease, jsonArg(job.Payload), job.Attempts, sqliteTime(leaseUntil),
				job.OrgID, job.ID, job.LeaseToken, sqliteTime(runAt))
			if err != nil {
				return wrap(op, err)
			}
			if n, err := res.RowsAffected(); err == nil && n == 1 {
				return renewed(op, res, job, runAt, leaseUntil)
			}
		}
		var until any
		if lease > 0 {
			until = sqliteTime(leaseUntil)
		}
		res, err := q.exec(ctx, st.renewJob, sqliteTime(runAt), jsonArg(job.Payload), job.Attempts, until, until,
			job.OrgID, job.ID, job.LeaseToken)
		if err != nil {
			return wrap(op, err)
		}
		return renewed(op, res, job, runAt, leaseUntil)
	}
	if q.pgTx() {
		var until any
		if lease > 0 {
			until = leaseUntil
		}
		res, err := q.pgExec(ctx, pgRenewJob, runAt, jsonArg(job.Payload), job.Attempts, until, until,
			job.OrgID, job.ID, job.LeaseToken)
		if err != nil {
			return wrap(op, err)
		}
		if err := renewed(op, res, job, runAt, leaseUntil); err != nil {
			return err
		}
		if lease <= 0 && !runAt.After(t) {
			return q.notifyJobs(ctx, op, job.ID)
		}
		return nil
	}
	upd := q.w.NewUpdate().Model((*jobModel)(nil)).
		Set("run_at = ?", runAt).
		Set("payload = ?", jsonArg(job.Payload)).
		Set("attempts = ?", job.Attempts).
		Where("org_id = ? AND id = ? AND lease_token = ?", job.OrgID, job.ID, job.LeaseToken)
	if lease > 0 {
		upd = upd.Set("lease_until = ?", leaseUntil)
	} else {
		upd = upd.Set("lease_until = NULL").Set("lease_token = NULL")
	}
	res, err := upd.Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	if err := renewed(op, res, job, runAt, leaseUntil); err != nil {
		return err
	}
	if q.dialect == dialectPostgres && lease <= 0 && !runAt.After(t) {
		return q.notifyJobs(ctx, op, job.ID) // handed back: claimable now by any worker
	}
	return nil
}

// renewed reports a lost lease when the renewal matched no row, else updates job.
func renewed(op string, res sql.Result, job *svctype.Job, runAt, leaseUntil time.Time) error {
	if err := checkAffected(op, res, leaseLost); err != nil {
		return err
	}
	job.RunAt = runAt
	if leaseUntil.IsZero() {
		job.LeaseUntil = nil
		job.LeaseToken = ""
	} else {
		u := leaseUntil
		job.LeaseUntil = &u
	}
	return nil
}

// CompleteJob deletes a job that job's token still holds.
func (q *querier) CompleteJob(ctx context.Context, job *svctype.Job) error {
	const op = "complete job"
	if job.LeaseToken == "" {
		return leaseLost(op)
	}
	var res sql.Result
	var err error
	if st := q.fast(); st != nil {
		res, err = q.exec(ctx, st.completeJob, job.OrgID, job.ID, job.LeaseToken)
	} else {
		res, err = q.w.NewDelete().Model((*jobModel)(nil)).
			Where("org_id = ? AND id = ? AND lease_token = ?", job.OrgID, job.ID, job.LeaseToken).
			Exec(ctx)
	}
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, leaseLost)
}

// DeleteJobs removes an org's jobs of kind (any kind when empty) for runID or, when runID
// is empty, for workflowID. With neither id it deletes nothing.
func (q *querier) DeleteJobs(ctx context.Context, orgID, kind, runID, workflowID string) error {
	del := q.w.NewDelete().Model((*jobModel)(nil)).Where("org_id = ?", orgID)
	switch {
	case runID != "":
		del = del.Where("run_id = ?", runID)
	case workflowID != "":
		// workflow_id <> '' names the partial index jobs_org_workflow_set to the planner.
		del = del.Where("workflow_id = ? AND workflow_id <> ''", workflowID)
	default:
		return nil
	}
	if kind != "" {
		del = del.Where("kind = ?", kind)
	}
	_, err := del.Exec(ctx)
	return wrap("delete jobs", err)
}
