package match

import (
	"cmp"
	"fmt"
	"math"
)

// A group's checks: its members' sums and tolerances, dates, text, and the rules;
// the discrepancies and orphans they find (see NWay).

// groupPart is what evaluate made of a run of groups.
type groupPart struct {
	groups     []Group
	orphans    []orphanRef
	exceptions []ExceptionRow
	counts     Counts
	err        error
}

// evaluate builds and checks the groups of part (ids in key order); a key present in one
// leg only gives orphans instead. It works on a copy of e, so parts can run in parallel.
func (e evaluator) evaluate(part []int32, keys []string, off []int32, members []int, memberRecs []Record) groupPart {
	c, nl := e.c, e.nl
	var out groupPart
	out.groups = make([]Group, 0, len(part))
	legBacking := make([]GroupLeg, 0, len(part)*nl)
	nameBacking := make([]string, 0, len(part)*nl)
	sumBacking := make([]FieldSum, 0, len(part)*nl*len(c.fields))
	w := exceptionWriter{legs: c.legs}
	for _, g := range part {
		slots := off[int(g)*nl : int(g)*nl+nl+1]
		present, lone := 0, -1
		for li := range nl {
			if slots[li+1] > slots[li] {
				present++
				lone = li
			}
		}
		if present == 1 {
			for _, ri := range members[slots[lone]:slots[lone+1]] {
				out.orphans = append(out.orphans, orphanRef{leg: int32(lone), index: int32(ri), group: g})
			}
			continue
		}
		grp := Group{SchemaVersion: SchemaVersion, MatchKey: keys[g]}
		names := nameBacking[len(nameBacking) : len(nameBacking)+nl]
		nameBacking = nameBacking[:len(nameBacking)+nl]
		np := 0
		for li := range nl {
			if slots[li+1] > slots[li] {
				names[np] = c.legs[li]
				np++
			}
		}
		mp := np
		for li := range nl {
			if slots[li+1] == slots[li] {
				names[mp] = c.legs[li]
				mp++
			}
		}
		grp.LegsPresent, grp.MissingLegs = names[:np:np], names[np:nl:nl]
		gl := legBacking[len(legBacking) : len(legBacking)+nl : len(legBacking)+nl]
		legBacking = legBacking[:len(legBacking)+nl]
		for li := range nl {
			a, b := slots[li], slots[li+1]
			gl[li] = GroupLeg{Leg: c.legs[li], Count: int(b - a), Indexes: members[a:b:b], Records: memberRecs[a:b:b]}
		}
		grp.Legs = gl
		sumBacking = e.check(&grp, slots, sumBacking)
		if len(c.rules) > 0 {
			if err := e.applyRules(&grp); err != nil {
				out.err = err
				return out
			}
		}
		if grp.Discrepancies == nil {
			grp.Discrepancies = []Discrepancy{}
		}
		if grp.FailedRules == nil {
			grp.FailedRules = []string{}
		}
		switch grp.Classification {
		case ClassFull:
			out.counts.Full++
		case ClassVariance:
			out.counts.Variance++
		case ClassMissingLeg:
			out.counts.MissingLeg++
		}
		out.groups = append(out.groups, grp)
		if grp.Classification != ClassFull {
			out.exceptions = append(out.exceptions, w.group(&out.groups[len(out.groups)-1]))
		}
	}
	return out
}

// fieldVal is one record's value of a tolerance field: minor units for a currency
// field, the number for an abs one.
type fieldVal struct {
	v     float64
	minor int64
}

// noValue marks a record without a number in the field.
const noValue = math.MinInt64

func (f fieldVal) ok() bool { return f.minor != noValue }

func readField(v any, currency bool) fieldVal {
	f, ok := number(v)
	if !ok {
		return fieldVal{minor: noValue}
	}
	if currency {
		m, ok := minorUnits(f)
		if !ok {
			return fieldVal{minor: noValue}
		}
		return fieldVal{v: f, minor: m}
	}
	return fieldVal{v: f}
}

// evaluator runs a group's checks on the values read in the first pass (reads, per leg,
// indexed by record: members maps a group member to its record), reusing its scratch
// space.
type evaluator struct {
	c       *nwayConfig
	nl      int
	reads   []legRead
	members []int
	sum     exactSum
	// per leg, for the field being checked
	minor   [MaxLegs]int64
	fsum    [MaxLegs]float64
	missing [MaxLegs]int
	lo, hi  [MaxLegs]int32
	text    [MaxLegs]string
	joined  []byte
}

