package match

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
)

// MatchOptions are the matcher step's properties. A nil pointer leaves that dimension out:
// it neither restricts nor ranks candidates.
type MatchOptions struct {
	// MatchOn fields must be equal on both sides (see keyText for what equal means). Empty:
	// any left record may pair with any right record that the other dimensions allow.
	MatchOn []string
	// AmountKey (default "amount") is the field Tolerance applies to, DateKey (default
	// "date") the field DateWindowDays applies to, DescriptionKey (default "description")
	// the text FuzzyThreshold applies to.
	AmountKey, DateKey, DescriptionKey string
	// Tolerance is the largest absolute amount difference allowed, compared in minor
	// units (hundredths): 0 means equal amounts, 0.1 + 0.2 equals 0.3.
	Tolerance *float64
	// DateWindowDays is the largest date drift allowed, in whole calendar days: 0 means
	// the same day.
	DateWindowDays *float64
	// FuzzyThreshold (0-100) is the least Similarity of the two descriptions.
	FuzzyThreshold *float64
}

// Pair is one match: the two source records, unchanged, and their positions in the inputs.
// Its JSON is {left, right}, the matched element of the spec.
type Pair struct {
	Left       Record `json:"left"`
	Right      Record `json:"right"`
	LeftIndex  int    `json:"-"`
	RightIndex int    `json:"-"`
}

// MatchResult is what Match found. Matched is ordered by left index; the unmatched records
// keep their input order.
type MatchResult struct {
	Matched        []Pair
	UnmatchedLeft  []Record
	UnmatchedRight []Record
	// Policy is the effective configuration, defaults filled in, JSON-ready, for the
	// matcher.completed event.
	Policy map[string]any
}

// Outputs returns the three outputs as JSON-ready values for the run context: matched
// elements {left, right}, then the unmatched left and right records.
func (r *MatchResult) Outputs() (matched, unmatchedLeft, unmatchedRight []any) {
	// Plain map[string]any, not Record: a caller that keeps JSON values as the types
	// encoding/json decodes to (the executor does) takes these as they are, where a named
	// map type would cost it an encoding round trip of every pair.
	matched = make([]any, len(r.Matched))
	for i, p := range r.Matched {
		matched[i] = map[string]any{"left": map[string]any(p.Left), "right": map[string]any(p.Right)}
	}
	toAny := func(rs []Record) []any {
		out := make([]any, len(rs))
		for i, rec := range rs {
			out[i] = map[string]any(rec)
		}
		return out
	}
	return matched, toAny(r.UnmatchedLeft), toAny(r.UnmatchedRight)
}

// MaxUnindexedPairs bounds the pairs a matcher compares one by one when nothing indexes
// them: no tolerance or dateWindowDays, only fuzzyThreshold, within one matchOn key (or
// across the inputs when matchOn is empty).
const MaxUnindexedPairs = 20_000_000

// ValidateMatch checks a matcher's options as a workflow is saved. Pointers are relative
// to the step's properties.
func ValidateMatch(opts MatchOptions) []Problem {
	var out []Problem
	out = checkFields(out, "/matchOn", opts.MatchOn, false)
	if opts.Tolerance != nil && !(*opts.Tolerance >= 0) || opts.Tolerance != nil && math.IsInf(*opts.Tolerance, 0) {
		out = append(out, Problem{"/tolerance", "must be a finite number of at least 0"})
	}
	out = checkWindow(out, opts.DateWindowDays)
	out = checkThreshold(out, opts.FuzzyThreshold)
	return out
}

func checkFields(out []Problem, pointer string, fields []string, required bool) []Problem {
	if required && len(fields) == 0 {
		return append(out, Problem{pointer, "must name at least one field"})
	}
	seen := make(map[string]bool, len(fields))
	for i, f := range fields {
		switch {
		case f == "":
			out = append(out, Problem{fmt.Sprintf("%s/%d", pointer, i), "must be a non-empty field name"})
		case seen[f]:
			out = append(out, Problem{fmt.Sprintf("%s/%d", pointer, i), fmt.Sprintf("field %q is listed twice", f)})
		}
		seen[f] = true
	}
	return out
}

func checkWindow(out []Problem, w *float64) []Problem {
	if w != nil && (!(*w >= 0) || math.IsInf(*w, 0)) {
		out = append(out, Problem{"/dateWindowDays", "must be a finite number of days, at least 0"})
	}
	return out
}

