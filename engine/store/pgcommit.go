package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// A step's commit on PostgreSQL in one statement. What a step commit writes after the step
// ran (its context values, its record, the run, its events, the end of its job) used to be
// one statement each, each a round trip and, on this 2-CPU machine, a pair of context
// switches for PostgreSQL's backend and the worker. Here they are the data-modifying CTEs of
// one prepared statement (pgx's statement cache; one text per shape: how many values and
// events, and which parts are present), whose last SELECT returns what the checks need:
// the rows the run's update and the job's renewal or deletion touched, and the events'
// numbers.
// The CTEs touch different tables, so their one shared snapshot changes nothing. The steps
// a unit runs in one transaction (the core's chains) send their commits together
// (CommitSteps): one statement for all of them, each row written once.

// CommitStep writes c (storage.StepCommitter): in one statement inside a PostgreSQL
// transaction, else through the calls it stands for.
func (q *querier) CommitStep(ctx context.Context, c *storage.StepCommit) error {
	if !q.pgTx() {
		return storage.CommitStepByCalls(ctx, q, c)
	}
	if c.Complete != nil && c.Complete.LeaseToken == "" {
		return leaseLost("complete job")
	}
	if c.Renew != nil && (c.Complete != nil || c.Lease <= 0) {
		// Freeing a lease notifies the workers (RenewJob): not a step commit's case.
		return storage.CommitStepByCalls(ctx, q, c)
	}
	return q.commitSteps(ctx, []*storage.StepCommit{c})
}

// CommitSteps writes cs (storage.StepsCommitter): in one statement inside a PostgreSQL
// transaction, else one CommitStep each. The statement writes each commit's context
// values (a key written twice: the later value), step record and events, and the run and
// the job once: the run as the last commit leaves it, the job renewed for the first
// commit's lease or, when the last ends the run, deleted (the same lease check: the job's
// token). One row is never written twice by one statement's CTEs (PostgreSQL would keep
// one of the writes, unsaid which).
func (q *querier) CommitSteps(ctx context.Context, cs []*storage.StepCommit) error {
	if !q.pgTx() || !mergeable(cs) {
		for _, c := range cs {
			if err := q.CommitStep(ctx, c); err != nil {
				return err
			}
		}
		return nil
	}
	return q.commitSteps(ctx, cs)
}

// mergeable reports whether cs can be one statement: commits of one run, none ending the
// job but the last, no renewal that frees the lease.
func mergeable(cs []*storage.StepCommit) bool {
	for i, c := range cs {
		if c.Run == nil || c.Run.ID != cs[0].Run.ID || c.OrgID != cs[0].OrgID ||
			c.Complete != nil && (i < len(cs)-1 || c.Complete.LeaseToken == "") ||
			c.Renew != nil && (c.Complete != nil || c.Lease <= 0) {
			return false
		}
	}
	return true
}

