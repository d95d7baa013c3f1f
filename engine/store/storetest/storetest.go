// Package storetest is the conformance suite for storage.Full: every implementation (here,
// engine/store on SQLite and on PostgreSQL) must pass Run. It tests the contract written in
// engine/store.go through the interface only, and owns no fixtures beyond what it creates.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/testclock"
)

// Run runs the suite. open returns an empty, migrated store for one subtest (and closes it
// when the subtest ends) whose clock is now (store.WithNow): the suite moves it to make a
// lease lapse or a key expire; subtests run in parallel, each on its own store. countJobs counts
// the jobs of every organization in a store that open returned: the suite checks what is
// left in the queue, and no engine interface reads tenant rows without an org id.
func Run(t *testing.T, open func(t *testing.T, now func() time.Time) storage.Full, countJobs func(tb testing.TB, s storage.Full) int) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b *bundle)
	}{
		{"Workflows", testWorkflows},
		{"WorkflowVersions", testWorkflowVersions},
		{"WorkflowList", testWorkflowList},
		{"Runs", testRuns},
		{"RunList", testRunList},
		{"Idempotency", testIdempotency},
		{"IdempotencyExpiry", testIdempotencyExpiry},
		{"Context", testContext},
		{"ContextParts", testContextParts},
		{"Steps", testSteps},
		{"LoopItems", testLoopItems},
		{"Events", testEvents},
		{"CommitStep", testCommitStep},
		{"CommitSteps", testCommitSteps},
		{"StartRun", testStartRun},
		{"PageLimits", testPageLimits},
		{"MalformedCursor", testMalformedCursor},
		{"JobClaim", testJobClaim},
		{"JobLeaseExpiry", testJobLeaseExpiry},
		{"JobClock", testJobClock},
		{"JobRenew", testJobRenew},
		{"JobExtendLeases", testJobExtendLeases},
		{"JobDelete", testJobDelete},
		{"JobClaimConcurrent", testJobClaimConcurrent},
		{"JobClaimFair", testJobClaimFair},
		{"JobClaimCounts", testJobClaimCounts},
		{"JobClaimNext", testJobClaimNext},
		{"LoadRun", testLoadRun},
		{"JobTenancy", testJobTenancy},
		{"Tables", testTables},
		{"Rows", testRows},
		{"Upsert", testUpsert},
		{"ReadRowsWhere", testReadRowsWhere},
		{"ListRows", testListRows},
		{"UpdateRows", testUpdateRows},
		{"UpdateRowsKeys", testUpdateRowsKeys},
		{"TableIndexes", testTableIndexes},
		{"Tenancy", testTenancy},
		{"TxRollback", testTxRollback},
		{"TxCommit", testTxCommit},
		{"TxConcurrent", testTxConcurrent},
		{"TxSurvivesConflict", testTxSurvivesConflict},
		{"TxImplementsEveryPart", testTxImplementsEveryPart},
		{"Documents", testDocuments},
		{"Actions", testActions},
		{"OrgConfig", testOrgConfig},
		{"OAuth", testOAuth},
		{"Webhooks", testWebhooks},
		{"ExternalForms", testExternalForms},
		{"FormSchemas", testFormSchemas},
		{"Agents", testAgents},
		{"Authoring", testAuthoring},
		{"RunRetries", testRunRetries},
		{"RunOperations", testRunOperations},
		{"Ready", testReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := testclock.Running()
			s := open(t, clk.Now)
			tt.fn(t, &bundle{s: s, ctx: context.Background(), clk: clk, countJobs: func(t *testing.T) int { return countJobs(t, s) }})
		})
	}
}

type bundle struct {
	s         storage.Full
	ctx       context.Context
	clk       *testclock.Clock       // the store's clock: it runs with the wall clock until moved
	countJobs func(t *testing.T) int // every organization's jobs
}

const (
	orgA = "org_a"
	orgB = "org_b"
)

func newID() string { return uuid.NewString() }

func (b *bundle) workflow(t *testing.T, org, name string) *svctype.Workflow {
	t.Helper()
	w := &svctype.Workflow{
		OrgID: org, Name: name,
		Definition: json.RawMessage(`{"name":"` + name + `","steps":[{"type":"matcher"}]}`),
		Warnings:   []string{"w1"},
	}
	require.NoError(t, b.s.CreateWorkflow(b.ctx, w))
	return w
}

func (b *bundle) run(t *testing.T, org, workflowID string, created time.Time) *svctype.Run {
	t.Helper()
	r := &svctype.Run{
		ID: newID(), OrgID: org, WorkflowID: workflowID, WorkflowVersion: 1,
		Status: svctype.RunRunning, Input: json.RawMessage(`{"a":1}`),
		Definition: json.RawMessage(`{"steps":[]}`), CreatedAt: created, UpdatedAt: created,
	}
	require.NoError(t, b.s.CreateRun(b.ctx, r, time.Time{}))
	return r
}

func (b *bundle) table(t *testing.T, org, name string) {
	t.Helper()
	require.NoError(t, b.s.CreateTable(b.ctx, &svctype.Table{
		OrgID: org, Name: name, Fields: map[string]string{"email": "text", "n": "number"},
	}))
}

func (b *bundle) job(t *testing.T, org string, runAt time.Time) *svctype.Job {
	t.Helper()
	j := &svctype.Job{OrgID: org, Kind: svctype.JobRunStep, RunID: newID(), RunAt: runAt, Payload: json.RawMessage(`{"step":0}`)}
	require.NoError(t, b.s.EnqueueJob(b.ctx, j))
	require.NotZero(t, j.ID)
	return j
}

// collect pages through a listing with limit, failing on a repeated item.
func collect[T any](t *testing.T, limit int, key func(T) string, list func(svctype.ListOptions) (svctype.Page[T], error)) []T {
	t.Helper()
	var all []T
	seen := map[string]bool{}
	opts := svctype.ListOptions{Limit: limit}
	for range 1000 {
		page, err := list(opts)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Items), limit)
		for _, it := range page.Items {
			require.False(t, seen[key(it)], "item %s on two pages", key(it))
			seen[key(it)] = true
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all
		}
		require.Len(t, page.Items, limit, "a page before the last is full")
		opts.Cursor = page.NextCursor
	}
	t.Fatal("listing does not end")
	return nil
}

func requireJSON(t *testing.T, want string, got json.RawMessage) {
	t.Helper()
	require.JSONEq(t, want, string(got))
}

func testWorkflows(t *testing.T, b *bundle) {
	w := b.workflow(t, orgA, "invoices")
	require.NotEmpty(t, w.ID)
	require.Equal(t, 1, w.Version)

	got, err := b.s.GetWorkflow(b.ctx, orgA, w.ID)
	require.NoError(t, err)
	require.Equal(t, w.ID, got.ID)
	require.Equal(t, orgA, got.OrgID)
	require.Equal(t, "invoices", got.Name)
	require.Equal(t, 1, got.Version)
	require.Equal(t, string(w.Definition), string(got.Definition), "definition bytes kept as written")
	require.Equal(t, []string{"w1"}, got.Warnings)
	require.True(t, w.CreatedAt.Equal(got.CreatedAt), "created_at %v != %v", w.CreatedAt, got.CreatedAt)
	require.Equal(t, time.UTC, got.CreatedAt.Location())

	// A taken name is a conflict in the same org only.
	err = b.s.CreateWorkflow(b.ctx, &svctype.Workflow{OrgID: orgA, Name: "invoices", Definition: json.RawMessage(`{}`)})
	require.ErrorIs(t, err, storage.ErrConflict)
	b.workflow(t, orgB, "invoices")

	_, err = b.s.GetWorkflow(b.ctx, orgA, "missing")
	require.ErrorIs(t, err, storage.ErrNotFound)

	// Delete removes the workflow and its versions; runs stay.
	run := b.run(t, orgA, w.ID, time.Time{})
	require.NoError(t, b.s.DeleteWorkflow(b.ctx, orgA, w.ID))
	_, err = b.s.GetWorkflow(b.ctx, orgA, w.ID)
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = b.s.GetWorkflowVersion(b.ctx, orgA, w.ID, 1)
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorIs(t, b.s.DeleteWorkflow(b.ctx, orgA, w.ID), storage.ErrNotFound)
	gotRun, err := b.s.GetRun(b.ctx, orgA, run.ID)
	require.NoError(t, err)
	requireJSON(t, `{"steps":[]}`, gotRun.Definition)
	// The name is free again.
	b.workflow(t, orgA, "invoices")
}

func testWorkflowVersions(t *testing.T, b *bundle) {
	w := b.workflow(t, orgA, "v")
	other := b.workflow(t, orgA, "other")

	v2 := *w
	v2.Version = 2
	v2.Definition = json.RawMessage(`{"version":2}`)
	v2.Warnings = nil
	v2.UpdatedAt = time.Time{}
	require.NoError(t, b.s.UpdateWorkflow(b.ctx, &v2))
	require.True(t, w.CreatedAt.Equal(v2.CreatedAt), "update keeps created_at")

	got, err := b.s.GetWorkflow(b.ctx, orgA, w.ID)
	require.NoError(t, err)
	require.Equal(t, 2, got.Version)
	requireJSON(t, `{"version":2}`, got.Definition)
	require.Empty(t, got.Warnings)
	require.True(t, got.CreatedAt.Equal(w.CreatedAt))

	v1, err := b.s.GetWorkflowVersion(b.ctx, orgA, w.ID, 1)
	require.NoError(t, err)
	require.Equal(t, 1, v1.Version)
	require.Equal(t, string(w.Definition), string(v1.Definition))
	require.Equal(t, []string{"w1"}, v1.Warnings)
	got2, err := b.s.GetWorkflowVersion(b.ctx, orgA, w.ID, 2)
	require.NoError(t, err)
	requireJSON(t, `{"version":2}`, got2.Definition)
	_, err = b.s.GetWorkflowVersion(b.ctx, orgA, w.ID, 3)
	require.ErrorIs(t, err, storage.ErrNotFound)

	tests := []struct {
		name   string
		mutate func(w *svctype.Workflow)
		want   error
	}{
		{"missing workflow", func(w *svctype.Workflow) { w.ID = "missing"; w.Version = 2 }, storage.ErrNotFound},
		{"taken name", func(w *svctype.Workflow) { w.Name = other.Name; w.Version = 3 }, storage.ErrConflict},
		{"existing version", func(w *svctype.Workflow) { w.Version = 2 }, storage.ErrConflict},
		{"other org", func(w *svctype.Workflow) { w.OrgID = orgB; w.Version = 3 }, storage.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := v2
			tt.mutate(&u)
			require.ErrorIs(t, b.s.UpdateWorkflow(b.ctx, &u), tt.want)
		})
	}
	got, err = b.s.GetWorkflow(b.ctx, orgA, w.ID)
	require.NoError(t, err)
	require.Equal(t, 2, got.Version, "failed updates change nothing")
	require.Equal(t, "v", got.Name)

	// Renaming to a free name works.
	v3 := v2
	v3.Version, v3.Name = 3, "renamed"
	require.NoError(t, b.s.UpdateWorkflow(b.ctx, &v3))
	got, err = b.s.GetWorkflow(b.ctx, orgA, w.ID)
	require.NoError(t, err)
	require.Equal(t, "renamed", got.Name)
}

