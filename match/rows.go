package match

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// MarshalJSON writes the legs as an object keyed by leg, in leg order.
func (g GroupLegs) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, l := range g {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, l.Leg)
		buf = append(buf, ':')
		b, err := json.Marshal(l.jsonShape())
		if err != nil {
			return nil, err
		}
		buf = append(buf, b...)
	}
	return append(buf, '}'), nil
}

// groupLegJSON is GroupLeg's JSON shape, with empty slices written as [].
type groupLegJSON struct {
	Count   int      `json:"count"`
	Indexes []int    `json:"indexes"`
	Records []Record `json:"records"`
	Sums    Sums     `json:"sums"`
}

func (l GroupLeg) jsonShape() groupLegJSON {
	out := groupLegJSON{Count: l.Count, Indexes: l.Indexes, Records: l.Records, Sums: l.Sums}
	if out.Indexes == nil {
		out.Indexes = []int{}
	}
	if out.Records == nil {
		out.Records = []Record{}
	}
	return out
}

// MarshalJSON writes the sums as an object keyed by field, in field order.
func (s Sums) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, f := range s {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, f.Field)
		buf = append(buf, ':')
		b, err := json.Marshal(f.Value)
		if err != nil {
			return nil, err
		}
		buf = append(buf, b...)
	}
	return append(buf, '}'), nil
}

// Context returns the step's four context keys as JSON-ready values (maps, slices,
// strings, numbers), which @paths can walk: matchGroupCounts, matchGroups, matchOrphans
// and matchGroupExceptions. Their JSON is that of Counts, Groups, Orphans and Exceptions.
func (r *NWayResult) Context() map[string]any {
	groups := make([]any, len(r.Groups))
	for i := range r.Groups {
		groups[i] = groupMap(&r.Groups[i])
	}
	orphans := make([]any, len(r.Orphans))
	for i := range r.Orphans {
		orphans[i] = orphanMap(&r.Orphans[i])
	}
	exceptions := make([]any, len(r.Exceptions))
	for i, x := range r.Exceptions {
		exceptions[i] = map[string]any{
			"run_id":             x.RunID,
			"match_key":          x.MatchKey,
			"classification":     x.Classification,
			"missing_legs":       x.MissingLegs,
			"discrepancy_fields": x.DiscrepancyFields,
			"details":            x.Details,
			"status":             x.Status,
		}
	}
	return map[string]any{
		"matchGroupCounts": map[string]any{
			"groups":      r.Counts.Groups,
			"full":        r.Counts.Full,
			"missing_leg": r.Counts.MissingLeg,
			"variance":    r.Counts.Variance,
			"orphan":      r.Counts.Orphan,
		},
		"matchGroups":          groups,
		"matchOrphans":         orphans,
		"matchGroupExceptions": exceptions,
	}
}

// groupMap is a group row as a JSON-ready map: what rules receive and what matchGroups
// holds.
func groupMap(g *Group) map[string]any {
	legs := make(map[string]any, len(g.Legs))
	for _, l := range g.Legs {
		idx := make([]any, len(l.Indexes))
		for i, v := range l.Indexes {
			idx[i] = v
		}
		recs := make([]any, len(l.Records))
		for i, rec := range l.Records {
			recs[i] = rec
		}
		sums := make(map[string]any, len(l.Sums))
		for _, s := range l.Sums {
			sums[s.Field] = s.Value
		}
		legs[l.Leg] = map[string]any{"count": l.Count, "indexes": idx, "records": recs, "sums": sums}
	}
	disc := make([]any, len(g.Discrepancies))
	for i := range g.Discrepancies {
		disc[i] = discrepancyMap(&g.Discrepancies[i])
	}
	return map[string]any{
		"schema_version": g.SchemaVersion,
		"match_key":      g.MatchKey,
		"classification": g.Classification,
		"legs_present":   strings2any(g.LegsPresent),
		"missing_legs":   strings2any(g.MissingLegs),
		"legs":           legs,
		"discrepancies":  disc,
		"failed_rules":   strings2any(g.FailedRules),
	}
}

