package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// A schedule's slots: with `every` <n><unit> (m, h, d, w) alone, every interval from the
// moment the schedule was saved; with `at` HH:MM, anchored at that wall-clock time in
// `timezone` (default UTC), every interval (default one day). Day and week intervals step
// by calendar days, so 09:00 stays 09:00 across daylight-saving changes. A wall time that a
// change of clocks skips (02:30 on a spring-forward night) fires at the instant it would
// have had, moved forward by the gap (03:30), and one that happens twice (01:30 on a
// fall-back night) fires once, at the first: as cron and systemd do. A slot missed while
// no worker ran fires once when one starts; the next slot is the first after that moment,
// never a backlog.

type scheduleSpec struct {
	n    int
	unit byte
	loc  *time.Location
	hh   int
	mm   int
	at   bool
}

func parseSchedule(s *svctype.Schedule) (*scheduleSpec, error) {
	sp := &scheduleSpec{n: 1, unit: 'd', loc: time.UTC}
	if s.Timezone != "" {
		loc, err := time.LoadLocation(s.Timezone)
		if err != nil {
			return nil, fmt.Errorf("schedule timezone %q: %w", s.Timezone, err)
		}
		sp.loc = loc
	}
	if s.Every != "" {
		n, err := strconv.Atoi(s.Every[:len(s.Every)-1])
		if err != nil || n < 1 {
			return nil, fmt.Errorf("schedule every %q: want <n><unit> with unit m, h, d or w", s.Every)
		}
		sp.n, sp.unit = n, s.Every[len(s.Every)-1]
		switch sp.unit {
		case 'm', 'h', 'd', 'w':
		default:
			return nil, fmt.Errorf("schedule every %q: unit must be m, h, d or w", s.Every)
		}
	}
	if s.At != "" {
		t, err := time.Parse("15:04", s.At)
		if err != nil {
			return nil, fmt.Errorf("schedule at %q: want HH:MM", s.At)
		}
		sp.hh, sp.mm, sp.at = t.Hour(), t.Minute(), true
	}
	return sp, nil
}

// nextSlot is the first slot of sp strictly after `after`, for a schedule saved at anchor.
// Without `at` the first slot is one interval after the anchor; with `at` the slots are the
// anchor day's HH:MM plus whole intervals.
func (sp *scheduleSpec) nextSlot(anchor, after time.Time) time.Time {
	anchor = anchor.In(sp.loc)
	base, minK := anchor, 1
	if sp.at {
		base, minK = wallClock(anchor.Year(), anchor.Month(), anchor.Day(), sp.hh, sp.mm, 0, 0, sp.loc), 0
	}
	var slot func(k int) time.Time
	var guess int
	switch sp.unit {
	case 'm', 'h':
		step := time.Duration(sp.n) * time.Minute
		if sp.unit == 'h' {
			step = time.Duration(sp.n) * time.Hour
		}
		slot = func(k int) time.Time { return base.Add(time.Duration(k) * step) }
		guess = int(after.Sub(base) / step)
		if sp.at {
			minK = math.MinInt32 // the phase may lie before the anchor
		}
	default:
		days := sp.n
		if sp.unit == 'w' {
			days = 7 * sp.n
		}
		// Calendar days, so the wall-clock time holds across daylight-saving changes. The
		// wall time is the schedule's (with `at`) or the anchor's, never base's clock, which
		// a gap on the anchor day has moved.
		hh, mm, ss, ns := anchor.Hour(), anchor.Minute(), anchor.Second(), anchor.Nanosecond()
		if sp.at {
			hh, mm, ss, ns = sp.hh, sp.mm, 0, 0
		}
		slot = func(k int) time.Time {
			return wallClock(base.Year(), base.Month(), base.Day()+k*days, hh, mm, ss, ns, sp.loc)
		}
		guess = int(after.Sub(base).Hours()/24) / days
	}
	k := max(guess, minK)
	for k > minK && slot(k-1).After(after) {
		k--
	}
	for !slot(k).After(after) {
		k++
	}
	return slot(k)
}