func testWorkflowList(t *testing.T, b *bundle) {
	var want []string
	for i := range 7 {
		w := b.workflow(t, orgA, fmt.Sprintf("wf-%d", i))
		want = append(want, w.ID)
	}
	b.workflow(t, orgB, "elsewhere")
	for _, limit := range []int{1, 3, 7, 10} {
		all := collect(t, limit, func(w svctype.Workflow) string { return w.ID },
			func(o svctype.ListOptions) (svctype.Page[svctype.Workflow], error) {
				return b.s.ListWorkflows(b.ctx, orgA, o)
			})
		ids := make([]string, len(all))
		for i, w := range all {
			ids[i] = w.ID
			require.Equal(t, orgA, w.OrgID)
		}
		require.Equal(t, want, ids, "creation order, limit %d", limit)
	}
}

func testRuns(t *testing.T, b *bundle) {
	created := time.Date(2025, 3, 1, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
	r := &svctype.Run{
		OrgID: orgA, WorkflowID: "wf", WorkflowVersion: 3, Status: svctype.RunRunning,
		Input: json.RawMessage(`{"n": 1}`), Definition: json.RawMessage(`{"steps":[1]}`),
		Cursor:         svctype.Cursor{Step: 2, Loop: &svctype.LoopCursor{Next: 4, Total: 9}},
		IdempotencyKey: "k1", CreatedAt: created, UpdatedAt: created,
	}
	require.NoError(t, b.s.CreateRun(b.ctx, r, time.Now().Add(time.Hour)))
	require.NotEmpty(t, r.ID)

	got, err := b.s.GetRun(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	require.Equal(t, r.ID, got.ID)
	require.Equal(t, orgA, got.OrgID)
	require.Equal(t, "wf", got.WorkflowID)
	require.Equal(t, 3, got.WorkflowVersion)
	require.Equal(t, svctype.RunRunning, got.Status)
	require.Equal(t, `{"n": 1}`, string(got.Input))
	require.Equal(t, `{"steps":[1]}`, string(got.Definition))
	require.Equal(t, r.Cursor, got.Cursor)
	require.Equal(t, "k1", got.IdempotencyKey)
	require.True(t, got.CreatedAt.Equal(created.Truncate(time.Microsecond)), "%v", got.CreatedAt)
	require.Equal(t, time.UTC, got.CreatedAt.Location())
	require.Nil(t, got.FinishedAt)

	dup := *r
	dup.IdempotencyKey = ""
	require.ErrorIs(t, b.s.CreateRun(b.ctx, &dup, time.Time{}), storage.ErrConflict)

	finished := time.Now()
	r.Status = svctype.RunCompleted
	r.Cursor = svctype.Cursor{Step: 5}
	r.Reason = "done"
	r.FinishedAt = &finished
	r.UpdatedAt = finished
	r.Input = json.RawMessage(`{"ignored":true}`)
	require.NoError(t, b.s.UpdateRun(b.ctx, r))
	got, err = b.s.GetRun(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.RunCompleted, got.Status)
	require.Equal(t, svctype.Cursor{Step: 5}, got.Cursor)
	require.Equal(t, "done", got.Reason)
	require.NotNil(t, got.FinishedAt)
	require.WithinDuration(t, finished, *got.FinishedAt, time.Millisecond)
	require.WithinDuration(t, finished, got.UpdatedAt, time.Millisecond)
	require.Equal(t, `{"n": 1}`, string(got.Input), "UpdateRun writes only its columns")

	missing := *r
	missing.ID = "missing"
	require.ErrorIs(t, b.s.UpdateRun(b.ctx, &missing), storage.ErrNotFound)
	_, err = b.s.GetRun(b.ctx, orgA, "missing")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testRunList(t *testing.T, b *bundle) {
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	named := b.workflow(t, orgA, "invoices")
	var runs []*svctype.Run
	keys := map[string][]string{}
	for i := range 12 {
		// Three runs share each timestamp: the id breaks ties.
		wf := fmt.Sprintf("wf%d", i%2)
		if i%2 == 1 {
			wf = named.ID
		}
		r := b.run(t, orgA, wf, base.Add(time.Duration(i/3)*time.Second))
		switch i % 3 {
		case 0:
			r.Status = svctype.RunPaused
			require.NoError(t, b.s.UpdateRun(b.ctx, r))
		case 1:
			if i%2 == 1 {
				r.Status = svctype.RunFailed
				require.NoError(t, b.s.UpdateRun(b.ctx, r))
			}
		}
		var values []string
		switch {
		case i%4 == 0:
			values = []string{"INV-1", "INV-1", "a@example.com"} // a value twice is kept once
		case i%4 == 1:
			values = []string{"1042"}
		}
		require.NoError(t, b.s.PutRunSearchKeys(b.ctx, orgA, r.ID, r.CreatedAt, values))
		keys[r.ID] = values
		runs = append(runs, r)
	}
	other := b.run(t, orgB, "wf0", base)
	require.NoError(t, b.s.PutRunSearchKeys(b.ctx, orgB, other.ID, other.CreatedAt, []string{"INV-1"}))
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].CreatedAt.Equal(runs[j].CreatedAt) {
			return runs[i].CreatedAt.After(runs[j].CreatedAt)
		}
		return runs[i].ID > runs[j].ID
	})
	has := func(id, v string) bool { return slices.Contains(keys[id], v) }
	prefix := runs[4].ID[:8]
	tests := []struct {
		name   string
		filter storage.RunFilter
		keep   func(r *svctype.Run) bool
	}{
		{"all", storage.RunFilter{}, func(*svctype.Run) bool { return true }},
		{"workflow", storage.RunFilter{WorkflowID: "wf0"}, func(r *svctype.Run) bool { return r.WorkflowID == "wf0" }},
		{"status", storage.RunFilter{Statuses: []svctype.RunStatus{svctype.RunPaused}}, func(r *svctype.Run) bool { return r.Status == svctype.RunPaused }},
		{"statuses", storage.RunFilter{Statuses: []svctype.RunStatus{svctype.RunFailed, svctype.RunPaused}}, func(r *svctype.Run) bool {
			return r.Status == svctype.RunPaused || r.Status == svctype.RunFailed
		}},
		{"workflow and status", storage.RunFilter{WorkflowID: "wf0", Statuses: []svctype.RunStatus{svctype.RunRunning}}, func(r *svctype.Run) bool {
			return r.WorkflowID == "wf0" && r.Status == svctype.RunRunning
		}},
		{"created range", storage.RunFilter{CreatedAfter: base.Add(time.Second), CreatedBefore: base.Add(3 * time.Second)}, func(r *svctype.Run) bool {
			return !r.CreatedAt.Before(base.Add(time.Second)) && r.CreatedAt.Before(base.Add(3*time.Second))
		}},
		{"run id", storage.RunFilter{RunID: runs[4].ID}, func(r *svctype.Run) bool { return r.ID == runs[4].ID }},
		{"run id prefix", storage.RunFilter{RunID: prefix}, func(r *svctype.Run) bool { return strings.HasPrefix(r.ID, prefix) }},
		{"key", storage.RunFilter{Key: "INV-1"}, func(r *svctype.Run) bool { return has(r.ID, "INV-1") }},
		{"key of a number", storage.RunFilter{Key: "1042"}, func(r *svctype.Run) bool { return has(r.ID, "1042") }},
		{"key nobody has", storage.RunFilter{Key: "INV-2"}, func(*svctype.Run) bool { return false }},
		{"key and status", storage.RunFilter{Key: "INV-1", Statuses: []svctype.RunStatus{svctype.RunPaused}}, func(r *svctype.Run) bool {
			return has(r.ID, "INV-1") && r.Status == svctype.RunPaused
		}},
		{"key and created range", storage.RunFilter{Key: "1042", CreatedAfter: base.Add(time.Second)}, func(r *svctype.Run) bool {
			return has(r.ID, "1042") && !r.CreatedAt.Before(base.Add(time.Second))
		}},
	}
	for _, tt := range tests {
		for _, limit := range []int{1, 2, 4, 50} {
			t.Run(fmt.Sprintf("%s/limit%d", tt.name, limit), func(t *testing.T) {
				want := []string{}
				for _, r := range runs {
					if tt.keep(r) {
						want = append(want, r.ID)
					}
				}
				all := collect(t, limit, func(r svctype.Run) string { return r.ID },
					func(o svctype.ListOptions) (svctype.Page[svctype.Run], error) {
						f := tt.filter
						f.ListOptions = o
						return b.s.ListRuns(b.ctx, orgA, f)
					})
				got := make([]string, len(all))
				for i, r := range all {
					got[i] = r.ID
					require.Empty(t, r.Definition, "a listing leaves the definition out")
				}
				require.Equal(t, want, got, "newest first, no duplicates or omissions")
			})
		}
	}
	t.Run("workflow names", func(t *testing.T) {
		names, err := b.s.WorkflowNames(b.ctx, orgA, []string{named.ID, "wf0"})
		require.NoError(t, err)
		require.Equal(t, map[string]string{named.ID: "invoices"}, names, "the names of the workflows that exist")
		names, err = b.s.WorkflowNames(b.ctx, orgB, []string{named.ID})
		require.NoError(t, err)
		require.Empty(t, names, "another organization's workflow has no name here")
	})
	t.Run("another organization's key", func(t *testing.T) {
		p, err := b.s.ListRuns(b.ctx, orgB, storage.RunFilter{Key: "1042"})
		require.NoError(t, err)
		require.Empty(t, p.Items, "orgA's value is invisible to orgB")
		p, err = b.s.ListRuns(b.ctx, orgB, storage.RunFilter{Key: "INV-1"})
		require.NoError(t, err)
		require.Len(t, p.Items, 1)
		require.Equal(t, other.ID, p.Items[0].ID)
	})
}