// commitSteps writes cs in one statement (CommitSteps); each renewal and completion
// checked as mergeable says.
func (q *querier) commitSteps(ctx context.Context, cs []*storage.StepCommit) error {
	last := cs[len(cs)-1]
	var renew, complete *svctype.Job
	var lease time.Duration
	for _, c := range cs {
		if c.Renew != nil {
			renew, lease = c.Renew, c.Lease
		}
	}
	if complete = last.Complete; complete != nil {
		renew = nil // the deletion checks the same lease
	}
	if renew != nil && renew.LeaseToken == "" {
		return leaseLost("renew job")
	}
	run := last.Run
	run.UpdatedAt = orNow(run.UpdatedAt, q.now())
	run.FinishedAt = dbTimePtr(run.FinishedAt)
	rm, err := runToModel(run)
	if err != nil {
		return fmt.Errorf("store: update run: %w", err)
	}
	var b pgStatement
	renewCTE := ""
	var runAt, leaseUntil time.Time
	if j := renew; j != nil {
		t := q.now()
		runAt, leaseUntil = orNow(j.RunAt, t), dbTime(t.Add(lease))
		renewCTE = b.cte(pgRenewJobCTE, runAt, jsonArg(j.Payload), j.Attempts, leaseUntil, leaseUntil,
			j.OrgID, j.ID, j.LeaseToken)
	}
	// Each context key and step record once, as the last commit that writes it has it.
	events := last.Events
	var lastPut map[string]int
	var lastStep map[int]int
	if len(cs) > 1 {
		lastPut, lastStep, events = map[string]int{}, map[int]int{}, nil
		for i, c := range cs {
			for _, p := range c.Context {
				lastPut[p.Key] = i
			}
			if c.Step != nil {
				lastStep[c.Step.Index] = i
			}
			events = append(events, c.Events...)
		}
	}
	for i, c := range cs {
		for _, p := range c.Context {
			if lastPut == nil || lastPut[p.Key] == i {
				b.putContext(c.OrgID, run.ID, p.Key, p.Value)
			}
		}
		if c.Step == nil || lastStep != nil && lastStep[c.Step.Index] != i {
			continue
		}
		m, err := stepToModel(c.OrgID, c.Step)
		if err != nil {
			return fmt.Errorf("store: put step: %w", err)
		}
		b.cte(asCTE(sqlPutStep),
			m.OrgID, m.RunID, m.Idx, m.Type, m.Status, jsonArg(m.InputSummary), jsonArg(m.Output),
			jsonArg(m.Effects), jsonArg(m.Decisions), m.Error, m.StartedAt, m.FinishedAt)
	}
	runCTE := b.cte(asCTE(sqlUpdateRun)+" RETURNING 1",
		rm.Status, jsonArg(rm.Cursor), rm.Reason, rm.UpdatedAt, rm.FinishedAt, rm.OrgID, rm.ID)
	eventsCTE := b.appendEvents(events, q.now())
	jobCTE := ""
	if j := complete; j != nil {
		jobCTE = b.cte(`DELETE FROM "jobs" WHERE "org_id" = %s AND "id" = %s AND "lease_token" = %s RETURNING 1`,
			j.OrgID, j.ID, j.LeaseToken)
	}
	notifyCTE := ""
	if run.Status != svctype.RunRunning {
		// Delivered to every listener when the transaction commits (never if it rolls
		// back), as UpdateRun does. A SELECT CTE runs only when read: the last SELECT does.
		notifyCTE = b.cte(`SELECT pg_notify(%s, %s)`, runStatusChannel, run.OrgID+"\n"+run.ID)
	}
	// The job's row is locked before the run's, as every other transaction that takes both
	// does (a cancel deletes the job, then updates the run): a CTE the final SELECT reads
	// runs when it is read, and its subqueries are read in order. Run first, a commit and
	// a cancel deadlocked (40P01).
	var final []string
	switch {
	case jobCTE != "":
		final = append(final, "(SELECT count(*) FROM "+jobCTE+")")
	case renewCTE != "":
		final = append(final, "(SELECT count(*) FROM "+renewCTE+")")
	default:
		final = append(final, "1")
	}
	final = append(final, "(SELECT count(*) FROM "+runCTE+")", seqsOf(eventsCTE))
	if notifyCTE != "" {
		final = append(final, "(SELECT count(*) FROM "+notifyCTE+")")
	}
	// The freed slot's next job, read last: after the commit's job and run are locked.
	var claimExpr, claimFrom string
	if complete != nil {
		claimExpr, claimFrom = q.claimNext(&b, last.Next, complete)
	}
	if claimExpr != "" {
		final = append(final, claimExpr)
	}
	var (
		runs, jobs int64
		seqText    sql.NullString
		notified   int64
		leased     sql.NullString
	)
	dest := []any{&jobs, &runs, &seqText}
	if notifyCTE != "" {
		dest = append(dest, &notified)
	}
	if claimExpr != "" {
		dest = append(dest, &leased)
	}
	if err := q.pgQueryRow(ctx, b.text("SELECT "+strings.Join(final, ", ")), b.args...).Scan(dest...); err != nil {
		return wrap("commit step", err)
	}
	// In the calls' order: a renewal's lease first, the run, a completion's lease.
	if jobs == 0 && renew != nil {
		return leaseLost("renew job")
	}
	if runs == 0 {
		return notFound("update run")
	}
	if jobs == 0 {
		return leaseLost("complete job")
	}
	if j := renew; j != nil {
		j.RunAt = runAt
		j.LeaseUntil = &leaseUntil
	}
	if err := numberEvents(events, seqText); err != nil {
		return err
	}
	if claimExpr != "" {
		if err := q.claims.add(last.Next, claimFrom, leased); err != nil {
			return err
		}
	}
	if len(cs) > 1 {
		// The events as written (delivery ids, times, numbers) back in their commits.
		off := 0
		for _, c := range cs {
			off += copy(c.Events, events[off:])
		}
	}
	return nil
}