func checkThreshold(out []Problem, t *float64) []Problem {
	if t != nil && !(*t >= 0 && *t <= 100) {
		out = append(out, Problem{"/fuzzyThreshold", fmt.Sprintf("must be between 0 and 100, got %v", *t)})
	}
	return out
}

// matchConfig is MatchOptions with defaults applied and thresholds in comparable units.
type matchConfig struct {
	matchOn                     []string
	amountKey, dateKey, descKey string
	useAmount, useDate, useText bool
	tolMinor                    int64
	windowDays                  int32
	threshold                   float64
}

func newMatchConfig(opts MatchOptions) matchConfig {
	c := matchConfig{
		matchOn:   opts.MatchOn,
		amountKey: cmp.Or(opts.AmountKey, "amount"),
		dateKey:   cmp.Or(opts.DateKey, "date"),
		descKey:   cmp.Or(opts.DescriptionKey, "description"),
	}
	if opts.Tolerance != nil {
		c.useAmount, c.tolMinor = true, toleranceMinor(*opts.Tolerance)
	}
	if opts.DateWindowDays != nil {
		c.useDate, c.windowDays = true, int32(math.Min(math.Floor(*opts.DateWindowDays+1e-9), 1<<30))
	}
	if opts.FuzzyThreshold != nil {
		c.useText, c.threshold = true, *opts.FuzzyThreshold
	}
	return c
}

func (c matchConfig) policy(opts MatchOptions) map[string]any {
	on := make([]any, len(c.matchOn))
	for i, f := range c.matchOn {
		on[i] = f
	}
	p := map[string]any{
		"matchOn":        on,
		"amountKey":      c.amountKey,
		"dateKey":        c.dateKey,
		"descriptionKey": c.descKey,
		"tolerance":      nil,
		"dateWindowDays": nil,
		"fuzzyThreshold": nil,
		"oneToOne":       true,
		"similarity":     "token_set_ratio",
		"tieBreak":       []any{"amount_difference", "date_drift", "similarity", "compared_values", "index"},
	}
	if opts.Tolerance != nil {
		p["tolerance"] = *opts.Tolerance
	}
	if opts.DateWindowDays != nil {
		p["dateWindowDays"] = *opts.DateWindowDays
	}
	if opts.FuzzyThreshold != nil {
		p["fuzzyThreshold"] = *opts.FuzzyThreshold
	}
	return p
}

// features are what a record compares by, read once, but its description: ok is false
// when the record lacks a value an enabled dimension needs, and such a record is never a
// candidate. The descriptions, when compared, are a slice of their own beside the
// features (16 bytes a record instead of 32: a million records' features take 16 MB).
type features struct {
	minor int64
	day   int32
	ok    bool
}

// fieldReader reads the fields a matcher compares, all of a record's in one Fields call:
// the amount, date and description when their dimension is enabled, then the matchOn
// fields (vals[keyFrom:] after a read).
type fieldReader struct {
	names              []string
	amount, date, desc int // positions in names; -1 when not read
	keyFrom            int
	vals               []Value
}

func newFieldReader(c *matchConfig) *fieldReader {
	r := &fieldReader{amount: -1, date: -1, desc: -1}
	add := func(use bool, name string) int {
		if !use {
			return -1
		}
		r.names = append(r.names, name)
		return len(r.names) - 1
	}
	r.amount = add(c.useAmount, c.amountKey)
	r.date = add(c.useDate, c.dateKey)
	r.desc = add(c.useText, c.descKey)
	r.keyFrom = len(r.names)
	r.names = append(r.names, c.matchOn...)
	r.vals = make([]Value, len(r.names))
	return r
}

// read reads record i of d and returns its features and its description ("" when not
// compared).
func (r *fieldReader) read(d Dataset, i int) (features, string) {
	if len(r.names) > 0 {
		d.Fields(i, r.names, r.vals)
	}
	f := features{ok: true}
	if r.amount >= 0 {
		v, ok := valueNumber(r.vals[r.amount])
		if ok {
			f.minor, ok = minorUnits(v)
		}
		f.ok = f.ok && ok
	}
	if r.date >= 0 {
		d, ok := valueDay(r.vals[r.date])
		f.day, f.ok = d, f.ok && ok
	}
	desc := ""
	if r.desc >= 0 {
		desc = valueText(r.vals[r.desc])
	}
	return f, desc
}