func testIdempotency(t *testing.T, b *bundle) {
	expires := time.Now().Add(time.Hour)
	first := &svctype.Run{OrgID: orgA, WorkflowID: "wf", Status: svctype.RunRunning, IdempotencyKey: "key", IdempotencyRequest: "sha256:abc"}
	require.NoError(t, b.s.CreateRun(b.ctx, first, expires))

	id, request, err := b.s.RunIDForIdempotencyKey(b.ctx, orgA, "key", time.Now())
	require.NoError(t, err)
	require.Equal(t, first.ID, id)
	require.Equal(t, "sha256:abc", request, "the request the key was first used with is kept with it")

	second := &svctype.Run{ID: newID(), OrgID: orgA, WorkflowID: "wf", Status: svctype.RunRunning, IdempotencyKey: "key"}
	require.ErrorIs(t, b.s.CreateRun(b.ctx, second, expires), storage.ErrConflict)
	_, err = b.s.GetRun(b.ctx, orgA, second.ID)
	require.ErrorIs(t, err, storage.ErrNotFound, "a conflicting CreateRun inserts nothing")

	// Keys are per org.
	inB := &svctype.Run{OrgID: orgB, WorkflowID: "wf", Status: svctype.RunRunning, IdempotencyKey: "key"}
	require.NoError(t, b.s.CreateRun(b.ctx, inB, expires))

	_, _, err = b.s.RunIDForIdempotencyKey(b.ctx, orgA, "key", expires.Add(time.Second))
	require.ErrorIs(t, err, storage.ErrNotFound, "an expired key names no run")
	_, _, err = b.s.RunIDForIdempotencyKey(b.ctx, orgA, "other", time.Now())
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testIdempotencyExpiry(t *testing.T, b *bundle) {
	first := &svctype.Run{OrgID: orgA, WorkflowID: "wf", Status: svctype.RunRunning, IdempotencyKey: "key"}
	require.NoError(t, b.s.CreateRun(b.ctx, first, time.Now().Add(300*time.Millisecond)))
	again := &svctype.Run{OrgID: orgA, WorkflowID: "wf", Status: svctype.RunRunning, IdempotencyKey: "key"}
	require.ErrorIs(t, b.s.CreateRun(b.ctx, again, time.Now().Add(time.Hour)), storage.ErrConflict)

	b.clk.Advance(400 * time.Millisecond)
	require.NoError(t, b.s.CreateRun(b.ctx, again, b.clk.Now().Add(time.Hour)), "an expired key may be used again")
	id, _, err := b.s.RunIDForIdempotencyKey(b.ctx, orgA, "key", b.clk.Now())
	require.NoError(t, err)
	require.Equal(t, again.ID, id)
	_, err = b.s.GetRun(b.ctx, orgA, first.ID)
	require.NoError(t, err, "the first run stays")
}

func testContext(t *testing.T, b *bundle) {
	r := b.run(t, orgA, "wf", time.Time{})
	values := map[string]string{
		"input":  `{"a":[1,2,{"b":null}]}`,
		"number": `1`,
		"float":  `1.50`,
		"string": `"x"`,
		"bool":   `true`,
		"null":   `null`,
	}
	for k, v := range values {
		require.NoError(t, b.s.PutContext(b.ctx, orgA, r.ID, k, json.RawMessage(v)))
	}
	require.NoError(t, b.s.PutContext(b.ctx, orgA, r.ID, "number", json.RawMessage(`2`)))
	values["number"] = `2`

	got, err := b.s.GetContext(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	require.Len(t, got, len(values))
	for k, v := range values {
		require.Equal(t, v, string(got[k]), "key %s", k)
	}

	some, err := b.s.GetContext(b.ctx, orgA, r.ID, "number", "bool", "absent")
	require.NoError(t, err)
	require.Equal(t, map[string]json.RawMessage{"number": json.RawMessage(`2`), "bool": json.RawMessage(`true`)}, some)

	empty, err := b.s.GetContext(b.ctx, orgA, "no-run")
	require.NoError(t, err)
	require.Empty(t, empty)
}

func testSteps(t *testing.T, b *bundle) {
	r := b.run(t, orgA, "wf", time.Time{})
	started := time.Now()
	s0 := &svctype.StepRecord{
		RunID: r.ID, Index: 0, Type: "matcher", Status: svctype.StepProcessing,
		InputSummary: json.RawMessage(`{"in":1}`), StartedAt: &started,
	}
	s1 := &svctype.StepRecord{RunID: r.ID, Index: 1, Type: "loop", Status: svctype.StepPending}
	require.NoError(t, b.s.PutStep(b.ctx, orgA, s1))
	require.NoError(t, b.s.PutStep(b.ctx, orgA, s0))

	finished := started.Add(time.Second)
	s0.Status = svctype.StepCompleted
	s0.Output = json.RawMessage(`{"matched":[1]}`)
	s0.Effects = []svctype.Effect{{Kind: "table_row", Target: "t", Detail: map[string]any{"id": "r1"}}}
	s0.Decisions = []svctype.Decision{{Kind: "filter", Result: true, Reason: "ok"}}
	s0.FinishedAt = &finished
	require.NoError(t, b.s.PutStep(b.ctx, orgA, s0))

	statuses, err := b.s.StepStatuses(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	require.Equal(t, map[int]svctype.StepStatus{0: svctype.StepCompleted, 1: svctype.StepPending}, statuses)
	none, err := b.s.StepStatuses(b.ctx, orgB, r.ID)
	require.NoError(t, err)
	require.Empty(t, none, "another organization's run has no steps")

	got, err := b.s.ListSteps(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, 0, got[0].Index)
	require.Equal(t, r.ID, got[0].RunID)
	require.Equal(t, svctype.StepCompleted, got[0].Status)
	require.Equal(t, "matcher", got[0].Type)
	requireJSON(t, `{"in":1}`, got[0].InputSummary)
	requireJSON(t, `{"matched":[1]}`, got[0].Output)
	require.Equal(t, s0.Effects, got[0].Effects)
	require.Equal(t, s0.Decisions, got[0].Decisions)
	require.WithinDuration(t, started, *got[0].StartedAt, time.Millisecond)
	require.WithinDuration(t, finished, *got[0].FinishedAt, time.Millisecond)
	require.Equal(t, 1, got[1].Index)
	require.Equal(t, svctype.StepPending, got[1].Status)
	require.Nil(t, got[1].StartedAt)
	require.Empty(t, got[1].Effects)

	s1.Status, s1.Error = svctype.StepFailed, "boom"
	require.NoError(t, b.s.PutStep(b.ctx, orgA, s1))
	got, err = b.s.ListSteps(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "boom", got[1].Error)
}

func testLoopItems(t *testing.T, b *bundle) {
	r := b.run(t, orgA, "wf", time.Time{})
	for _, item := range []int{2, 0, 1} {
		require.NoError(t, b.s.PutLoopItem(b.ctx, orgA, r.ID, 3, item, json.RawMessage(fmt.Sprintf(`{"i":%d}`, item))))
	}
	require.NoError(t, b.s.PutLoopItem(b.ctx, orgA, r.ID, 3, 1, json.RawMessage(`{"i":"again"}`)))
	require.NoError(t, b.s.PutLoopItem(b.ctx, orgA, r.ID, 4, 0, json.RawMessage(`7`)))

	got, err := b.s.ListLoopItems(b.ctx, orgA, r.ID, 3)
	require.NoError(t, err)
	require.Len(t, got, 3)
	requireJSON(t, `{"i":0}`, got[0])
	requireJSON(t, `{"i":"again"}`, got[1])
	requireJSON(t, `{"i":2}`, got[2])
	got, err = b.s.ListLoopItems(b.ctx, orgA, r.ID, 4)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, `7`, string(got[0]))
	got, err = b.s.ListLoopItems(b.ctx, orgA, r.ID, 5)
	require.NoError(t, err)
	require.Empty(t, got)
}

func testEvents(t *testing.T, b *bundle) {
	r := b.run(t, orgA, "wf", time.Time{})
	other := b.run(t, orgA, "wf", time.Time{})
	ts := time.Date(2025, 2, 3, 4, 5, 6, 7000, time.UTC)
	events := []svctype.Event{
		{OrgID: orgA, RunID: r.ID, Event: "workflow_run_started", Timestamp: ts, Payload: json.RawMessage(`{"i":0}`)},
		{OrgID: orgA, RunID: r.ID, Event: "step", Payload: json.RawMessage(`{"i":1}`), DeliveryID: "given"},
		{OrgID: orgA, RunID: other.ID, Event: "elsewhere", Payload: json.RawMessage(`{}`)},
	}
	require.NoError(t, b.s.AppendEvents(b.ctx, events))
	require.NoError(t, b.s.AppendEvents(b.ctx, nil))
	require.NotZero(t, events[0].Seq)
	require.Less(t, events[0].Seq, events[1].Seq)
	require.Less(t, events[1].Seq, events[2].Seq)
	require.NotEmpty(t, events[0].DeliveryID)
	require.Equal(t, "given", events[1].DeliveryID)
	require.False(t, events[1].Timestamp.IsZero())

	more := make([]svctype.Event, 5)
	for i := range more {
		more[i] = svctype.Event{OrgID: orgA, RunID: r.ID, Event: "step", Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i+2))}
	}
	require.NoError(t, b.s.AppendEvents(b.ctx, more))
	require.Greater(t, more[0].Seq, events[2].Seq)

	for _, limit := range []int{1, 2, 3, 7, 50} {
		all := collect(t, limit, func(e svctype.Event) string { return e.DeliveryID },
			func(o svctype.ListOptions) (svctype.Page[svctype.Event], error) {
				return b.s.ListRunEvents(b.ctx, orgA, r.ID, o)
			})
		require.Len(t, all, 7)
		for i, e := range all {
			requireJSON(t, fmt.Sprintf(`{"i":%d}`, i), e.Payload)
			require.Equal(t, r.ID, e.RunID)
			require.Equal(t, orgA, e.OrgID)
			if i > 0 {
				require.Less(t, all[i-1].Seq, e.Seq, "oldest first")
			}
		}
		require.Equal(t, "workflow_run_started", all[0].Event)
		require.True(t, ts.Equal(all[0].Timestamp))
		require.Equal(t, events[0].DeliveryID, all[0].DeliveryID)
	}
}