func discrepancyMap(d *Discrepancy) map[string]any {
	m := map[string]any{"kind": d.Kind}
	if d.Field != "" {
		m["field"] = d.Field
	}
	if len(d.Legs) > 0 {
		m["legs"] = strings2any(d.Legs)
	}
	if len(d.Values) > 0 {
		m["values"] = append([]any(nil), d.Values...)
	}
	if d.Difference != nil {
		m["difference"] = *d.Difference
	}
	if d.Score != nil {
		m["score"] = *d.Score
	}
	if d.Allowed != nil {
		m["allowed"] = *d.Allowed
	}
	if d.Rule != "" {
		m["rule"] = d.Rule
	}
	if d.Message != "" {
		m["message"] = d.Message
	}
	return m
}

func orphanMap(o *Orphan) map[string]any {
	m := map[string]any{
		"schema_version": o.SchemaVersion,
		"match_key":      o.MatchKey,
		"classification": o.Classification,
		"leg":            o.Leg,
		"index":          o.Index,
		"key":            o.Key,
		"reason":         o.Reason,
		"record":         o.Record,
	}
	if len(o.MissingFields) > 0 {
		m["missing_fields"] = strings2any(o.MissingFields)
	}
	return m
}

func strings2any(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// details is the JSON of an exception row's details column:
//
//	{"legs_present": [...], "missing_legs": [...],
//	 "rollups": {"<leg>": {"count": n, "sums": {"<field>": n}}},
//	 "discrepancies": [...], "failed_rules": [...],
//	 "leg": "...", "index": n, "reason": "...", "record": {...},          // orphans
//	 "sums_omitted": true, "truncated": true,                              // when cut
//	 "omitted_discrepancies": n, "original_bytes": n}
type details struct {
	legsPresent   []string
	missingLegs   []string
	rollups       []GroupLeg // present legs only
	discrepancies []Discrepancy
	failedRules   []string
	orphan        *Orphan
	withRecord    bool
	withoutSums   bool
	truncated     bool
	omitted       int
	originalBytes int
}

// appendJSON writes d by hand: exception rows are many, and reflection would dominate.
func (d *details) appendJSON(b []byte) []byte {
	b = append(b, `{"legs_present":`...)
	b = appendStrings(b, d.legsPresent)
	b = append(b, `,"missing_legs":`...)
	b = appendStrings(b, d.missingLegs)
	b = append(b, `,"rollups":{`...)
	for i, l := range d.rollups {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, l.Leg)
		b = append(b, `:{"count":`...)
		b = strconv.AppendInt(b, int64(l.Count), 10)
		if !d.withoutSums {
			b = append(b, `,"sums":{`...)
			for k, s := range l.Sums {
				if k > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, s.Field)
				b = append(b, ':')
				b = appendNumber(b, s.Value)
			}
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	b = append(b, `},"discrepancies":[`...)
	for i := range d.discrepancies {
		if i > 0 {
			b = append(b, ',')
		}
		b = d.discrepancies[i].appendJSON(b)
	}
	b = append(b, ']')
	if len(d.failedRules) > 0 {
		b = append(b, `,"failed_rules":`...)
		b = appendStrings(b, d.failedRules)
	}
	if o := d.orphan; o != nil {
		b = append(b, `,"leg":`...)
		b = appendJSONString(b, o.Leg)
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(o.Index), 10)
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, o.Reason)
		if d.withRecord {
			b = append(b, `,"record":`...)
			b = appendCanonical(b, o.Record)
		}
	}
	if d.truncated {
		if d.withoutSums {
			b = append(b, `,"sums_omitted":true`...)
		}
		b = append(b, `,"truncated":true,"omitted_discrepancies":`...)
		b = strconv.AppendInt(b, int64(d.omitted), 10)
		b = append(b, `,"original_bytes":`...)
		b = strconv.AppendInt(b, int64(d.originalBytes), 10)
	}
	return append(b, '}')
}