// readInto reads record i of d: its features, returned, and its description into descs
// when descriptions are compared (descs not nil).
func readInto(fr *fieldReader, d Dataset, i int, descs []string) features {
	f, desc := fr.read(d, i)
	if descs != nil {
		descs[i] = desc
	}
	return f
}

// keyValues are the matchOn values of the record read last.
func (r *fieldReader) keyValues() []Value { return r.vals[r.keyFrom:] }

// text is a description's string: a string as is, a number or boolean as its key text,
// anything else empty.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	switch v.(type) {
	case nil, map[string]any, []any:
		return ""
	}
	b, _ := keyText(nil, v)
	return string(b)
}

// candidate is a left/right pair that every enabled dimension allows.
type candidate struct {
	l, r  int32
	diff  int64 // amount difference in minor units
	drift int32 // days
	sim   int32 // exact similarity scaled to 0..1e6, so a fractional score ranks too
}

// Match pairs left and right records one to one.
//
// Candidates share the matchOn values (found through a hash index on them) and fall
// within the tolerance, the date window and the fuzzy threshold that are set. Among them
// the best pairs are taken first: smallest amount difference, then smallest date drift,
// then highest similarity; remaining ties go to the records whose compared values sort
// first (amount, date, description), and only records equal on every compared value fall
// back to input order (lowest left index, then lowest right index). Taking pairs in that
// global order and skipping any record already used makes the result independent of the
// input order: shuffling the inputs changes at most which of several interchangeable
// records (equal on everything compared) is paired.
//
// Within a matchOn key, candidates are found by sorting on amount and scanning the
// tolerance window (or on date and scanning the date window), never by comparing every
// pair; only a matcher with fuzzyThreshold alone compares pairs one by one, up to
// MaxUnindexedPairs per key, and fails with ErrTooManyPairs beyond.
func Match(left, right []Record, opts MatchOptions) (*MatchResult, error) {
	m, err := matchIndexes(Records(left), Records(right), opts)
	if err != nil {
		return nil, err
	}
	res := &MatchResult{Matched: make([]Pair, len(m.pairs)), Policy: m.policy}
	for i, p := range m.pairs {
		res.Matched[i] = Pair{Left: left[p.Left], Right: right[p.Right], LeftIndex: p.Left, RightIndex: p.Right}
	}
	res.UnmatchedLeft = make([]Record, 0, len(left)-len(m.pairs))
	for i, rec := range left {
		if !m.usedL[i] {
			res.UnmatchedLeft = append(res.UnmatchedLeft, rec)
		}
	}
	res.UnmatchedRight = make([]Record, 0, len(right)-len(m.pairs))
	for i, rec := range right {
		if !m.usedR[i] {
			res.UnmatchedRight = append(res.UnmatchedRight, rec)
		}
	}
	return res, nil
}

// IndexPair is one match by position: record Left of the left Dataset and record Right of
// the right one.
type IndexPair struct {
	Left, Right int
}

// matching is what the matcher decided, by position.
type matching struct {
	pairs        []IndexPair // by left index
	usedL, usedR []bool
	policy       map[string]any
}

// matchIndexes is Match on Datasets: each record's fields are read once, and the records
// are referred to by position only.
func matchIndexes(left, right Dataset, opts MatchOptions) (*matching, error) {
	if probs := ValidateMatch(opts); len(probs) > 0 {
		return nil, &ValidationError{Problems: probs}
	}
	c := newMatchConfig(opts)
	blocks, lf, rf, ld, rd := buildBlocks(left, right, &c)

	m := &matching{
		usedL:  make([]bool, left.Len()),
		usedR:  make([]bool, right.Len()),
		policy: c.policy(opts),
	}
	pairs := make([]IndexPair, 0, min(left.Len(), right.Len()))
	var cands []candidate
	var scratchL, scratchR []int32
	var prep preparedChunk
	for b := range blocks.count() {
		ls, rs := blocks.left(b), blocks.right(b)
		if len(ls) == 0 || len(rs) == 0 {
			continue
		}
		if !c.useAmount && !c.useDate && !c.useText {
			// Every pair is a candidate and all tie: input order decides.
			for k := range min(len(ls), len(rs)) {
				l, r := ls[k], rs[k]
				m.usedL[l], m.usedR[r] = true, true
				pairs = append(pairs, IndexPair{Left: int(l), Right: int(r)})
			}
			continue
		}
		scratchL = append(scratchL[:0], ls...)
		scratchR = append(scratchR[:0], rs...)
		var err error
		if cands, err = candidates(cands[:0], scratchL, scratchR, lf, rf, ld, rd, &c, &prep); err != nil {
			return nil, err
		}
		if len(cands) > 1 {
			slices.SortFunc(cands, func(a, b candidate) int { return compareCandidates(&a, &b, lf, rf, ld, rd, &c) })
		}
		for _, cd := range cands {
			if m.usedL[cd.l] || m.usedR[cd.r] {
				continue
			}
			m.usedL[cd.l], m.usedR[cd.r] = true, true
			pairs = append(pairs, IndexPair{Left: int(cd.l), Right: int(cd.r)})
		}
	}
	slices.SortFunc(pairs, func(a, b IndexPair) int { return cmp.Compare(a.Left, b.Left) })
	m.pairs = pairs
	return m, nil
}