func testPageLimits(t *testing.T, b *bundle) {
	r := b.run(t, orgA, "wf", time.Time{})
	events := make([]svctype.Event, 501)
	for i := range events {
		events[i] = svctype.Event{OrgID: orgA, RunID: r.ID, Event: "e", Payload: json.RawMessage(`{}`)}
	}
	require.NoError(t, b.s.AppendEvents(b.ctx, events))
	for i := 1; i < len(events); i++ {
		require.Less(t, events[i-1].Seq, events[i].Seq, "Seq follows the order given")
	}
	tests := []struct {
		limit, want int
		more        bool
	}{
		{0, 50, true},
		{-1, 50, true},
		{10, 10, true},
		{500, 500, true},
		{1000, 500, true},
	}
	for _, tt := range tests {
		page, err := b.s.ListRunEvents(b.ctx, orgA, r.ID, svctype.ListOptions{Limit: tt.limit})
		require.NoError(t, err)
		require.Len(t, page.Items, tt.want, "limit %d", tt.limit)
		require.Equal(t, tt.more, page.NextCursor != "", "limit %d", tt.limit)
		require.Equal(t, events[0].Seq, page.Items[0].Seq)
	}
	page, err := b.s.ListRunEvents(b.ctx, orgA, r.ID, svctype.ListOptions{Limit: 500})
	require.NoError(t, err)
	last, err := b.s.ListRunEvents(b.ctx, orgA, r.ID, svctype.ListOptions{Limit: 500, Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Len(t, last.Items, 1)
	require.Empty(t, last.NextCursor, "the last page has no cursor")
	require.Equal(t, events[500].Seq, last.Items[0].Seq)
}

func testMalformedCursor(t *testing.T, b *bundle) {
	bad := svctype.ListOptions{Cursor: "not a cursor!"}
	calls := map[string]func() error{
		"workflows": func() error { _, err := b.s.ListWorkflows(b.ctx, orgA, bad); return err },
		"runs":      func() error { _, err := b.s.ListRuns(b.ctx, orgA, storage.RunFilter{ListOptions: bad}); return err },
		"events":    func() error { _, err := b.s.ListRunEvents(b.ctx, orgA, "r", bad); return err },
		"tables":    func() error { _, err := b.s.ListTables(b.ctx, orgA, bad); return err },
		"rows":      func() error { _, err := b.s.ListRows(b.ctx, orgA, "t", nil, bad); return err },
	}
	for name, call := range calls {
		require.ErrorIs(t, call(), storage.ErrInvalidCursor, name)
	}
}

func testJobClaim(t *testing.T, b *bundle) {
	past := time.Now().Add(-time.Minute)
	j2 := b.job(t, orgA, past.Add(time.Second))
	j1 := b.job(t, orgB, past)
	b.job(t, orgA, time.Now().Add(time.Hour))
	n := b.countJobs(t)
	require.Equal(t, 3, n)

	claimed, err := b.s.ClaimJobs(b.ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 2, "only due jobs")
	require.Equal(t, j1.ID, claimed[0].ID, "oldest run_at first")
	require.Equal(t, j2.ID, claimed[1].ID)
	for _, c := range claimed {
		require.Equal(t, 1, c.Attempts)
		require.NotEmpty(t, c.LeaseToken)
		require.NotNil(t, c.LeaseUntil)
		require.WithinDuration(t, time.Now().Add(time.Minute), *c.LeaseUntil, 5*time.Second)
		requireJSON(t, `{"step":0}`, c.Payload)
		require.Equal(t, svctype.JobRunStep, c.Kind)
	}
	require.NotEqual(t, claimed[0].LeaseToken, claimed[1].LeaseToken, "a token per job")
	require.Equal(t, orgB, claimed[0].OrgID)
	require.Equal(t, j1.RunID, claimed[0].RunID)

	again, err := b.s.ClaimJobs(b.ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, again, "a leased job is not claimable")

	none, err := b.s.ClaimJobs(b.ctx, 0, time.Minute)
	require.NoError(t, err)
	require.Empty(t, none)

	require.NoError(t, b.s.CompleteJob(b.ctx, &claimed[0]))
	require.ErrorIs(t, b.s.CompleteJob(b.ctx, &claimed[0]), storage.ErrLeaseLost, "completed jobs are gone")
	n = b.countJobs(t)
	require.Equal(t, 2, n)

	// n caps a claim.
	for range 3 {
		b.job(t, orgA, past)
	}
	some, err := b.s.ClaimJobs(b.ctx, 2, time.Minute)
	require.NoError(t, err)
	require.Len(t, some, 2)
}

// testJobClaimFair: an organization's backlog, however old, does not hold back another
// organization's job, and within an organization jobs are claimed oldest first.
func testJobClaimFair(t *testing.T, b *bundle) {
	const orgC = "org_c"
	base := time.Now().Add(-time.Hour)
	var backlog []int64
	for i := range 40 {
		backlog = append(backlog, b.job(t, orgA, base.Add(time.Duration(i)*time.Second)).ID)
	}
	late := b.job(t, orgB, time.Now().Add(-time.Second)) // accepted after all of orgA's
	future := b.job(t, orgC, time.Now().Add(time.Hour))  // an org with only a future job

	var order []svctype.Job
	for {
		got, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
		require.NoError(t, err)
		if len(got) == 0 {
			break
		}
		require.Len(t, got, 1)
		order = append(order, got[0])
	}
	require.Len(t, order, 41, "every due job, never the future one")
	pos := slices.IndexFunc(order, func(j svctype.Job) bool { return j.ID == late.ID })
	require.LessOrEqual(t, pos, 1, "org_b's one job is taken within one claim per other organization, not after org_a's backlog")
	var gotA []int64
	for _, j := range order {
		require.NotEqual(t, future.ID, j.ID)
		if j.OrgID == orgA {
			gotA = append(gotA, j.ID)
		}
	}
	require.Equal(t, backlog, gotA, "within an organization, oldest first")

	// Batches take organizations in turn too.
	for i := range 6 {
		b.job(t, orgA, base.Add(time.Duration(i)*time.Second))
	}
	b.job(t, orgB, time.Now().Add(-time.Second))
	b.job(t, orgC, time.Now().Add(-time.Second))
	got, err := b.s.ClaimJobs(b.ctx, 3, time.Minute)
	require.NoError(t, err)
	orgs := map[string]int{}
	for _, j := range got {
		orgs[j.OrgID]++
	}
	require.Equal(t, map[string]int{orgA: 1, orgB: 1, orgC: 1}, orgs, "one job of each organization")
}

// testJobClaimCounts: Claims grows with every lease taken and survives a hand-back.
func testJobClaimCounts(t *testing.T, b *bundle) {
	b.job(t, orgA, time.Now().Add(-time.Second))
	got, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.EqualValues(t, 1, got[0].Claims)
	job := got[0]
	require.NoError(t, b.s.RenewJob(b.ctx, &job, 0)) // handed back
	got, err = b.s.ClaimJobs(b.ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.EqualValues(t, 2, got[0].Claims)
}

// testJobTenancy: a job is named by its org id as well as its id and lease token. A caller
// that names another organization touches nothing, even with the right id and token: no
// renewal (keeping or freeing the lease), no completion, no lease extension, in a
// transaction or not.
func testJobTenancy(t *testing.T, b *bundle) {
	b.job(t, orgA, time.Now().Add(-time.Second))
	const lease = 300 * time.Millisecond
	claimed, err := b.s.ClaimJobs(b.ctx, 1, lease)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	held := claimed[0]
	require.Equal(t, orgA, held.OrgID)

	forge := func() *svctype.Job {
		j := held
		j.OrgID = orgB
		j.Payload = json.RawMessage(`{"evil":true}`)
		j.Attempts = 99
		return &j
	}
	require.ErrorIs(t, b.s.RenewJob(b.ctx, forge(), time.Hour), storage.ErrLeaseLost, "renew keeping the lease")
	require.ErrorIs(t, b.s.RenewJob(b.ctx, forge(), 0), storage.ErrLeaseLost, "renew freeing the lease")
	require.ErrorIs(t, b.s.CompleteJob(b.ctx, forge()), storage.ErrLeaseLost, "complete")
	err = b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.RenewJob(ctx, forge(), time.Hour); !errors.Is(err, storage.ErrLeaseLost) {
			return fmt.Errorf("renew in a transaction: want ErrLeaseLost, got %v", err)
		}
		return tx.CompleteJob(ctx, forge())
	})
	require.ErrorIs(t, err, storage.ErrLeaseLost, "complete in a transaction")
	extend := []svctype.Job{*forge()}
	require.NoError(t, b.s.ExtendLeases(b.ctx, extend, time.Hour))
	require.Equal(t, held.LeaseUntil, extend[0].LeaseUntil, "another organization's job is not extended")

	// The row is as the claim left it: its lease lapses on time, and the next claim sees
	// the original payload and attempt count.
	b.clk.Advance(lease + 100*time.Millisecond)
	again, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, again, 1, "neither renewed, extended nor completed")
	require.Equal(t, held.ID, again[0].ID)
	require.Equal(t, orgA, again[0].OrgID)
	requireJSON(t, `{"step":0}`, again[0].Payload)
	require.Equal(t, 2, again[0].Attempts)

	// Its own organization's holder still can.
	job := again[0]
	require.NoError(t, b.s.RenewJob(b.ctx, &job, time.Hour))
	require.NoError(t, b.s.CompleteJob(b.ctx, &job))
}

func testJobLeaseExpiry(t *testing.T, b *bundle) {
	b.job(t, orgA, time.Now().Add(-time.Second))
	first, err := b.s.ClaimJobs(b.ctx, 1, 200*time.Millisecond)
	require.NoError(t, err)
	require.Len(t, first, 1)
	b.clk.Advance(300 * time.Millisecond)

	second, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, second, 1, "an expired lease is claimable")
	require.Equal(t, first[0].ID, second[0].ID)
	require.NotEqual(t, first[0].LeaseToken, second[0].LeaseToken, "with a new token")
	require.Equal(t, 2, second[0].Attempts)

	stale := first[0]
	require.ErrorIs(t, b.s.RenewJob(b.ctx, &stale, time.Minute), storage.ErrLeaseLost)
	require.ErrorIs(t, b.s.CompleteJob(b.ctx, &stale), storage.ErrLeaseLost)
	require.NoError(t, b.s.ExtendLeases(b.ctx, []svctype.Job{stale}, time.Hour))
	require.NoError(t, b.s.CompleteJob(b.ctx, &second[0]))
	n := b.countJobs(t)
	require.Zero(t, n)
}