// appendJSON writes the discrepancy as encoding/json would (same fields, same order).
func (x *Discrepancy) appendJSON(b []byte) []byte {
	b = append(b, `{"kind":`...)
	b = appendJSONString(b, x.Kind)
	if x.Field != "" {
		b = append(b, `,"field":`...)
		b = appendJSONString(b, x.Field)
	}
	if len(x.Legs) > 0 {
		b = append(b, `,"legs":`...)
		b = appendStrings(b, x.Legs)
	}
	if len(x.Values) > 0 {
		b = append(b, `,"values":[`...)
		for i, v := range x.Values {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonical(b, v)
		}
		b = append(b, ']')
	}
	if x.Difference != nil {
		b = append(b, `,"difference":`...)
		b = appendNumber(b, *x.Difference)
	}
	if x.Score != nil {
		b = append(b, `,"score":`...)
		b = strconv.AppendInt(b, int64(*x.Score), 10)
	}
	if x.Allowed != nil {
		b = append(b, `,"allowed":`...)
		b = appendNumber(b, *x.Allowed)
	}
	if x.Rule != "" {
		b = append(b, `,"rule":`...)
		b = appendJSONString(b, x.Rule)
	}
	if x.Message != "" {
		b = append(b, `,"message":`...)
		b = appendJSONString(b, x.Message)
	}
	return append(b, '}')
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// exceptionWriter builds exception rows, reusing its buffer.
type exceptionWriter struct {
	buf     []byte
	fields  []string
	rollups []GroupLeg
	legs    []string
}

func (w *exceptionWriter) group(g *Group) ExceptionRow {
	w.fields = w.fields[:0]
	for _, d := range g.Discrepancies {
		f := d.Field
		if d.Kind == KindRule {
			f = "rule:" + d.Rule
		}
		if !slices.Contains(w.fields, f) {
			w.fields = append(w.fields, f)
		}
	}
	w.rollups = w.rollups[:0]
	for _, l := range g.Legs {
		if l.Count > 0 {
			w.rollups = append(w.rollups, l)
		}
	}
	d := details{
		legsPresent:   g.LegsPresent,
		missingLegs:   g.MissingLegs,
		rollups:       w.rollups,
		discrepancies: g.Discrepancies,
		failedRules:   g.FailedRules,
	}
	return ExceptionRow{
		MatchKey:          g.MatchKey,
		Classification:    g.Classification,
		MissingLegs:       strings.Join(g.MissingLegs, ","),
		DiscrepancyFields: strings.Join(w.fields, ","),
		Details:           w.bounded(&d),
		Status:            StatusPendingReview,
	}
}

func (w *exceptionWriter) orphan(o *Orphan) ExceptionRow {
	missing := make([]string, 0, len(w.legs)-1)
	for _, l := range w.legs {
		if l != o.Leg {
			missing = append(missing, l)
		}
	}
	w.rollups = append(w.rollups[:0], GroupLeg{Leg: o.Leg, Count: 1})
	d := details{
		legsPresent: []string{o.Leg},
		missingLegs: missing,
		rollups:     w.rollups,
		orphan:      o,
		withRecord:  true,
	}
	return ExceptionRow{
		MatchKey:       o.MatchKey,
		Classification: ClassOrphan,
		MissingLegs:    strings.Join(missing, ","),
		Details:        w.bounded(&d),
		Status:         StatusPendingReview,
	}
}

// bounded writes d within MaxDetailsBytes. Over the bound it drops the record, then as
// many trailing discrepancies as needed (and the roll-ups' sums, when even no
// discrepancy fits), and says so: "truncated": true, with the number of discrepancies
// left out and the original size. The result is always valid JSON.
func (w *exceptionWriter) bounded(d *details) string {
	w.buf = d.appendJSON(w.buf[:0])
	if len(w.buf) <= MaxDetailsBytes {
		return string(w.buf)
	}
	original := len(w.buf)
	all := d.discrepancies
	d.withRecord, d.truncated, d.originalBytes = false, true, original
	fits := func(n int) bool {
		d.discrepancies, d.omitted = all[:n], len(all)-n
		w.buf = d.appendJSON(w.buf[:0])
		return len(w.buf) <= MaxDetailsBytes
	}
	for range 2 {
		// The largest number of discrepancies that fits.
		if n := sort.Search(len(all)+1, func(n int) bool { return !fits(n) }) - 1; n >= 0 && fits(n) {
			return string(w.buf)
		}
		d.withoutSums = true
	}
	return `{"truncated":true,"original_bytes":` + strconv.Itoa(original) + `}`
}
