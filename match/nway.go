package match

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// SchemaVersion is carried by every group and orphan row NWay produces.
const SchemaVersion = "svc.match-group.v1"

// Classifications and the exception status.
const (
	ClassFull       = "full"
	ClassVariance   = "variance"
	ClassMissingLeg = "missing_leg"
	ClassOrphan     = "orphan"

	StatusPendingReview = "pending_review"
)

// Tolerance types.
const (
	ToleranceAbs      = "abs"
	ToleranceCurrency = "currency"
)

// Discrepancy kinds.
const (
	KindTolerance    = "tolerance"
	KindDateWindow   = "date_window"
	KindSimilarity   = "similarity"
	KindMissingValue = "missing_value"
	KindRule         = "rule"
)

// Orphan reasons.
const (
	ReasonOneLeg        = "key_in_one_leg"
	ReasonMissingFields = "missing_match_fields"
)

const (
	// MinLegs and MaxLegs bound the sets of an nway_match step.
	MinLegs = 2
	MaxLegs = 4
	// MaxDetailsBytes bounds an exception row's details JSON.
	MaxDetailsBytes = 8192
)

// ValidateNWay checks an nway_match step's options as a workflow is saved; legCount is the
// number of sets. Pointers are relative to the step's properties. Leg keys and the legs
// named in tolerance pairs are checked again by NWay, when the sets are known.
func ValidateNWay(opts NWayOptions, legCount int) []Problem {
	var out []Problem
	if legCount < MinLegs || legCount > MaxLegs {
		out = append(out, Problem{"/sets", fmt.Sprintf("must hold %d to %d legs, got %d", MinLegs, MaxLegs, legCount)})
	}
	out = checkFields(out, "/matchOn", opts.MatchOn, true)
	for _, field := range sortedKeys(opts.Tolerances) {
		tol := opts.Tolerances[field]
		at := "/tolerances/" + pointerToken(field)
		if field == "" {
			out = append(out, Problem{at, "the field name must not be empty"})
		}
		if tol.Type != ToleranceAbs && tol.Type != ToleranceCurrency {
			out = append(out, Problem{at + "/type", fmt.Sprintf("unknown tolerance type %q: want %q or %q", tol.Type, ToleranceAbs, ToleranceCurrency)})
		}
		if !(tol.Value >= 0) || math.IsInf(tol.Value, 0) {
			out = append(out, Problem{at + "/value", "must be a finite number of at least 0"})
		}
		seen := map[[2]string]float64{}
		for _, pk := range sortedKeys(tol.Pairs) {
			pat := at + "/pairs/" + pointerToken(pk)
			a, b, ok := strings.Cut(pk, ":")
			switch {
			case !ok || a == "" || b == "":
				out = append(out, Problem{pat, "must be written <leg>:<leg>"})
				continue
			case a == b:
				out = append(out, Problem{pat, "must name two different legs"})
				continue
			}
			v := tol.Pairs[pk]
			if !(v >= 0) || math.IsInf(v, 0) {
				out = append(out, Problem{pat, "must be a finite number of at least 0"})
				continue
			}
			norm := [2]string{min(a, b), max(a, b)}
			if prev, dup := seen[norm]; dup && prev != v {
				out = append(out, Problem{pat, fmt.Sprintf("%s:%s is also given as %s:%s with another value", a, b, b, a)})
			}
			seen[norm] = v
		}
	}
	out = checkWindow(out, opts.DateWindowDays)
	out = checkThreshold(out, opts.FuzzyThreshold)
	for i, r := range opts.Rules {
		if r.Eval == nil {
			out = append(out, Problem{fmt.Sprintf("/rules/%d", i), "rule has no condition"})
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// tolField is one tolerance, resolved for the legs at hand.
type tolField struct {
	name         string
	currency     bool
	allowed      [MaxLegs][MaxLegs]float64
	allowedMinor [MaxLegs][MaxLegs]int64
}

type nwayConfig struct {
	legs       []string
	matchOn    []string
	fields     []tolField
	dateKey    string
	descKey    string
	useDate    bool
	window     float64
	windowDays int32
	useText    bool
	threshold  float64
	rules      []Rule
}

// newNWayConfig resolves the options for the legs at hand, and checks what only the sets
// tell: their keys and the tolerance pairs that name them.
func newNWayConfig(legs []Leg, opts NWayOptions) (*nwayConfig, []Problem) {
	var out []Problem
	c := &nwayConfig{
		matchOn: opts.MatchOn,
		dateKey: cmp.Or(opts.DateKey, "date"),
		descKey: cmp.Or(opts.DescriptionKey, "description"),
		rules:   opts.Rules,
	}
	index := map[string]int{}
	for i, l := range legs {
		at := fmt.Sprintf("/sets/%d/key", i)
		switch _, dup := index[l.Key]; {
		case l.Key == "":
			out = append(out, Problem{at, "every set needs a key"})
		case dup:
			out = append(out, Problem{at, fmt.Sprintf("leg key %q is used twice", l.Key)})
		}
		index[l.Key] = i
		c.legs = append(c.legs, l.Key)
	}
	for _, field := range sortedKeys(opts.Tolerances) {
		tol := opts.Tolerances[field]
		tf := tolField{name: field, currency: tol.Type == ToleranceCurrency}
		for i := range MaxLegs {
			for j := range MaxLegs {
				tf.allowed[i][j] = tol.Value
			}
		}
		for _, pk := range sortedKeys(tol.Pairs) {
			i, j, ok := findPair(pk, c.legs)
			if !ok {
				out = append(out, Problem{"/tolerances/" + pointerToken(field) + "/pairs/" + pointerToken(pk),
					fmt.Sprintf("does not name two legs of sets (%s)", strings.Join(c.legs, ", "))})
				continue
			}
			tf.allowed[i][j], tf.allowed[j][i] = tol.Pairs[pk], tol.Pairs[pk]
		}
		for i := range MaxLegs {
			for j := range MaxLegs {
				tf.allowedMinor[i][j] = toleranceMinor(tf.allowed[i][j])
			}
		}
		c.fields = append(c.fields, tf)
	}
	if opts.DateWindowDays != nil {
		c.useDate, c.window = true, *opts.DateWindowDays
		c.windowDays = int32(math.Min(math.Floor(c.window+1e-9), 1<<30))
	}
	if opts.FuzzyThreshold != nil {
		c.useText, c.threshold = true, *opts.FuzzyThreshold
	}
	return c, out
}

// findPair resolves "<leg>:<leg>" against the leg keys (which may hold ":" themselves).
func findPair(pk string, legs []string) (int, int, bool) {
	for i, a := range legs {
		for j, b := range legs {
			if i != j && len(pk) == len(a)+1+len(b) && strings.HasPrefix(pk, a+":") && strings.HasSuffix(pk, b) {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}

// NWay groups the records of 2 to 4 legs by their matchOn key and classifies each group.
//
// A key found in one leg only makes each of its records an orphan, and so does a record
// that lacks a matchOn field (or has it null); an orphan's match key is
// "orphan:<leg>:<index>:<first 16 hex digits of the SHA-256 of the record's canonical
// JSON>". A key found in at least two legs but not all is a missing_leg group. A group in
// every leg is full when every check passes and variance otherwise. The checks, each over
// every pair of legs present:
//
//   - each tolerance field is summed per leg (exactly: the sum does not depend on the
//     records' order) and the sums may differ by at most the pair's allowed value; a
//     record without a number in that field is a missing_value discrepancy;
//   - with dateWindowDays, every date of one leg must lie within the window of every date
//     of the other (a record without a date is a missing_value discrepancy);
//   - with fuzzyThreshold, the legs' descriptions (each leg's joined by spaces) must have
//     a Similarity of at least the threshold;
//   - then the rules, in order.
//
// The result depends only on the inputs: the same inputs give byte-identical JSON, and
// reordering records within legs changes no classification or count (only the orphans'
// match keys, which carry the index, and the order of records inside a group).
func NWay(legs []Leg, opts NWayOptions) (*NWayResult, error) {
	probs := ValidateNWay(opts, len(legs))
	c, legProbs := newNWayConfig(legs, opts)
	if probs = append(probs, legProbs...); len(probs) > 0 {
		return nil, &ValidationError{Problems: probs}
	}
	nl := len(legs)

	total := 0
	for _, l := range legs {
		total += len(l.Records)
	}
	// Read every record once, in parallel: its key text and the values the checks need.
	// Record maps are scattered over the heap, so this pass is bound by memory latency.
	nf := len(c.fields)
	nShards := max(1, min(runtime.GOMAXPROCS(0), 8))
	seed := maphash.MakeSeed()
	reads := make([]legRead, nl)
	for li, l := range legs {
		reads[li] = legRead{
			keys:   make([]string, len(l.Records)),
			hasKey: make([]bool, len(l.Records)),
			shard:  make([]uint8, len(l.Records)),
			fields: make([]fieldVal, len(l.Records)*nf),
		}
		if c.useDate {
			reads[li].days = make([]int32, len(l.Records))
		}
		if c.useText {
			reads[li].descs = make([]string, len(l.Records))
		}
	}
	parallelChunks(legs, func(li, from, to int) {
		var kb keyBuilder
		r := &reads[li]
		for ri := from; ri < to; ri++ {
			rec := legs[li].Records[ri]
			if !kb.build(rec, c.matchOn) {
				continue
			}
			k := kb.String()
			r.hasKey[ri], r.keys[ri] = true, k
			if nShards > 1 {
				r.shard[ri] = uint8(maphash.String(seed, k) % uint64(nShards))
			}
			for fi := range c.fields {
				r.fields[ri*nf+fi] = readField(rec[c.fields[fi].name], c.fields[fi].currency)
			}
			if c.useDate {
				d, ok := day(rec[c.dateKey])
				if !ok {
					d = noDay
				}
				r.days[ri] = d
			}
			if c.useText {
				r.descs[ri] = text(rec[c.descKey])
			}
		}
	})

	// Group by key through hash indexes on the key text: one per shard of keys (split by
	// a hash of the key, computed in the first pass), built in parallel.
	recGroup := make([][]int32, nl)
	for li := range legs {
		recGroup[li] = make([]int32, len(reads[li].keys))
	}
	shardKeys := make([][]string, nShards)
	forEach(nShards, func(sh int) {
		index := make(map[string]int32, total/nl/nShards+1)
		var keys []string
		for li := range legs {
			r := &reads[li]
			for ri, k := range r.keys {
				if !r.hasKey[ri] || int(r.shard[ri]) != sh {
					continue
				}
				id, found := index[k]
				if !found {
					id = int32(len(keys))
					index[k] = id
					keys = append(keys, k)
				}
				recGroup[li][ri] = id
			}
		}
		shardKeys[sh] = keys
	})
	// Number the groups across shards.
	shardBase := make([]int32, nShards+1)
	for sh, ks := range shardKeys {
		shardBase[sh+1] = shardBase[sh] + int32(len(ks))
	}
	keys := make([]string, 0, shardBase[nShards])
	for _, ks := range shardKeys {
		keys = append(keys, ks...)
	}
	var orphanRefs []orphanRef
	for li := range legs {
		r := &reads[li]
		for ri := range r.keys {
			if !r.hasKey[ri] {
				recGroup[li][ri] = -1
				orphanRefs = append(orphanRefs, orphanRef{leg: int32(li), index: int32(ri), group: -1})
				continue
			}
			recGroup[li][ri] += shardBase[r.shard[ri]]
		}
	}
	nGroups := len(keys)

	// Each (group, leg) slot's records, in input order, in one backing array, and their
	// values alongside. A leg fills only its own slots, so legs are filled in parallel.
	off := make([]int32, nGroups*nl+1)
	for li := range legs {
		for _, g := range recGroup[li] {
			if g >= 0 {
				off[int(g)*nl+li+1]++
			}
		}
	}
	for i := range nGroups * nl {
		off[i+1] += off[i]
	}
	nm := int(off[nGroups*nl])
	members := make([]int, nm)
	memberRecs := make([]Record, nm)
	e := evaluator{c: c, nl: nl, reads: reads, members: members}
	next := slices.Clone(off[:nGroups*nl])
	forEach(nl, func(li int) {
		for ri, g := range recGroup[li] {
			if g < 0 {
				continue
			}
			slot := int(g)*nl + li
			m := next[slot]
			next[slot]++
			members[m] = ri
			memberRecs[m] = legs[li].Records[ri]
		}
	})
	next, recGroup, shardKeys = nil, nil, nil // the collector may have them

	// Key order: each shard's keys sorted in parallel, then merged.
	shardOrders := make([][]int32, nShards)
	forEach(nShards, func(sh int) {
		shardOrders[sh] = sortedOrder(keys, shardBase[sh], shardBase[sh+1])
	})
	order := shardOrders[0]
	for _, o := range shardOrders[1:] {
		order = mergeOrders(order, o, keys)
	}

	// Evaluate the groups in parts, in parallel unless there are rules (their Eval need not
	// be safe for concurrent use). Each part keeps key order; their results are joined in
	// order.
	parts := 1
	if len(c.rules) == 0 {
		parts = max(1, min(runtime.GOMAXPROCS(0), nGroups/4096))
	}
	results := make([]groupPart, parts)
	var wg sync.WaitGroup
	for p := range parts {
		part := order[p*nGroups/parts : (p+1)*nGroups/parts]
		run := func() {
			results[p] = e.evaluate(part, keys, off, members, memberRecs)
		}
		if parts == 1 {
			run()
		} else {
			wg.Go(run)
		}
	}
	wg.Wait()
	res := &NWayResult{}
	nGroupRows, nExceptions := 0, 0
	for _, r := range results {
		if r.err != nil {
			return nil, r.err
		}
		nGroupRows += len(r.groups)
		nExceptions += len(r.exceptions)
		orphanRefs = append(orphanRefs, r.orphans...)
	}
	res.Groups = make([]Group, 0, nGroupRows)
	for _, r := range results {
		res.Groups = append(res.Groups, r.groups...)
		res.Counts.Full += r.counts.Full
		res.Counts.Variance += r.counts.Variance
		res.Counts.MissingLeg += r.counts.MissingLeg
	}
	res.Counts.Groups = len(res.Groups)

	slices.SortFunc(orphanRefs, func(a, b orphanRef) int {
		return cmp.Or(cmp.Compare(a.leg, b.leg), cmp.Compare(a.index, b.index))
	})
	// Orphans and their exception rows, in chunks built in parallel.
	res.Orphans = make([]Orphan, len(orphanRefs))
	res.Counts.Orphan = len(res.Orphans)
	res.Exceptions = make([]ExceptionRow, nExceptions+len(orphanRefs))
	at := 0
	for _, r := range results {
		at += copy(res.Exceptions[at:], r.exceptions)
	}
	orphanRows := res.Exceptions[at:]
	const chunk = 2048
	forEach((len(orphanRefs)+chunk-1)/chunk, func(ci int) {
		var canon []byte
		w := exceptionWriter{legs: c.legs}
		for i := ci * chunk; i < min((ci+1)*chunk, len(orphanRefs)); i++ {
			o := orphanRefs[i]
			rec := legs[o.leg].Records[o.index]
			canon = appendCanonical(canon[:0], rec)
			sum := sha256.Sum256(canon)
			leg := c.legs[o.leg]
			orphan := Orphan{
				SchemaVersion:  SchemaVersion,
				MatchKey:       "orphan:" + leg + ":" + strconv.Itoa(int(o.index)) + ":" + hex.EncodeToString(sum[:8]),
				Classification: ClassOrphan,
				Leg:            leg,
				Index:          int(o.index),
				Reason:         ReasonOneLeg,
				Record:         rec,
			}
			if o.group >= 0 {
				orphan.Key = keys[o.group]
			} else {
				orphan.Reason = ReasonMissingFields
				for _, f := range c.matchOn {
					if rec[f] == nil {
						orphan.MissingFields = append(orphan.MissingFields, f)
					}
				}
			}
			res.Orphans[i] = orphan
			orphanRows[i] = w.orphan(&res.Orphans[i])
		}
	})
	return res, nil
}

// sortedOrder returns the group ids from..to-1 in key order. Most comparisons end on the
// keys' first 8 bytes, held next to the ids, so the sort rarely reads the scattered
// strings.
func sortedOrder(keys []string, from, to int32) []int32 {
	type ref struct {
		prefix uint64
		id     int32
	}
	refs := make([]ref, 0, to-from)
	for i := from; i < to; i++ {
		k := keys[i]
		var p uint64
		for j := range 8 {
			p <<= 8
			if j < len(k) {
				p |= uint64(k[j])
			}
		}
		refs = append(refs, ref{p, i})
	}
	slices.SortFunc(refs, func(a, b ref) int {
		if a.prefix != b.prefix {
			return cmp.Compare(a.prefix, b.prefix)
		}
		return strings.Compare(keys[a.id], keys[b.id])
	})
	order := make([]int32, len(refs))
	for i, r := range refs {
		order[i] = r.id
	}
	return order
}

// mergeOrders merges two key-ordered lists of group ids (their keys are distinct).
func mergeOrders(a, b []int32, keys []string) []int32 {
	out := make([]int32, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if keys[a[0]] < keys[b[0]] {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// legRead is what the first pass read from one leg's records.
type legRead struct {
	keys   []string
	hasKey []bool
	shard  []uint8    // which index groups the key
	fields []fieldVal // nf per record
	days   []int32
	descs  []string
}

// forEach calls f(0) ... f(n-1) from up to GOMAXPROCS goroutines.
func forEach(n int, f func(i int)) {
	if n <= 1 || runtime.GOMAXPROCS(0) == 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
}

// parallelChunks calls f on ranges of every leg's records, from GOMAXPROCS goroutines.
func parallelChunks(legs []Leg, f func(leg, from, to int)) {
	const chunk = 16 * 1024
	type job struct{ leg, from, to int }
	var jobs []job
	for li, l := range legs {
		for from := 0; from < len(l.Records); from += chunk {
			jobs = append(jobs, job{li, from, min(from+chunk, len(l.Records))})
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	if workers <= 1 {
		for _, j := range jobs {
			f(j.leg, j.from, j.to)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) {
					return
				}
				f(jobs[i].leg, jobs[i].from, jobs[i].to)
			}
		})
	}
	wg.Wait()
}

type orphanRef struct {
	leg, index int32
	group      int32 // -1: the record lacks a matchOn field
}

// noDay marks a record without a date.
const noDay = math.MinInt32