// Jobs run on the store's clock (store.WithNow), not the wall clock: run_at defaults to it,
// a job is due and a lease lapses by it.
func testJobClock(t *testing.T, b *bundle) {
	b.clk.Advance(24 * time.Hour)
	now := b.job(t, orgA, time.Time{})
	require.WithinDuration(t, b.clk.Now(), now.RunAt, time.Minute, "run_at is the store's now")
	tomorrow := b.job(t, orgA, b.clk.Now().Add(24*time.Hour))
	claimed, err := b.s.ClaimJobs(b.ctx, 10, time.Hour)
	require.NoError(t, err)
	require.Len(t, claimed, 1, "a day ahead of the wall clock, only the job due now")
	require.Equal(t, now.ID, claimed[0].ID)
	require.WithinDuration(t, b.clk.Now().Add(time.Hour), *claimed[0].LeaseUntil, time.Minute)

	b.clk.Advance(24 * time.Hour)
	claimed, err = b.s.ClaimJobs(b.ctx, 10, time.Hour)
	require.NoError(t, err)
	require.Len(t, claimed, 2, "the lease lapsed and the next job fell due")
	require.ElementsMatch(t, []int64{now.ID, tomorrow.ID}, []int64{claimed[0].ID, claimed[1].ID})
	require.NoError(t, b.s.ExtendLeases(b.ctx, claimed, time.Hour))
	for _, j := range claimed {
		require.WithinDuration(t, b.clk.Now().Add(time.Hour), *j.LeaseUntil, time.Minute, "extended from the store's now")
	}
}