// compareCandidates is the order in which candidate pairs are taken.
func compareCandidates(a, b *candidate, lf, rf []features, ld, rd []string, c *matchConfig) int {
	if n := cmp.Compare(a.diff, b.diff); n != 0 {
		return n
	}
	if n := cmp.Compare(a.drift, b.drift); n != 0 {
		return n
	}
	if n := cmp.Compare(b.sim, a.sim); n != 0 {
		return n
	}
	if a.l != b.l {
		if n := compareFeatures(lf, ld, a.l, b.l, c); n != 0 {
			return n
		}
	}
	if a.r != b.r {
		if n := compareFeatures(rf, rd, a.r, b.r, c); n != 0 {
			return n
		}
	}
	if n := cmp.Compare(a.l, b.l); n != 0 {
		return n
	}
	return cmp.Compare(a.r, b.r)
}

// compareFeatures compares records i and j of one side by their features and descriptions.
func compareFeatures(fs []features, descs []string, i, j int32, c *matchConfig) int {
	a, b := &fs[i], &fs[j]
	if c.useAmount {
		if n := cmp.Compare(a.minor, b.minor); n != 0 {
			return n
		}
	}
	if c.useDate {
		if n := cmp.Compare(a.day, b.day); n != 0 {
			return n
		}
	}
	if c.useText {
		return strings.Compare(descs[i], descs[j])
	}
	return 0
}

// candidates appends the allowed pairs between the left records ls and right records rs
// of one block. ls and rs are scratch copies it may reorder; prep is space for prepared
// descriptions, reused from block to block.
func candidates(out []candidate, ls, rs []int32, lf, rf []features, ld, rd []string, c *matchConfig, prep *preparedChunk) ([]candidate, error) {
	// emit adds the pair l, r when it is allowed. pl and pr are the descriptions prepared,
	// or nil to score them as they are.
	emit := func(l, r int32, pl, pr *Prepared) {
		a, b := &lf[l], &rf[r]
		cd := candidate{l: l, r: r}
		if c.useAmount {
			cd.diff = a.minor - b.minor
			if cd.diff < 0 {
				cd.diff = -cd.diff
			}
			if cd.diff > c.tolMinor {
				return
			}
		}
		if c.useDate {
			cd.drift = a.day - b.day
			if cd.drift < 0 {
				cd.drift = -cd.drift
			}
			if cd.drift > c.windowDays {
				return
			}
		}
		if c.useText {
			var num, den int
			if pl != nil && pr != nil {
				num, den = ratioPrepared(pl, pr, c.threshold)
			} else {
				num, den = similarityRatio(ld[l], rd[r], c.threshold)
			}
			if den == 0 {
				if c.threshold > 0 {
					return
				}
			} else {
				if float64(100*num) < c.threshold*float64(den) {
					return
				}
				cd.sim = int32(int64(num) * 1_000_000 / int64(den))
			}
		}
		out = append(out, cd)
	}
	switch {
	case c.useAmount:
		// Sort both sides by amount and scan the right records within the tolerance.
		byMinor := func(fs []features) func(a, b int32) int {
			return func(a, b int32) int {
				return cmp.Or(cmp.Compare(fs[a].minor, fs[b].minor), cmp.Compare(a, b))
			}
		}
		slices.SortFunc(ls, byMinor(lf))
		slices.SortFunc(rs, byMinor(rf))
		lo := 0
		for _, l := range ls {
			v := lf[l].minor
			for lo < len(rs) && rf[rs[lo]].minor < v-c.tolMinor {
				lo++
			}
			for k := lo; k < len(rs) && rf[rs[k]].minor <= v+c.tolMinor; k++ {
				emit(l, rs[k], nil, nil)
			}
		}
	case c.useDate:
		byDay := func(fs []features) func(a, b int32) int {
			return func(a, b int32) int {
				return cmp.Or(cmp.Compare(fs[a].day, fs[b].day), cmp.Compare(a, b))
			}
		}
		slices.SortFunc(ls, byDay(lf))
		slices.SortFunc(rs, byDay(rf))
		lo := 0
		for _, l := range ls {
			v := lf[l].day
			for lo < len(rs) && rf[rs[lo]].day < v-c.windowDays {
				lo++
			}
			for k := lo; k < len(rs) && rf[rs[k]].day <= v+c.windowDays; k++ {
				emit(l, rs[k], nil, nil)
			}
		}
	default:
		if n := int64(len(ls)) * int64(len(rs)); n > MaxUnindexedPairs {
			return nil, fmt.Errorf("%w: fuzzyThreshold alone would compare %d pairs (at most %d); add matchOn, tolerance or dateWindowDays",
				ErrTooManyPairs, n, int64(MaxUnindexedPairs))
		}
		if !c.useText || len(ls) < 2 || len(rs) < 2 {
			for _, l := range ls {
				for _, r := range rs {
					emit(l, r, nil, nil)
				}
			}
			break
		}
		// Every left description meets every right one: each is split and sorted once
		// for a chunk of right records, not once a pair.
		for at := 0; at < len(rs); at += preparedChunkLen {
			chunk := rs[at:min(at+preparedChunkLen, len(rs))]
			prep.reset()
			for _, r := range chunk {
				prep.prepared = append(prep.prepared, prep.prepare(rd[r]))
			}
			for _, l := range ls {
				pl := prep.prepareOne(ld[l])
				for k, r := range chunk {
					emit(l, r, pl, prep.prepared[k])
				}
			}
		}
	}
	return out, nil
}