// check sums the tolerance fields, compares every pair of present legs and sets the
// classification (before rules). off holds the group's member offsets per leg. Sums are
// carved from backing, which it returns grown.
func (e *evaluator) check(g *Group, off []int32, backing []FieldSum) []FieldSum {
	c := e.c
	legs := g.Legs
	nf := len(c.fields)
	for li := range legs {
		if legs[li].Count == 0 {
			legs[li].Sums = Sums{}
			continue
		}
		legs[li].Sums = backing[len(backing) : len(backing)+nf : len(backing)+nf]
		backing = backing[:len(backing)+nf]
	}
	for fi := range c.fields {
		f := &c.fields[fi]
		for li := range legs {
			if legs[li].Count == 0 {
				continue
			}
			e.missing[li] = 0
			var minor int64
			e.sum.reset()
			single := legs[li].Count == 1
			fields := e.reads[li].fields
			for _, ri := range e.members[off[li]:off[li+1]] {
				v := &fields[ri*nf+fi]
				switch {
				case !v.ok():
					e.missing[li]++
				case f.currency:
					minor += v.minor
				case single:
					e.fsum[li] = v.v
				default:
					e.sum.add(v.v)
				}
			}
			e.minor[li] = minor
			switch {
			case f.currency:
				e.fsum[li] = float64(minor) / 100
			case !single:
				e.fsum[li] = e.sum.value()
			case e.missing[li] > 0:
				e.fsum[li] = 0
			}
			legs[li].Sums[fi] = FieldSum{Field: f.name, Value: e.fsum[li]}
			if e.missing[li] > 0 {
				g.Discrepancies = append(g.Discrepancies, Discrepancy{
					Kind: KindMissingValue, Field: f.name, Legs: []string{legs[li].Leg},
					Message: fmt.Sprintf("%d of %d records have no number in %q", e.missing[li], legs[li].Count, f.name),
				})
			}
		}
		for i := range legs {
			for j := i + 1; j < len(legs); j++ {
				if legs[i].Count == 0 || legs[j].Count == 0 || e.missing[i] > 0 || e.missing[j] > 0 {
					continue
				}
				var diff float64
				var out bool
				if f.currency {
					d := e.minor[i] - e.minor[j]
					if d < 0 {
						d = -d
					}
					diff, out = float64(d)/100, d > f.allowedMinor[i][j]
				} else {
					diff = math.Abs(e.fsum[i] - e.fsum[j])
					out = diff > f.allowed[i][j]
				}
				if out {
					g.Discrepancies = append(g.Discrepancies, Discrepancy{
						Kind: KindTolerance, Field: f.name, Legs: []string{legs[i].Leg, legs[j].Leg},
						Values: []any{e.fsum[i], e.fsum[j]}, Difference: ptr(diff), Allowed: ptr(f.allowed[i][j]),
					})
				}
			}
		}
	}
	if c.useDate {
		e.checkDates(g, off)
	}
	if c.useText {
		e.checkText(g, off)
	}
	switch {
	case len(g.MissingLegs) > 0:
		g.Classification = ClassMissingLeg
	case len(g.Discrepancies) > 0:
		g.Classification = ClassVariance
	default:
		g.Classification = ClassFull
	}
	return backing
}

func (e *evaluator) checkDates(g *Group, off []int32) {
	c, legs := e.c, g.Legs
	for li := range legs {
		e.missing[li] = 0
		e.lo[li], e.hi[li] = math.MaxInt32, math.MinInt32
		days := e.reads[li].days
		for _, ri := range e.members[off[li]:off[li+1]] {
			d := days[ri]
			if d == noDay {
				e.missing[li]++
				continue
			}
			e.lo[li], e.hi[li] = min(e.lo[li], d), max(e.hi[li], d)
		}
		if e.missing[li] > 0 {
			g.Discrepancies = append(g.Discrepancies, Discrepancy{
				Kind: KindMissingValue, Field: c.dateKey, Legs: []string{legs[li].Leg},
				Message: fmt.Sprintf("%d of %d records have no date in %q", e.missing[li], legs[li].Count, c.dateKey),
			})
		}
	}
	for i := range legs {
		for j := i + 1; j < len(legs); j++ {
			if legs[i].Count == 0 || legs[j].Count == 0 || e.missing[i] > 0 || e.missing[j] > 0 {
				continue
			}
			// The furthest pair of dates, one from each leg.
			vi, vj := e.hi[i], e.lo[j]
			if e.hi[j]-e.lo[i] > vi-vj {
				vi, vj = e.lo[i], e.hi[j]
			}
			drift := vi - vj
			if drift < 0 {
				drift = -drift
			}
			if drift > c.windowDays {
				g.Discrepancies = append(g.Discrepancies, Discrepancy{
					Kind: KindDateWindow, Field: c.dateKey, Legs: []string{legs[i].Leg, legs[j].Leg},
					Values: []any{dayString(vi), dayString(vj)}, Difference: ptr(float64(drift)), Allowed: ptr(c.window),
				})
			}
		}
	}
}

func (e *evaluator) checkText(g *Group, off []int32) {
	c, legs := e.c, g.Legs
	for li := range legs {
		descs, members := e.reads[li].descs, e.members[off[li]:off[li+1]]
		if len(members) == 1 {
			e.text[li] = descs[members[0]]
			continue
		}
		// The score works on word sets, so the records' order does not matter.
		e.joined = e.joined[:0]
		for k, ri := range members {
			if k > 0 {
				e.joined = append(e.joined, ' ')
			}
			e.joined = append(e.joined, descs[ri]...)
		}
		e.text[li] = string(e.joined)
	}
	for i := range legs {
		for j := i + 1; j < len(legs); j++ {
			if legs[i].Count == 0 || legs[j].Count == 0 {
				continue
			}
			if !SimilarityAtLeast(e.text[i], e.text[j], c.threshold) {
				score := Similarity(e.text[i], e.text[j])
				g.Discrepancies = append(g.Discrepancies, Discrepancy{
					Kind: KindSimilarity, Field: c.descKey, Legs: []string{legs[i].Leg, legs[j].Leg},
					Score: &score, Allowed: ptr(c.threshold),
				})
			}
		}
	}
}

func (e *evaluator) applyRules(g *Group) error {
	view := groupMap(g)
	for i, r := range e.c.rules {
		name := cmp.Or(r.Name, fmt.Sprintf("rules/%d", i))
		ok, err := r.Eval(view)
		if err != nil {
			return fmt.Errorf("%w: rule %q on group %q: %v", ErrRule, name, g.MatchKey, err)
		}
		if !ok {
			g.FailedRules = append(g.FailedRules, name)
			g.Discrepancies = append(g.Discrepancies, Discrepancy{Kind: KindRule, Rule: name})
		}
	}
	if len(g.FailedRules) > 0 && g.Classification == ClassFull {
		g.Classification = ClassVariance
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