func testJobRenew(t *testing.T, b *bundle) {
	b.job(t, orgA, time.Now().Add(-time.Second))
	claimed, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	job := claimed[0]

	// Keep the lease, move to the next step.
	job.Payload = json.RawMessage(`{"step":1}`)
	job.RunAt = time.Now().Add(-time.Second)
	require.NoError(t, b.s.RenewJob(b.ctx, &job, time.Hour))
	require.Equal(t, claimed[0].LeaseToken, job.LeaseToken)
	require.WithinDuration(t, time.Now().Add(time.Hour), *job.LeaseUntil, 5*time.Second)
	got, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Empty(t, got, "a renewed lease holds")

	// Free it: claimable at run_at, by a new holder.
	job.Payload = json.RawMessage(`{"step":2}`)
	require.NoError(t, b.s.RenewJob(b.ctx, &job, 0))
	require.Nil(t, job.LeaseUntil)
	got, err = b.s.ClaimJobs(b.ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)
	requireJSON(t, `{"step":2}`, got[0].Payload)
	require.NotEqual(t, claimed[0].LeaseToken, got[0].LeaseToken)
	require.ErrorIs(t, b.s.RenewJob(b.ctx, &claimed[0], 0), storage.ErrLeaseLost, "the freed token is void")

	// Renew into the future: not due until run_at.
	next := got[0]
	next.RunAt = time.Now().Add(time.Hour)
	require.NoError(t, b.s.RenewJob(b.ctx, &next, 0))
	got, err = b.s.ClaimJobs(b.ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Empty(t, got)

	missing := svctype.Job{ID: 999999, LeaseToken: "x"}
	require.ErrorIs(t, b.s.RenewJob(b.ctx, &missing, time.Minute), storage.ErrLeaseLost)
	require.ErrorIs(t, b.s.CompleteJob(b.ctx, &missing), storage.ErrLeaseLost)
	unleased := svctype.Job{ID: next.ID}
	require.ErrorIs(t, b.s.CompleteJob(b.ctx, &unleased), storage.ErrLeaseLost, "an empty token holds nothing")
}

func testJobExtendLeases(t *testing.T, b *bundle) {
	for range 3 {
		b.job(t, orgA, time.Now().Add(-time.Second))
	}
	claimed, err := b.s.ClaimJobs(b.ctx, 3, 200*time.Millisecond)
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	stale := claimed[2]
	stale.LeaseToken = "stale"
	toExtend := []svctype.Job{claimed[0], claimed[1], stale}
	require.NoError(t, b.s.ExtendLeases(b.ctx, toExtend, time.Hour))
	require.WithinDuration(t, time.Now().Add(time.Hour), *toExtend[0].LeaseUntil, 5*time.Second)
	require.NoError(t, b.s.ExtendLeases(b.ctx, nil, time.Hour))

	b.clk.Advance(300 * time.Millisecond)
	got, err := b.s.ClaimJobs(b.ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1, "only the job extended with a stale token expired")
	require.Equal(t, claimed[2].ID, got[0].ID)
	require.NoError(t, b.s.RenewJob(b.ctx, &claimed[0], time.Hour), "extended leases are still held")
}

func testJobDelete(t *testing.T, b *bundle) {
	run := newID()
	wf := newID()
	jobs := []*svctype.Job{
		{OrgID: orgA, Kind: svctype.JobRunStep, RunID: run},
		{OrgID: orgA, Kind: "form_ttl", RunID: run},
		{OrgID: orgA, Kind: svctype.JobSchedule, WorkflowID: wf},
		{OrgID: orgB, Kind: svctype.JobSchedule, WorkflowID: wf},
		{OrgID: orgB, Kind: svctype.JobRunStep, RunID: run},
	}
	for _, j := range jobs {
		require.NoError(t, b.s.EnqueueJob(b.ctx, j))
		require.False(t, j.RunAt.IsZero(), "run_at defaults to now")
	}
	count := func() int { return b.countJobs(t) }
	require.NoError(t, b.s.DeleteJobs(b.ctx, orgA, "form_ttl", run, ""))
	require.Equal(t, 4, count())
	require.NoError(t, b.s.DeleteJobs(b.ctx, orgA, svctype.JobSchedule, "", wf))
	require.Equal(t, 3, count())
	require.NoError(t, b.s.DeleteJobs(b.ctx, orgA, "", "", ""))
	require.Equal(t, 3, count(), "no id deletes nothing")
	require.NoError(t, b.s.DeleteJobs(b.ctx, orgA, "", run, ""))
	require.Equal(t, 2, count())
	claimed, err := b.s.ClaimJobs(b.ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 2)
	for _, c := range claimed {
		require.Equal(t, orgB, c.OrgID, "other orgs' jobs stay")
	}
}

func testJobClaimConcurrent(t *testing.T, b *bundle) {
	const jobs, workers = 200, 8
	require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		for range jobs {
			j := &svctype.Job{OrgID: orgA, Kind: svctype.JobRunStep, RunAt: time.Now().Add(-time.Second)}
			if err := tx.EnqueueJob(ctx, j); err != nil {
				return err
			}
		}
		return nil
	}))
	var (
		mu   sync.Mutex
		seen = map[int64]int{}
		wg   sync.WaitGroup
		errs = make(chan error, workers)
	)
	for range workers {
		wg.Go(func() {
			for {
				got, err := b.s.ClaimJobs(b.ctx, 3, time.Minute)
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, j := range got {
					seen[j.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, seen, jobs, "every job claimed")
	for id, n := range seen {
		require.Equal(t, 1, n, "job %d handed out %d times", id, n)
	}
}

func testTables(t *testing.T, b *bundle) {
	b.table(t, orgA, "contacts")
	got, err := b.s.GetTable(b.ctx, orgA, "contacts")
	require.NoError(t, err)
	require.Equal(t, "contacts", got.Name)
	require.Equal(t, orgA, got.OrgID)
	require.Equal(t, map[string]string{"email": "text", "n": "number"}, got.Fields)
	require.False(t, got.CreatedAt.IsZero())

	err = b.s.CreateTable(b.ctx, &svctype.Table{OrgID: orgA, Name: "contacts", Fields: map[string]string{}})
	require.ErrorIs(t, err, storage.ErrConflict)
	b.table(t, orgB, "contacts")
	_, err = b.s.GetTable(b.ctx, orgA, "missing")
	require.ErrorIs(t, err, storage.ErrNotFound)

	names := []string{"contacts"}
	for _, n := range []string{"zeta", "alpha", "mid", "beta"} {
		b.table(t, orgA, n)
		names = append(names, n)
	}
	sort.Strings(names)
	for _, limit := range []int{1, 2, 5, 6} {
		all := collect(t, limit, func(t svctype.Table) string { return t.Name },
			func(o svctype.ListOptions) (svctype.Page[svctype.Table], error) {
				return b.s.ListTables(b.ctx, orgA, o)
			})
		got := make([]string, len(all))
		for i, tb := range all {
			got[i] = tb.Name
		}
		require.Equal(t, names, got)
	}
}

func testRows(t *testing.T, b *bundle) {
	_, err := b.s.InsertRow(b.ctx, orgA, "missing", map[string]any{"a": 1})
	require.ErrorIs(t, err, storage.ErrNotFound, "no such table")
	_, _, err = b.s.UpsertRow(b.ctx, orgA, "missing", []string{"a"}, map[string]any{"a": 1})
	require.ErrorIs(t, err, storage.ErrNotFound, "no such table")

	b.table(t, orgA, "t")
	r1, err := b.s.InsertRow(b.ctx, orgA, "t", map[string]any{"email": "a@x", "n": 1})
	require.NoError(t, err)
	require.NotEmpty(t, r1.ID)
	require.Equal(t, map[string]any{"email": "a@x", "n": json.Number("1")}, r1.Data)
	r2, err := b.s.InsertRow(b.ctx, orgA, "t", map[string]any{"email": "a@x", "n": 1})
	require.NoError(t, err, "InsertRow appends, even identical rows")
	require.NotEqual(t, r1.ID, r2.ID)
	r3, err := b.s.InsertRow(b.ctx, orgA, "t", nil)
	require.NoError(t, err)
	require.Empty(t, r3.Data)

	rows, err := b.s.ReadRows(b.ctx, orgA, "t", nil, 0)
	require.NoError(t, err)
	require.Len(t, rows, 3)
	require.Equal(t, []string{r1.ID, r2.ID, r3.ID}, []string{rows[0].ID, rows[1].ID, rows[2].ID}, "oldest first")
	require.Equal(t, r1.Data, rows[0].Data)
	require.True(t, r1.CreatedAt.Equal(rows[0].CreatedAt))
}

func testUpsert(t *testing.T, b *bundle) {
	b.table(t, orgA, "t")
	keys := []string{"email", "n"}
	r1, inserted, err := b.s.UpsertRow(b.ctx, orgA, "t", keys, map[string]any{"email": "a@x", "n": 1, "v": "first"})
	require.NoError(t, err)
	require.True(t, inserted)
	r2, inserted, err := b.s.UpsertRow(b.ctx, orgA, "t", keys, map[string]any{"email": "a@x", "n": 1.0, "w": "second"})
	require.NoError(t, err)
	require.False(t, inserted, "same keys (1 and 1.0 alike) update")
	require.Equal(t, r1.ID, r2.ID)
	require.True(t, r1.CreatedAt.Equal(r2.CreatedAt), "created_at kept")

	rows, err := b.s.ReadRows(b.ctx, orgA, "t", nil, 0)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, map[string]any{"email": "a@x", "n": json.Number("1"), "w": "second"}, rows[0].Data, "data replaced")

	tests := []struct {
		name string
		keys []string
		row  map[string]any
	}{
		{"string key value", keys, map[string]any{"email": "a@x", "n": "1"}},
		{"other value", keys, map[string]any{"email": "b@x", "n": 1}},
		{"keys in another order", []string{"n", "email"}, map[string]any{"email": "a@x", "n": 1}},
		{"fewer keys", []string{"email"}, map[string]any{"email": "a@x", "n": 1}},
	}
	for _, tt := range tests {
		_, inserted, err := b.s.UpsertRow(b.ctx, orgA, "t", tt.keys, tt.row)
		require.NoError(t, err, tt.name)
		require.True(t, inserted, tt.name)
		_, inserted, err = b.s.UpsertRow(b.ctx, orgA, "t", tt.keys, tt.row)
		require.NoError(t, err, tt.name)
		require.False(t, inserted, "%s: idempotent", tt.name)
	}
	rows, err = b.s.ReadRows(b.ctx, orgA, "t", nil, 0)
	require.NoError(t, err)
	require.Len(t, rows, 1+len(tests))

	// Rows from InsertRow never collide with each other or with upserted ones.
	for range 2 {
		_, err := b.s.InsertRow(b.ctx, orgA, "t", map[string]any{"email": "a@x", "n": 1})
		require.NoError(t, err)
	}
	_, _, err = b.s.UpsertRow(b.ctx, orgA, "t", nil, map[string]any{"email": "a@x"})
	require.Error(t, err, "an upsert needs key columns")
}

func testReadRowsWhere(t *testing.T, b *bundle) {
	b.table(t, orgA, "t")
	data := []map[string]any{
		{"name": "a", "n": 1, "s": "1", "ok": true, "nil": nil, "obj": map[string]any{"x": 1, "y": "z"}, "arr": []any{1, "two"}},
		{"name": "b", "n": 1.5, "s": "x", "ok": false},
		{"name": "c", "n": 2, "s": "1", "ok": true},
		{"name": "d", "n": "1", "s": 1, "ok": "true", "nil": "null"},
		{"name": "e", "n": 1, "s": "1", "ok": true, "weird key.with \"quotes\"": "yes"},
		{"name": "f", "n": 1.0, "s": "1", "ok": true},
	}
	for _, d := range data {
		_, err := b.s.InsertRow(b.ctx, orgA, "t", d)
		require.NoError(t, err)
	}
	tests := []struct {
		name  string
		where map[string]any
		limit int
		want  []string
	}{
		{"no filter", nil, 0, []string{"a", "b", "c", "d", "e", "f"}},
		{"string", map[string]any{"name": "c"}, 0, []string{"c"}},
		{"number matches numbers only", map[string]any{"n": 1}, 0, []string{"a", "e", "f"}},
		{"float equals integer", map[string]any{"n": 1.0}, 0, []string{"a", "e", "f"}},
		{"fraction", map[string]any{"n": 1.5}, 0, []string{"b"}},
		{"string matches strings only", map[string]any{"n": "1"}, 0, []string{"d"}},
		{"string column vs number", map[string]any{"s": 1}, 0, []string{"d"}},
		{"bool", map[string]any{"ok": true}, 0, []string{"a", "c", "e", "f"}},
		{"false", map[string]any{"ok": false}, 0, []string{"b"}},
		{"null is not missing", map[string]any{"nil": nil}, 0, []string{"a"}},
		{"object", map[string]any{"obj": map[string]any{"y": "z", "x": 1.0}}, 0, []string{"a"}},
		{"array", map[string]any{"arr": []any{1, "two"}}, 0, []string{"a"}},
		{"array order counts", map[string]any{"arr": []any{"two", 1}}, 0, nil},
		{"every entry", map[string]any{"n": 1, "s": "1", "ok": true}, 0, []string{"a", "e", "f"}},
		{"missing column", map[string]any{"nope": "a"}, 0, nil},
		{"odd key", map[string]any{"weird key.with \"quotes\"": "yes"}, 0, []string{"e"}},
		{"limit after filter", map[string]any{"n": 1}, 2, []string{"a", "e"}},
		{"limit without filter", nil, 1, []string{"a"}},
		{"limit over matches", map[string]any{"name": "f"}, 5, []string{"f"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := b.s.ReadRows(b.ctx, orgA, "t", tt.where, tt.limit)
			require.NoError(t, err)
			var got []string
			for _, r := range rows {
				got = append(got, r.Data["name"].(string))
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// testListRows pages 2,000 rows, written in one transaction (microseconds apart, some
// alike), at several page sizes: each row once, oldest first, and a where filter kept from
// page to page.
func testListRows(t *testing.T, b *bundle) {
	b.table(t, orgA, "t")
	b.table(t, orgB, "t")
	const n = 2000
	var want, even []string
	err := b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		for i := range n {
			var (
				r   svctype.Row
				err error
			)
			row := map[string]any{"email": fmt.Sprintf("u%d@x", i), "n": i % 2}
			if i%3 == 0 {
				r, _, err = tx.UpsertRow(ctx, orgA, "t", []string{"email"}, row)
			} else {
				r, err = tx.InsertRow(ctx, orgA, "t", row)
			}
			if err != nil {
				return err
			}
			want = append(want, r.ID)
			if i%2 == 0 {
				even = append(even, r.ID)
			}
		}
		_, err := tx.InsertRow(ctx, orgB, "t", map[string]any{"email": "b@x", "n": 0})
		return err
	})
	require.NoError(t, err)
	ids := func(rows []svctype.Row) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = r.ID
		}
		return out
	}
	key := func(r svctype.Row) string { return r.ID }
	list := func(where map[string]any) func(svctype.ListOptions) (svctype.Page[svctype.Row], error) {
		return func(o svctype.ListOptions) (svctype.Page[svctype.Row], error) {
			return b.s.ListRows(b.ctx, orgA, "t", where, o)
		}
	}
	// ReadRows' order is the listing's order.
	all, err := b.s.ReadRows(b.ctx, orgA, "t", nil, 0)
	require.NoError(t, err)
	require.Equal(t, want, ids(all), "oldest first, by (created_at, id)")
	for _, limit := range []int{500, 333, 7} {
		require.Equal(t, want, ids(collect(t, limit, key, list(nil))), "limit %d", limit)
	}
	require.Equal(t, even, ids(collect(t, 100, key, list(map[string]any{"n": 0}))), "where holds on every page")

	page, err := b.s.ListRows(b.ctx, orgA, "t", nil, svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 50, "default page size")
	page, err = b.s.ListRows(b.ctx, orgA, "t", nil, svctype.ListOptions{Limit: 100000})
	require.NoError(t, err)
	require.Len(t, page.Items, 500, "page size capped")
	require.Equal(t, map[string]any{"email": "u0@x", "n": json.Number("0")}, page.Items[0].Data)

	// Another org's table of the same name is its own; a missing table has no rows.
	pb, err := b.s.ListRows(b.ctx, orgB, "t", nil, svctype.ListOptions{Limit: 1})
	require.NoError(t, err)
	require.Len(t, pb.Items, 1)
	require.Empty(t, pb.NextCursor)
	none, err := b.s.ListRows(b.ctx, orgA, "missing", nil, svctype.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, none.Items)
	require.Empty(t, none.NextCursor)
}

func testUpdateRows(t *testing.T, b *bundle) {
	b.table(t, orgA, "t")
	for _, d := range []map[string]any{
		{"name": "a", "group": 1, "obj": map[string]any{"keep": 1, "x": 1}},
		{"name": "b", "group": 1},
		{"name": "c", "group": "1"},
	} {
		_, err := b.s.InsertRow(b.ctx, orgA, "t", d)
		require.NoError(t, err)
	}
	n, err := b.s.UpdateRows(b.ctx, orgA, "t", map[string]any{"group": 1},
		map[string]any{"status": "done", "obj": map[string]any{"x": 2}, "gone": nil})
	require.NoError(t, err)
	require.Equal(t, 2, n)

	rows, err := b.s.ReadRows(b.ctx, orgA, "t", nil, 0)
	require.NoError(t, err)
	require.Len(t, rows, 3)
	require.Equal(t, map[string]any{
		"name": "a", "group": json.Number("1"), "status": "done", "obj": map[string]any{"x": json.Number("2")}, "gone": nil,
	}, rows[0].Data, "set replaces top-level columns")
	require.Equal(t, map[string]any{
		"name": "b", "group": json.Number("1"), "status": "done", "obj": map[string]any{"x": json.Number("2")}, "gone": nil,
	}, rows[1].Data)
	require.Equal(t, map[string]any{"name": "c", "group": "1"}, rows[2].Data, "not matched")
	require.False(t, rows[0].UpdatedAt.Before(rows[0].CreatedAt))

	n, err = b.s.UpdateRows(b.ctx, orgA, "t", map[string]any{"status": "done"}, map[string]any{"status": "again"})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	rows, err = b.s.ReadRows(b.ctx, orgA, "t", map[string]any{"status": "again"}, 0)
	require.NoError(t, err)
	require.Len(t, rows, 2)

	n, err = b.s.UpdateRows(b.ctx, orgA, "t", map[string]any{"name": "zzz"}, map[string]any{"x": 1})
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = b.s.UpdateRows(b.ctx, orgA, "t", nil, map[string]any{"all": true})
	require.NoError(t, err)
	require.Equal(t, 3, n)

	n, err = b.s.UpdateRows(b.ctx, orgA, "t", map[string]any{"name": "c"}, nil)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rows, err = b.s.ReadRows(b.ctx, orgA, "t", map[string]any{"name": "c"}, 0)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"name": "c", "group": "1", "all": true}, rows[0].Data, "an empty set changes nothing")
}

// testUpdateRowsKeys: a patch that changes an upserted row's key columns moves the row to
// its new key, so upserts stay exact; one that would give two rows the same key is
// ErrConflict and changes nothing. Rows from InsertRow have no key.
func testUpdateRowsKeys(t *testing.T, b *bundle) {
	b.table(t, orgA, "t")
	email := []string{"email"}
	upsert := func(keys []string, row map[string]any) (svctype.Row, bool) {
		t.Helper()
		r, inserted, err := b.s.UpsertRow(b.ctx, orgA, "t", keys, row)
		require.NoError(t, err)
		return r, inserted
	}
	a, _ := upsert(email, map[string]any{"email": "a@x", "n": 1})
	bRow, _ := upsert(email, map[string]any{"email": "b@x", "n": 2})
	c, err := b.s.InsertRow(b.ctx, orgA, "t", map[string]any{"email": "c@x", "n": 3})
	require.NoError(t, err)
	snapshot := func() []svctype.Row {
		t.Helper()
		rows, err := b.s.ReadRows(b.ctx, orgA, "t", nil, 0)
		require.NoError(t, err)
		return rows
	}

	n, err := b.s.UpdateRows(b.ctx, orgA, "t", map[string]any{"email": "a@x"}, map[string]any{"email": "z@x"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r, inserted := upsert(email, map[string]any{"email": "z@x", "n": 9})
	require.False(t, inserted, "the patched row holds its new key")
	require.Equal(t, a.ID, r.ID)
	r, inserted = upsert(email, map[string]any{"email": "a@x", "n": 10})
	require.True(t, inserted, "the old key is free")
	a2 := r

	before := snapshot()
	conflicts := []struct {
		name       string
		where, set map[string]any
	}{
		{"onto another row's key", map[string]any{"email": "b@x"}, map[string]any{"email": "z@x", "n": 0}},
		{"two matched rows onto one key", map[string]any{}, map[string]any{"email": "q@x"}},
		{"onto a null key", map[string]any{"email": "b@x"}, map[string]any{"email": nil}},
	}
	for _, tt := range conflicts {
		if tt.name == "onto a null key" {
			upsert(email, map[string]any{"n": 11}) // its key is email: null
			before = snapshot()
		}
		_, err := b.s.UpdateRows(b.ctx, orgA, "t", tt.where, tt.set)
		require.ErrorIs(t, err, storage.ErrConflict, tt.name)
		require.Equal(t, before, snapshot(), "%s: nothing changed", tt.name)
	}

	// An InsertRow row has no key: patching it onto a keyed row's value is no conflict, and
	// upserts keep finding the keyed row.
	n, err = b.s.UpdateRows(b.ctx, orgA, "t", map[string]any{"email": "c@x"}, map[string]any{"email": "b@x"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r, inserted = upsert(email, map[string]any{"email": "b@x", "n": 12})
	require.False(t, inserted)
	require.Equal(t, bRow.ID, r.ID)
	require.NotEqual(t, c.ID, r.ID)

	// Composite keys, in their order; a patch of a non-key column leaves the key alone.
	both := []string{"n", "email"}
	k1, _ := upsert(both, map[string]any{"email": "k@x", "n": 1})
	n, err = b.s.UpdateRows(b.ctx, orgA, "t", map[string]any{"email": "k@x"}, map[string]any{"n": 2, "extra": true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r, inserted = upsert(both, map[string]any{"email": "k@x", "n": 2.0})
	require.False(t, inserted, "composite key recomputed in key order, numbers alike")
	require.Equal(t, k1.ID, r.ID)
	n, err = b.s.UpdateRows(b.ctx, orgA, "t", map[string]any{"email": "a@x"}, map[string]any{"status": "seen"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r, inserted = upsert(email, map[string]any{"email": "a@x"})
	require.False(t, inserted)
	require.Equal(t, a2.ID, r.ID)

	// A key patched to its own value is no conflict.
	n, err = b.s.UpdateRows(b.ctx, orgA, "t", map[string]any{"email": "z@x"}, map[string]any{"email": "z@x"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// testTenancy creates one of everything in org A, then calls every method as org B with
// A's ids: each answers ErrNotFound or nothing, and A's data is unchanged afterwards.
func testTenancy(t *testing.T, b *bundle) {
	w := b.workflow(t, orgA, "wf")
	run := &svctype.Run{OrgID: orgA, WorkflowID: w.ID, WorkflowVersion: 1, Status: svctype.RunRunning, IdempotencyKey: "idem"}
	require.NoError(t, b.s.CreateRun(b.ctx, run, time.Now().Add(time.Hour)))
	require.NoError(t, b.s.PutContext(b.ctx, orgA, run.ID, "k", json.RawMessage(`"a"`)))
	require.NoError(t, b.s.PutStep(b.ctx, orgA, &svctype.StepRecord{RunID: run.ID, Index: 0, Type: "x", Status: svctype.StepCompleted}))
	require.NoError(t, b.s.PutLoopItem(b.ctx, orgA, run.ID, 0, 0, json.RawMessage(`"a"`)))
	require.NoError(t, b.s.AppendEvents(b.ctx, []svctype.Event{{OrgID: orgA, RunID: run.ID, Event: "e", Payload: json.RawMessage(`{}`)}}))
	require.NoError(t, b.s.EnqueueJob(b.ctx, &svctype.Job{OrgID: orgA, Kind: svctype.JobRunStep, RunID: run.ID, WorkflowID: w.ID, RunAt: time.Now().Add(time.Hour)}))
	b.table(t, orgA, "tbl")
	row, err := b.s.InsertRow(b.ctx, orgA, "tbl", map[string]any{"k": "a"})
	require.NoError(t, err)

	notFound := []struct {
		name string
		call func() error
	}{
		{"GetWorkflow", func() error { _, err := b.s.GetWorkflow(b.ctx, orgB, w.ID); return err }},
		{"GetWorkflowVersion", func() error { _, err := b.s.GetWorkflowVersion(b.ctx, orgB, w.ID, 1); return err }},
		{"UpdateWorkflow", func() error {
			u := *w
			u.OrgID, u.Version, u.Definition = orgB, 2, json.RawMessage(`{"evil":true}`)
			return b.s.UpdateWorkflow(b.ctx, &u)
		}},
		{"DeleteWorkflow", func() error { return b.s.DeleteWorkflow(b.ctx, orgB, w.ID) }},
		{"GetRun", func() error { _, err := b.s.GetRun(b.ctx, orgB, run.ID); return err }},
		{"UpdateRun", func() error {
			u := *run
			u.OrgID, u.Status = orgB, svctype.RunCancelled
			return b.s.UpdateRun(b.ctx, &u)
		}},
		{"RunIDForIdempotencyKey", func() error { _, _, err := b.s.RunIDForIdempotencyKey(b.ctx, orgB, "idem", time.Now()); return err }},
		{"GetTable", func() error { _, err := b.s.GetTable(b.ctx, orgB, "tbl"); return err }},
		{"InsertRow", func() error { _, err := b.s.InsertRow(b.ctx, orgB, "tbl", map[string]any{"k": "b"}); return err }},
		{"UpsertRow", func() error {
			_, _, err := b.s.UpsertRow(b.ctx, orgB, "tbl", []string{"k"}, map[string]any{"k": "a", "evil": true})
			return err
		}},
	}
	for _, tt := range notFound {
		require.ErrorIs(t, tt.call(), storage.ErrNotFound, tt.name)
	}

	empty := []struct {
		name string
		call func() (int, error)
	}{
		{"ListWorkflows", func() (int, error) {
			p, err := b.s.ListWorkflows(b.ctx, orgB, svctype.ListOptions{})
			return len(p.Items), err
		}},
		{"ListRuns", func() (int, error) {
			p, err := b.s.ListRuns(b.ctx, orgB, storage.RunFilter{WorkflowID: w.ID})
			return len(p.Items), err
		}},
		{"GetContext", func() (int, error) { c, err := b.s.GetContext(b.ctx, orgB, run.ID); return len(c), err }},
		{"ListSteps", func() (int, error) { s, err := b.s.ListSteps(b.ctx, orgB, run.ID); return len(s), err }},
		{"ListLoopItems", func() (int, error) { s, err := b.s.ListLoopItems(b.ctx, orgB, run.ID, 0); return len(s), err }},
		{"ListRunEvents", func() (int, error) {
			p, err := b.s.ListRunEvents(b.ctx, orgB, run.ID, svctype.ListOptions{})
			return len(p.Items), err
		}},
		{"ListTables", func() (int, error) {
			p, err := b.s.ListTables(b.ctx, orgB, svctype.ListOptions{})
			return len(p.Items), err
		}},
		{"ReadRows", func() (int, error) { r, err := b.s.ReadRows(b.ctx, orgB, "tbl", nil, 0); return len(r), err }},
		{"ListRows", func() (int, error) {
			p, err := b.s.ListRows(b.ctx, orgB, "tbl", nil, svctype.ListOptions{})
			return len(p.Items), err
		}},
	}
	for _, tt := range empty {
		n, err := tt.call()
		require.NoError(t, err, tt.name)
		require.Zero(t, n, tt.name)
	}
	// Org B has no table "tbl": a patch or an index there is not found, and A's rows are untouched.
	_, err = b.s.UpdateRows(b.ctx, orgB, "tbl", nil, map[string]any{"k": "evil"})
	require.ErrorIs(t, err, svctype.ErrNotFound, "UpdateRows")
	_, err = b.s.TableIndexes(b.ctx, orgB, "tbl")
	require.ErrorIs(t, err, svctype.ErrNotFound, "TableIndexes")
	require.ErrorIs(t, b.s.AddTableIndex(b.ctx, orgB, "tbl", svctype.TableIndex{Columns: []string{"k"}}), svctype.ErrNotFound, "AddTableIndex")
	_, err = b.s.BuildTableIndex(b.ctx, orgB, "tbl", "k", "", 10)
	require.ErrorIs(t, err, svctype.ErrNotFound, "BuildTableIndex")
	n, err := b.s.CountRows(b.ctx, orgB, "tbl", 0)
	require.NoError(t, err)
	require.Zero(t, n, "CountRows")

	// Writes keyed by org B land in org B, never on A's rows.
	require.NoError(t, b.s.PutContext(b.ctx, orgB, run.ID, "k", json.RawMessage(`"evil"`)))
	require.NoError(t, b.s.PutStep(b.ctx, orgB, &svctype.StepRecord{RunID: run.ID, Index: 0, Type: "evil", Status: svctype.StepFailed}))
	require.NoError(t, b.s.PutLoopItem(b.ctx, orgB, run.ID, 0, 0, json.RawMessage(`"evil"`)))
	require.NoError(t, b.s.DeleteJobs(b.ctx, orgB, "", run.ID, ""))
	require.NoError(t, b.s.DeleteJobs(b.ctx, orgB, "", "", w.ID))
	require.NoError(t, b.s.CreateRun(b.ctx, &svctype.Run{ID: run.ID, OrgID: orgB, WorkflowID: w.ID, Status: svctype.RunRunning}, time.Time{}),
		"ids are scoped by org")

	// A is intact.
	gotW, err := b.s.GetWorkflow(b.ctx, orgA, w.ID)
	require.NoError(t, err)
	require.Equal(t, 1, gotW.Version)
	gotRun, err := b.s.GetRun(b.ctx, orgA, run.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.RunRunning, gotRun.Status)
	c, err := b.s.GetContext(b.ctx, orgA, run.ID)
	require.NoError(t, err)
	require.Equal(t, `"a"`, string(c["k"]))
	steps, err := b.s.ListSteps(b.ctx, orgA, run.ID)
	require.NoError(t, err)
	require.Equal(t, "x", steps[0].Type)
	items, err := b.s.ListLoopItems(b.ctx, orgA, run.ID, 0)
	require.NoError(t, err)
	require.Equal(t, `"a"`, string(items[0]))
	n = b.countJobs(t)
	require.Equal(t, 1, n)
	rows, err := b.s.ReadRows(b.ctx, orgA, "tbl", nil, 0)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, row.Data, rows[0].Data)
	id, _, err := b.s.RunIDForIdempotencyKey(b.ctx, orgA, "idem", time.Now())
	require.NoError(t, err)
	require.Equal(t, run.ID, id)
}

var errRollback = errors.New("roll back")

// testTxConcurrent runs transactions at once, as a worker's step commits do (on SQLite they
// queue for the one writer; a group commit that shared one transaction among them, each
// under a savepoint, was tried and passed this too, docs/decisions.md): each failing one's
// writes are gone, every other's are kept, and a caller whose ctx is done before it starts
// gets ctx's error and runs nothing.
func testTxConcurrent(t *testing.T, b *bundle) {
	const n = 12
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
				w := &svctype.Workflow{OrgID: orgA, Name: fmt.Sprintf("wf-%d", i), Definition: json.RawMessage(`{}`)}
				if err := tx.CreateWorkflow(ctx, w); err != nil {
					return err
				}
				ids[i] = w.ID
				if i%3 == 1 {
					return errRollback
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for i := range n {
		_, err := b.s.GetWorkflow(b.ctx, orgA, ids[i])
		if i%3 == 1 {
			require.ErrorIs(t, errs[i], errRollback)
			require.ErrorIs(t, err, storage.ErrNotFound, "wf-%d rolled back", i)
			continue
		}
		require.NoError(t, errs[i])
		require.NoError(t, err, "wf-%d committed", i)
	}

	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	ran := false
	err := b.s.InTx(ctx, func(context.Context, storage.Tx) error {
		ran = true
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ran)
}

func testTxRollback(t *testing.T, b *bundle) {
	var runID, wfID string
	err := b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		w := &svctype.Workflow{OrgID: orgA, Name: "wf", Definition: json.RawMessage(`{}`)}
		if err := tx.CreateWorkflow(ctx, w); err != nil {
			return err
		}
		wfID = w.ID
		r := &svctype.Run{OrgID: orgA, WorkflowID: w.ID, Status: svctype.RunRunning, IdempotencyKey: "k"}
		if err := tx.CreateRun(ctx, r, time.Now().Add(time.Hour)); err != nil {
			return err
		}
		runID = r.ID
		if err := tx.PutContext(ctx, orgA, r.ID, "k", json.RawMessage(`1`)); err != nil {
			return err
		}
		if err := tx.AppendEvents(ctx, []svctype.Event{{OrgID: orgA, RunID: r.ID, Event: "e"}}); err != nil {
			return err
		}
		if err := tx.EnqueueJob(ctx, &svctype.Job{OrgID: orgA, Kind: svctype.JobRunStep, RunID: r.ID}); err != nil {
			return err
		}
		if err := tx.CreateTable(ctx, &svctype.Table{OrgID: orgA, Name: "t"}); err != nil {
			return err
		}
		if _, err := tx.InsertRow(ctx, orgA, "t", map[string]any{"a": 1}); err != nil {
			return err
		}
		// The transaction sees its own writes.
		got, err := tx.GetRun(ctx, orgA, r.ID)
		if err != nil {
			return err
		}
		if got.ID != r.ID {
			return errors.New("own write not visible")
		}
		return fmt.Errorf("step failed: %w", errRollback)
	})
	require.ErrorIs(t, err, errRollback, "fn's error comes back")

	_, err = b.s.GetWorkflow(b.ctx, orgA, wfID)
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = b.s.GetRun(b.ctx, orgA, runID)
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, _, err = b.s.RunIDForIdempotencyKey(b.ctx, orgA, "k", time.Now())
	require.ErrorIs(t, err, storage.ErrNotFound)
	c, err := b.s.GetContext(b.ctx, orgA, runID)
	require.NoError(t, err)
	require.Empty(t, c)
	ev, err := b.s.ListRunEvents(b.ctx, orgA, runID, svctype.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, ev.Items)
	n := b.countJobs(t)
	require.Zero(t, n)
	_, err = b.s.GetTable(b.ctx, orgA, "t")
	require.ErrorIs(t, err, storage.ErrNotFound)

	// A lost lease inside a step commit rolls back what the step wrote.
	b.job(t, orgA, time.Now().Add(-time.Second))
	claimed, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
	require.NoError(t, err)
	stale := claimed[0]
	stale.LeaseToken = "stale"
	err = b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.PutContext(ctx, orgA, "run", "k", json.RawMessage(`1`)); err != nil {
			return err
		}
		return tx.RenewJob(ctx, &stale, time.Minute)
	})
	require.ErrorIs(t, err, storage.ErrLeaseLost)
	c, err = b.s.GetContext(b.ctx, orgA, "run")
	require.NoError(t, err)
	require.Empty(t, c)

	// A panic rolls back too.
	require.Panics(t, func() {
		_ = b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
			if err := tx.PutContext(ctx, orgA, "run", "k", json.RawMessage(`1`)); err != nil {
				return err
			}
			panic("boom")
		})
	})
	c, err = b.s.GetContext(b.ctx, orgA, "run")
	require.NoError(t, err)
	require.Empty(t, c)
}

func testTxCommit(t *testing.T, b *bundle) {
	r := b.run(t, orgA, "wf", time.Time{})
	b.job(t, orgA, time.Now().Add(-time.Second))
	claimed, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
	require.NoError(t, err)
	job := claimed[0]
	var events []svctype.Event
	err = b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		job.Payload = json.RawMessage(`{"step":1}`)
		if err := tx.RenewJob(ctx, &job, time.Minute); err != nil {
			return err
		}
		if err := tx.PutContext(ctx, orgA, r.ID, "step0", json.RawMessage(`{"out":1}`)); err != nil {
			return err
		}
		if err := tx.PutStep(ctx, orgA, &svctype.StepRecord{RunID: r.ID, Index: 0, Type: "x", Status: svctype.StepCompleted}); err != nil {
			return err
		}
		r.Cursor = svctype.Cursor{Step: 1}
		if err := tx.UpdateRun(ctx, r); err != nil {
			return err
		}
		events = []svctype.Event{{OrgID: orgA, RunID: r.ID, Event: "step_completed", Payload: json.RawMessage(`{}`)}}
		return tx.AppendEvents(ctx, events)
	})
	require.NoError(t, err)
	require.NotZero(t, events[0].Seq)

	c, err := b.s.GetContext(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	requireJSON(t, `{"out":1}`, c["step0"])
	got, err := b.s.GetRun(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	require.Equal(t, 1, got.Cursor.Step)
	steps, err := b.s.ListSteps(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	require.Len(t, steps, 1)
	ev, err := b.s.ListRunEvents(b.ctx, orgA, r.ID, svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, ev.Items, 1)
	require.NoError(t, b.s.CompleteJob(b.ctx, &job))
}

// testTxSurvivesConflict: a conflict answered inside a transaction leaves the transaction
// usable (on PostgreSQL a failed statement would abort it), so a caller can look up the
// existing run of an idempotency key and go on.
func testTxSurvivesConflict(t *testing.T, b *bundle) {
	first := &svctype.Run{OrgID: orgA, WorkflowID: "wf", Status: svctype.RunRunning, IdempotencyKey: "k"}
	require.NoError(t, b.s.CreateRun(b.ctx, first, time.Now().Add(time.Hour)))
	b.workflow(t, orgA, "taken")
	b.table(t, orgA, "t")
	err := b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		again := &svctype.Run{OrgID: orgA, WorkflowID: "wf", Status: svctype.RunRunning, IdempotencyKey: "k"}
		if err := tx.CreateRun(ctx, again, time.Now().Add(time.Hour)); !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("CreateRun: want a conflict, got %v", err)
		}
		id, _, err := tx.RunIDForIdempotencyKey(ctx, orgA, "k", time.Now())
		if err != nil {
			return err
		}
		if id != first.ID {
			return fmt.Errorf("idempotency key names %s, want %s", id, first.ID)
		}
		err = tx.CreateWorkflow(ctx, &svctype.Workflow{OrgID: orgA, Name: "taken", Definition: json.RawMessage(`{}`)})
		if !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("CreateWorkflow: want a conflict, got %v", err)
		}
		if err := tx.CreateTable(ctx, &svctype.Table{OrgID: orgA, Name: "t"}); !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("CreateTable: want a conflict, got %v", err)
		}
		for _, k := range []string{"a", "b"} {
			if _, _, err := tx.UpsertRow(ctx, orgA, "t", []string{"email"}, map[string]any{"email": k}); err != nil {
				return err
			}
		}
		_, err = tx.UpdateRows(ctx, orgA, "t", map[string]any{"email": "a"}, map[string]any{"email": "b"})
		if !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("UpdateRows: want a conflict, got %v", err)
		}
		return tx.PutContext(ctx, orgA, first.ID, "after", json.RawMessage(`true`))
	})
	require.NoError(t, err)
	c, err := b.s.GetContext(b.ctx, orgA, first.ID)
	require.NoError(t, err)
	require.Equal(t, `true`, string(c["after"]))
}

// testTxImplementsEveryPart: the Tx InTx hands out is every part of the store (storage.Tx,
// which the compiler holds a store to), so a feature narrows the run core's transaction to
// its own part; a write through that part commits with the transaction.
func testTxImplementsEveryPart(t *testing.T, b *bundle) {
	require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		var features storage.OrgFeatures = tx
		return features.PutOrgFeatures(ctx, orgA, svctype.OrgFeatures{AgentForms: true})
	}))
	f, err := b.s.GetOrgFeatures(b.ctx, orgA)
	require.NoError(t, err)
	require.True(t, f.AgentForms)
	f, err = b.s.GetOrgFeatures(b.ctx, orgB)
	require.NoError(t, err)
	require.False(t, f.AgentForms, "another organization's features")
}