// blockIndex groups the eligible records of both sides by matchOn key, in compressed form:
// block b's left records are lIdx[lOff[b]:lOff[b+1]], in input order, and likewise right.
type blockIndex struct {
	lOff, rOff []int32
	lIdx, rIdx []int32
}

func (b *blockIndex) count() int          { return len(b.lOff) - 1 }
func (b *blockIndex) left(i int) []int32  { return b.lIdx[b.lOff[i]:b.lOff[i+1]] }
func (b *blockIndex) right(i int) []int32 { return b.rIdx[b.rOff[i]:b.rOff[i+1]] }

// buildBlocks reads every record's fields once, the right side first: their features,
// and the right records' matchOn keys into a hash map in which each left record's key is
// looked up; left records whose key no right record has are left out at once.
func buildBlocks(left, right Dataset, c *matchConfig) (b *blockIndex, lf, rf []features, ld, rd []string) {
	lf = make([]features, left.Len())
	rf = make([]features, right.Len())
	if c.useText {
		ld, rd = make([]string, len(lf)), make([]string, len(rf))
	}
	lBlock := make([]int32, len(lf))
	rBlock := make([]int32, len(rf))
	nBlocks := 0
	// The left side's records are read on a goroutine of their own while this one reads
	// the right side's and indexes their keys: each a walk over its own records (a Dataset
	// is only read). The left keys are then looked up in the right side's index.
	var lKeys []string // the left records' keys; "" with lKeyed false: none
	var lKeyed []bool
	var wg sync.WaitGroup
	wg.Go(func() {
		fr := newFieldReader(c)
		if len(c.matchOn) == 0 {
			for i := range lf {
				lf[i] = readInto(fr, left, i, ld)
				lBlock[i] = blockOrNone(lf[i].ok, 0)
			}
			return
		}
		lKeys, lKeyed = make([]string, len(lf)), make([]bool, len(lf))
		var kb keyBuilder
		for i := range lf {
			lf[i] = readInto(fr, left, i, ld)
			if lf[i].ok && kb.buildValues(fr.keyValues()) {
				lKeys[i], lKeyed[i] = kb.String(), true
			}
		}
	})
	fr := newFieldReader(c)
	if len(c.matchOn) == 0 {
		nBlocks = 1
		for i := range rf {
			rf[i] = readInto(fr, right, i, rd)
			rBlock[i] = blockOrNone(rf[i].ok, 0)
		}
		wg.Wait()
	} else {
		index := make(map[string]int32)
		var kb keyBuilder
		for i := range rf {
			rf[i] = readInto(fr, right, i, rd)
			rBlock[i] = -1
			if !rf[i].ok || !kb.buildValues(fr.keyValues()) {
				continue
			}
			id, found := kb.lookup(index)
			if !found {
				id = int32(nBlocks)
				index[kb.String()] = id
				nBlocks++
			}
			rBlock[i] = id
		}
		wg.Wait()
		for i := range lf {
			lBlock[i] = -1
			if !lKeyed[i] {
				continue
			}
			if id, found := index[lKeys[i]]; found {
				lBlock[i] = id
			}
		}
	}
	b = &blockIndex{}
	b.lOff, b.lIdx = csr(lBlock, nBlocks)
	b.rOff, b.rIdx = csr(rBlock, nBlocks)
	return b, lf, rf, ld, rd
}