// StartRun writes r (storage.RunStarter): in one statement inside a PostgreSQL transaction
// for a run without an idempotency key, else through the calls it stands for.
func (q *querier) StartRun(ctx context.Context, r *storage.RunStart) error {
	run, job := r.Run, r.Job
	if !q.pgTx() || run.IdempotencyKey != "" || run.ID == "" {
		return storage.StartRunByCalls(ctx, q, r)
	}
	t := q.now()
	m, err := newRunModel(run, t)
	if err != nil {
		return err
	}
	job.RunAt = orNow(job.RunAt, t)
	job.LeaseUntil = dbTimePtr(job.LeaseUntil)
	jm := jobToModel(job)

	var b pgStatement
	runCTE := b.cte(asCTE(sqlInsertRun)+" RETURNING 1",
		m.OrgID, m.ID, m.WorkflowID, m.WorkflowVersion, m.Status, jsonArg(m.Input), jsonArg(m.Definition),
		jsonArg(m.Cursor), m.Reason, nil, m.CreatedAt, m.UpdatedAt, m.FinishedAt)
	b.putContext(run.OrgID, run.ID, "input", r.Input)
	jobCTE := b.cte(asCTE(sqlEnqueueJob)+` RETURNING "id"`,
		jm.OrgID, jm.Kind, jm.RunID, jm.WorkflowID, jm.RunAt, jm.Attempts, jm.LeaseToken, jm.LeaseUntil, jsonArg(jm.Payload))
	eventsCTE := b.appendEvents(r.Events, t)
	final := []string{"(SELECT count(*) FROM " + runCTE + ")", "(SELECT id FROM " + jobCTE + ")", seqsOf(eventsCTE)}
	var (
		runs     int64
		jobID    int64
		seqText  sql.NullString
		notified int64
	)
	dest := []any{&runs, &jobID, &seqText}
	if jm.LeaseToken == nil && !jm.RunAt.After(t) {
		// A due job wakes the workers of every process when the transaction commits, as
		// EnqueueJob does.
		final = append(final, "(SELECT count(*) FROM "+b.cte(`SELECT pg_notify(%s, (SELECT id::text FROM `+jobCTE+`))`, q.jobsChan())+")")
		dest = append(dest, &notified)
	}
	if err := q.pgQueryRow(ctx, b.text("SELECT "+strings.Join(final, ", ")), b.args...).Scan(dest...); err != nil {
		return wrap("start run", err)
	}
	if runs == 0 {
		return conflict("create run")
	}
	job.ID = jobID
	return numberEvents(r.Events, seqText)
}

// putContext adds the CTE of PutContext.
func (s *pgStatement) putContext(orgID, runID, key string, value []byte) {
	s.cte(asCTE(sqlPutContext),
		orgID, runID, key, jsonArg(value), len(value))
}

// appendEvents adds the CTE of AppendEvents for evs (their delivery ids and times set as it
// sets them, t for a time not set) and returns its name, "" when there are none.
func (s *pgStatement) appendEvents(evs []svctype.Event, t time.Time) string {
	if len(evs) == 0 {
		return ""
	}
	rows := make([]string, len(evs))
	var args []any
	for i := range evs {
		e := &evs[i]
		if e.DeliveryID == "" {
			e.DeliveryID = newID()
		}
		e.Timestamp = orNow(e.Timestamp, t)
		rows[i] = eventRow
		args = append(args, e.DeliveryID, e.OrgID, e.RunID, e.Event, e.Timestamp, jsonArg(nonEmpty(e.Payload)))
	}
	return s.cte(eventsInsert+strings.Join(rows, ", ")+` RETURNING "seq"`, args...)
}

// seqsOf is the final SELECT's expression of the events' numbers, in order, comma-joined.
func seqsOf(eventsCTE string) string {
	if eventsCTE == "" {
		return "NULL::text"
	}
	return "(SELECT string_agg(seq::text, ',' ORDER BY seq) FROM " + eventsCTE + ")"
}

// numberEvents sets each event's Seq from seqs (seqsOf's text). One statement numbers its
// rows in VALUES order; they come back sorted (RETURNING's own order is not promised).
func numberEvents(evs []svctype.Event, seqs sql.NullString) error {
	if !seqs.Valid {
		return nil
	}
	for i, f := range strings.Split(seqs.String, ",") {
		if i >= len(evs) {
			break
		}
		seq, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return fmt.Errorf("store: event number %q: %w", f, err)
		}
		evs[i].Seq = seq
	}
	return nil
}

// The CTEs are the SQLite fast path's statements (sqlitefast.go), the ones the calls
// send, with their ? as cte's %s.
var (
	pgRenewJobCTE = asCTE(strings.Replace(sqlRenewJob, `CASE WHEN ? IS NULL`, `CASE WHEN ?::timestamptz IS NULL`, 1)) + " RETURNING 1"
	// eventsInsert and eventRow make sqlAppendEvent's insert of several rows.
	eventsInsert, eventRow = func() (string, string) {
		head, row, _ := strings.Cut(asCTE(sqlAppendEvent), "VALUES ")
		return head + "VALUES ", row
	}()
)

// asCTE is a statement with ? placeholders (none inside a string literal) as a cte body.
func asCTE(q string) string { return strings.ReplaceAll(q, "?", "%s") }

// pgStatement builds a statement of numbered CTEs with $n parameters.
type pgStatement struct {
	ctes []string
	args []any
	// recursive: a CTE refers to itself (a claim's organizations, claimNext).
	recursive bool
}

// cte adds a CTE whose %s are its arguments, numbered after those before, and returns its
// name.
func (s *pgStatement) cte(body string, args ...any) string {
	ph := make([]any, len(args))
	for i := range args {
		ph[i] = "$" + strconv.Itoa(len(s.args)+i+1)
	}
	s.args = append(s.args, args...)
	name := "c" + strconv.Itoa(len(s.ctes))
	s.ctes = append(s.ctes, name+" AS ("+fmt.Sprintf(body, ph...)+")")
	return name
}

// text is the statement: its CTEs, then final.
func (s *pgStatement) text(final string) string {
	with := "WITH "
	if s.recursive {
		with = "WITH RECURSIVE "
	}
	return with + strings.Join(s.ctes, ",\n") + "\n" + final
}