// wallClock is the instant of a wall-clock time in loc, defined where time.Date leaves the
// choice open: in a gap (a spring-forward night) it is the time moved forward by the gap,
// read with the offset before the change (02:30 EST, that is 03:30 EDT); in an overlap (a
// fall-back night) it is the first of the two instants. time.Date picks either side in
// both cases, depending on the zone.
func wallClock(year int, month time.Month, day, hh, mm, ss, ns int, loc *time.Location) time.Time {
	t := time.Date(year, month, day, hh, mm, ss, ns, loc)
	naive := time.Date(year, month, day, hh, mm, ss, ns, time.UTC)
	at := func(off int) time.Time { return naive.Add(-time.Duration(off) * time.Second) }
	isWall := func(c time.Time) bool {
		c = c.In(loc)
		return time.Date(c.Year(), c.Month(), c.Day(), c.Hour(), c.Minute(), c.Second(), c.Nanosecond(), time.UTC).Equal(naive) // naive is normalised: day 32 is the next month's first
	}
	offset := func(c time.Time) int { _, off := c.In(loc).Zone(); return off }
	start, end := t.ZoneBounds()
	var changes []time.Time // the changes of offset next to t
	for _, c := range []time.Time{start, end} {
		if !c.IsZero() {
			changes = append(changes, c)
		}
	}
	first := time.Time{}
	if isWall(t) {
		first = t
	}
	for _, c := range changes {
		for _, off := range []int{offset(c.Add(-time.Nanosecond)), offset(c)} {
			if cand := at(off); isWall(cand) && (first.IsZero() || cand.Before(first)) {
				first = cand
			}
		}
	}
	if !first.IsZero() {
		return first.In(loc)
	}
	for _, c := range changes {
		before, after := offset(c.Add(-time.Nanosecond)), offset(c)
		if after > before && !at(before).Before(c) && at(after).Before(c) {
			return at(before).In(loc) // in the gap that c opens
		}
	}
	return t
}

type schedulePayload struct {
	Anchor time.Time `json:"anchor"`
}

// scheduleTx replaces a workflow's schedule job to match its (new) definition.
func (e *Core) scheduleTx(ctx context.Context, tx storage.Tx, w *svctype.Workflow, def *svctype.Definition) error {
	if err := tx.DeleteJobs(ctx, w.OrgID, svctype.JobSchedule, "", w.ID); err != nil {
		return err
	}
	if def.Schedule == nil {
		return nil
	}
	sp, err := parseSchedule(def.Schedule)
	if err != nil {
		return Invalid("/definition/schedule", "%s", err.Error())
	}
	now := e.now().UTC()
	payload, _ := json.Marshal(schedulePayload{Anchor: now})
	return tx.EnqueueJob(ctx, &svctype.Job{
		OrgID: w.OrgID, Kind: svctype.JobSchedule, WorkflowID: w.ID,
		RunAt: sp.nextSlot(now, now).UTC(), Payload: payload,
	})
}

// fireSchedule starts one run for a due schedule job and moves the job to the next slot.
func (e *Core) fireSchedule(ctx context.Context, job *svctype.Job) error {
	err := e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.RenewJob(ctx, job, e.lease); err != nil {
			return err
		}
		w, err := tx.GetWorkflow(ctx, job.OrgID, job.WorkflowID)
		if errors.Is(err, ErrNotFound) {
			return tx.CompleteJob(ctx, job)
		}
		if err != nil {
			return err
		}
		def, err := svctype.ParseDefinition(w.Definition)
		if err != nil || def.Schedule == nil {
			return tx.CompleteJob(ctx, job)
		}
		sp, err := parseSchedule(def.Schedule)
		if err != nil {
			return tx.CompleteJob(ctx, job)
		}
		var p schedulePayload
		if err := json.Unmarshal(job.Payload, &p); err != nil || p.Anchor.IsZero() {
			p.Anchor = job.RunAt
		}
		now := e.now().UTC()
		input, _ := json.Marshal(map[string]any{"schedule": map[string]any{
			"slot": job.RunAt.UTC().Format(time.RFC3339), "fired_at": now.Format(time.RFC3339),
		}})
		if _, err := e.startRunTx(ctx, tx, w, input, idempotency{}, now, nil); err != nil {
			return err
		}
		job.RunAt = sp.nextSlot(p.Anchor, now).UTC()
		return tx.RenewJob(ctx, job, 0)
	})
	if err == nil {
		e.Notify()
	}
	return err
}