func blockOrNone(ok bool, id int32) int32 {
	if ok {
		return id
	}
	return -1
}

// csr turns a block id per record (-1: none) into offsets and record indexes per block,
// each block's records in input order.
func csr(blockOf []int32, n int) (off, idx []int32) {
	off = make([]int32, n+1)
	for _, b := range blockOf {
		if b >= 0 {
			off[b+1]++
		}
	}
	for i := range n {
		off[i+1] += off[i]
	}
	idx = make([]int32, off[n])
	next := slices.Clone(off[:n])
	for i, b := range blockOf {
		if b >= 0 {
			idx[next[b]] = int32(i)
			next[b]++
		}
	}
	return off, idx
}

// keyBuilder makes a record's match key text: with one field, that field's key text;
// with several, their key texts joined by "|", each with "\" and "|" escaped by a
// backslash. A one-field string key is the record's own string; other keys are built in a
// reused buffer, so looking a key up allocates nothing.
type keyBuilder struct {
	direct   string
	isDirect bool
	buf      []byte
	tmp      []byte
}

// build makes rec's key; false when a field is missing or null.
func (kb *keyBuilder) build(rec Record, fields []string) bool {
	if len(fields) == 1 {
		v := rec[fields[0]]
		if s, ok := v.(string); ok {
			kb.direct, kb.isDirect = s, true
			return true
		}
		kb.isDirect = false
		var ok bool
		kb.buf, ok = keyText(kb.buf[:0], v)
		return ok
	}
	kb.isDirect = false
	kb.buf = kb.buf[:0]
	for i, f := range fields {
		var ok bool
		if kb.tmp, ok = keyText(kb.tmp[:0], rec[f]); !ok {
			return false
		}
		kb.join(i)
	}
	return true
}

// buildValues is build on a Dataset's values of the matchOn fields.
func (kb *keyBuilder) buildValues(vals []Value) bool {
	if len(vals) == 1 {
		v := vals[0]
		if v.Kind == KindString {
			kb.direct, kb.isDirect = v.Text, true
			return true
		}
		if s, ok := v.goValue.(string); ok && v.Kind == kindGo {
			kb.direct, kb.isDirect = s, true
			return true
		}
		kb.isDirect = false
		var ok bool
		kb.buf, ok = valueKey(kb.buf[:0], v)
		return ok
	}
	kb.isDirect = false
	kb.buf = kb.buf[:0]
	for i, v := range vals {
		var ok bool
		if kb.tmp, ok = valueKey(kb.tmp[:0], v); !ok {
			return false
		}
		kb.join(i)
	}
	return true
}

// join appends field i's key text, in kb.tmp, to the composite key.
func (kb *keyBuilder) join(i int) {
	if i > 0 {
		kb.buf = append(kb.buf, '|')
	}
	for _, ch := range kb.tmp {
		if ch == '|' || ch == '\\' {
			kb.buf = append(kb.buf, '\\')
		}
		kb.buf = append(kb.buf, ch)
	}
}

func (kb *keyBuilder) lookup(index map[string]int32) (int32, bool) {
	if kb.isDirect {
		id, ok := index[kb.direct]
		return id, ok
	}
	id, ok := index[string(kb.buf)]
	return id, ok
}

// String is the key as a string of its own.
func (kb *keyBuilder) String() string {
	if kb.isDirect {
		return kb.direct
	}
	return string(kb.buf)
}
