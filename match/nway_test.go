package match

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/match/internal/gen"
)

// classes maps each group's match key to its classification, and each orphan's leg:index.
func classes(res *NWayResult) map[string]string {
	out := map[string]string{}
	for _, g := range res.Groups {
		out[g.MatchKey] = g.Classification
	}
	for _, o := range res.Orphans {
		out[fmt.Sprintf("orphan %s %v", o.Leg, o.Record["id"])] = o.Reason
	}
	return out
}

func currency(v float64) map[string]Tolerance {
	return map[string]Tolerance{"amount": {Type: ToleranceCurrency, Value: v}}
}

func TestNWayClassification(t *testing.T) {
	t.Parallel()

	legs := []Leg{
		{"ledger", []Record{
			{"id": "l1", "inv": "A", "amount": 100.0, "date": "2024-03-01"},
			{"id": "l2", "inv": "B", "amount": 50.0, "date": "2024-03-01"},
			{"id": "l3", "inv": "C", "amount": 10.0, "date": "2024-03-01"},
			{"id": "l4", "inv": "D", "amount": 7.0, "date": "2024-03-01"},
			{"id": "l5", "amount": 1.0}, // no key
		}},
		{"bank", []Record{
			{"id": "b1", "inv": "A", "amount": 60.0, "date": "2024-03-02"}, // split payment
			{"id": "b2", "inv": "A", "amount": 40.0, "date": "2024-03-03"},
			{"id": "b3", "inv": "B", "amount": 49.0, "date": "2024-03-01"}, // short by 1
			{"id": "b4", "inv": "E", "amount": 3.0, "date": "2024-03-01"},  // nobody else has E
		}},
		{"processor", []Record{
			{"id": "p1", "inv": "A", "amount": 100.0, "date": "2024-03-01"},
			{"id": "p2", "inv": "B", "amount": 50.0, "date": "2024-03-01"},
			{"id": "p3", "inv": "C", "amount": 10.0, "date": "2024-03-01"},
		}},
	}
	res, err := NWay(legs, NWayOptions{MatchOn: []string{"inv"}, Tolerances: currency(0.5), DateWindowDays: f64(2)})
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"A":                ClassFull,       // 60 + 40 = 100 in every leg, dates within 2 days
		"B":                ClassVariance,   // bank 49 vs 50
		"C":                ClassMissingLeg, // no bank record
		"orphan ledger l4": ReasonOneLeg,
		"orphan ledger l5": ReasonMissingFields,
		"orphan bank b4":   ReasonOneLeg,
	}, classes(res))
	require.Equal(t, Counts{Groups: 3, Full: 1, MissingLeg: 1, Variance: 1, Orphan: 3}, res.Counts)

	a := res.Groups[0]
	require.Equal(t, SchemaVersion, a.SchemaVersion)
	bank, ok := a.Legs.Get("bank")
	require.True(t, ok)
	require.Equal(t, 2, bank.Count)
	require.Equal(t, []int{0, 1}, bank.Indexes)
	sum, _ := bank.Sums.Get("amount")
	require.Equal(t, 100.0, sum)

	b := res.Groups[1]
	require.Equal(t, []Discrepancy{
		{Kind: KindTolerance, Field: "amount", Legs: []string{"ledger", "bank"}, Values: []any{50.0, 49.0}, Difference: f64(1), Allowed: f64(0.5)},
		{Kind: KindTolerance, Field: "amount", Legs: []string{"bank", "processor"}, Values: []any{49.0, 50.0}, Difference: f64(1), Allowed: f64(0.5)},
	}, b.Discrepancies)

	c := res.Groups[2]
	require.Equal(t, []string{"ledger", "processor"}, c.LegsPresent)
	require.Equal(t, []string{"bank"}, c.MissingLegs)

	// Orphans in leg order, then index; missing fields named.
	require.Equal(t, []string{"ledger", "ledger", "bank"}, []string{res.Orphans[0].Leg, res.Orphans[1].Leg, res.Orphans[2].Leg})
	require.Equal(t, []int{3, 4, 3}, []int{res.Orphans[0].Index, res.Orphans[1].Index, res.Orphans[2].Index})
	require.Equal(t, []string{"inv"}, res.Orphans[1].MissingFields)
	require.Equal(t, "D", res.Orphans[0].Key)

	// Exceptions: the non-full groups in key order, then the orphans.
	var rows []string
	for _, x := range res.Exceptions {
		require.Equal(t, StatusPendingReview, x.Status)
		require.Empty(t, x.RunID)
		require.True(t, json.Valid([]byte(x.Details)), x.Details)
		rows = append(rows, strings.Join([]string{x.MatchKey, x.Classification, x.MissingLegs, x.DiscrepancyFields}, " | "))
	}
	require.Equal(t, []string{
		"B | variance |  | amount",
		"C | missing_leg | bank | ",
		res.Orphans[0].MatchKey + " | orphan | bank,processor | ",
		res.Orphans[1].MatchKey + " | orphan | bank,processor | ",
		res.Orphans[2].MatchKey + " | orphan | ledger,processor | ",
	}, rows)
	require.JSONEq(t, `{"legs_present":["ledger","bank","processor"],"missing_legs":[],
		"rollups":{"ledger":{"count":1,"sums":{"amount":50}},"bank":{"count":1,"sums":{"amount":49}},"processor":{"count":1,"sums":{"amount":50}}},
		"discrepancies":[
			{"kind":"tolerance","field":"amount","legs":["ledger","bank"],"values":[50,49],"difference":1,"allowed":0.5},
			{"kind":"tolerance","field":"amount","legs":["bank","processor"],"values":[49,50],"difference":1,"allowed":0.5}]}`,
		res.Exceptions[0].Details)
}

func TestNWayOrphanMatchKey(t *testing.T) {
	t.Parallel()

	rec := Record{"inv": "Z", "amount": 1.5, "note": "a<b"}
	res, err := NWay([]Leg{{"a", []Record{{"inv": "Q"}, rec}}, {"b", []Record{{"inv": "Q"}}}}, NWayOptions{MatchOn: []string{"inv"}})
	require.NoError(t, err)
	require.Len(t, res.Orphans, 1)
	// Canonical JSON: sorted keys, no spaces, no HTML escaping.
	sum := sha256.Sum256([]byte(`{"amount":1.5,"inv":"Z","note":"a<b"}`))
	require.Equal(t, "orphan:a:1:"+hex.EncodeToString(sum[:])[:16], res.Orphans[0].MatchKey)
}

func TestNWayCurrencyAndAbs(t *testing.T) {
	t.Parallel()

	legs := []Leg{
		{"x", []Record{{"k": "1", "amount": 0.1}, {"k": "1", "amount": 0.2}}},
		{"y", []Record{{"k": "1", "amount": 0.3}}},
	}
	tests := []struct {
		typ  string
		want string
	}{
		{ToleranceCurrency, ClassFull}, // 10 + 20 cents = 30 cents
		{ToleranceAbs, ClassVariance},  // 0.1 + 0.2 = 0.30000000000000004 > 0.3 + 0
	}
	for _, tt := range tests {
		res, err := NWay(legs, NWayOptions{MatchOn: []string{"k"}, Tolerances: map[string]Tolerance{"amount": {Type: tt.typ}}})
		require.NoError(t, err)
		require.Equal(t, tt.want, res.Groups[0].Classification, tt.typ)
	}
}

func TestNWayPairsOverrideIsSymmetric(t *testing.T) {
	t.Parallel()

	legs := []Leg{
		{"ledger", []Record{{"k": "1", "amount": 100.0}}},
		{"bank", []Record{{"k": "1", "amount": 98.0}}}, // fees taken: 2 off
		{"erp", []Record{{"k": "1", "amount": 100.0}}},
	}
	for _, pair := range []string{"ledger:bank", "bank:ledger"} {
		for _, other := range []string{"bank:erp", "erp:bank"} {
			tol := map[string]Tolerance{"amount": {Type: ToleranceCurrency, Value: 0, Pairs: map[string]float64{pair: 2, other: 2}}}
			res, err := NWay(legs, NWayOptions{MatchOn: []string{"k"}, Tolerances: tol})
			require.NoError(t, err)
			require.Equal(t, ClassFull, res.Groups[0].Classification, "%s %s", pair, other)
		}
	}
	// Without the bank:erp override the default 0 applies to that pair only.
	tol := map[string]Tolerance{"amount": {Type: ToleranceCurrency, Pairs: map[string]float64{"bank:ledger": 2}}}
	res, err := NWay(legs, NWayOptions{MatchOn: []string{"k"}, Tolerances: tol})
	require.NoError(t, err)
	require.Len(t, res.Groups[0].Discrepancies, 1)
	require.Equal(t, []string{"bank", "erp"}, res.Groups[0].Discrepancies[0].Legs)
}

func TestNWayFieldWithoutToleranceIsNotCompared(t *testing.T) {
	t.Parallel()

	legs := []Leg{{"a", []Record{{"k": "1", "amount": 1.0, "fee": 9.0}}}, {"b", []Record{{"k": "1", "amount": 1.0, "fee": 0.0}}}}
	res, err := NWay(legs, NWayOptions{MatchOn: []string{"k"}, Tolerances: currency(0)})
	require.NoError(t, err)
	require.Equal(t, ClassFull, res.Groups[0].Classification)
}

func TestNWayMissingValues(t *testing.T) {
	t.Parallel()

	legs := []Leg{
		{"a", []Record{{"k": "1", "amount": 1.0, "date": "2024-01-01"}}},
		{"b", []Record{{"k": "1", "amount": "unknown"}}},
	}
	res, err := NWay(legs, NWayOptions{MatchOn: []string{"k"}, Tolerances: currency(0), DateWindowDays: f64(1)})
	require.NoError(t, err)
	g := res.Groups[0]
	require.Equal(t, ClassVariance, g.Classification)
	require.Equal(t, []string{KindMissingValue, KindMissingValue}, []string{g.Discrepancies[0].Kind, g.Discrepancies[1].Kind})
	require.Equal(t, "amount,date", res.Exceptions[0].DiscrepancyFields)
}

func TestNWayDatesAndText(t *testing.T) {
	t.Parallel()

	legs := []Leg{
		{"a", []Record{{"k": "1", "date": "2024-01-01", "description": "ACME invoice 7"}, {"k": "2", "date": "2024-01-01", "description": "x"}}},
		{"b", []Record{{"k": "1", "date": "2024-01-03", "description": "invoice 7 acme"}, {"k": "2", "date": "2024-01-09", "description": "y"}}},
	}
	res, err := NWay(legs, NWayOptions{MatchOn: []string{"k"}, DateWindowDays: f64(2), FuzzyThreshold: f64(90)})
	require.NoError(t, err)
	require.Equal(t, ClassFull, res.Groups[0].Classification)
	g := res.Groups[1]
	require.Equal(t, ClassVariance, g.Classification)
	zero := 0
	require.Equal(t, []Discrepancy{
		{Kind: KindDateWindow, Field: "date", Legs: []string{"a", "b"}, Values: []any{"2024-01-01", "2024-01-09"}, Difference: f64(8), Allowed: f64(2)},
		{Kind: KindSimilarity, Field: "description", Legs: []string{"a", "b"}, Score: &zero, Allowed: f64(90)},
	}, g.Discrepancies)
	require.Equal(t, "date,description", res.Exceptions[0].DiscrepancyFields)
}

func TestNWayRules(t *testing.T) {
	t.Parallel()

	legs := []Leg{
		{"bank", []Record{{"k": "1", "amount": 5.0}, {"k": "2", "amount": 5.0}, {"k": "2", "amount": 5.0}}},
		{"ledger", []Record{{"k": "1", "amount": 5.0}, {"k": "2", "amount": 10.0}}},
	}
	oneBankRecord := Rule{Name: "one_bank_record", Eval: func(g map[string]any) (bool, error) {
		// What {"equal": ["@group.legs.bank.count", 1]} reads.
		return g["legs"].(map[string]any)["bank"].(map[string]any)["count"] == 1, nil
	}}
	var seen map[string]any
	spy := Rule{Eval: func(g map[string]any) (bool, error) { seen = g; return true, nil }}
	res, err := NWay(legs, NWayOptions{MatchOn: []string{"k"}, Tolerances: currency(0), Rules: []Rule{oneBankRecord, spy}})
	require.NoError(t, err)
	require.Equal(t, ClassFull, res.Groups[0].Classification)
	g := res.Groups[1]
	require.Equal(t, ClassVariance, g.Classification)
	require.Equal(t, []string{"one_bank_record"}, g.FailedRules)
	require.Equal(t, []Discrepancy{{Kind: KindRule, Rule: "one_bank_record"}}, g.Discrepancies)
	require.Equal(t, "rule:one_bank_record", res.Exceptions[0].DiscrepancyFields)

	// The rule's view is the group row before the rules, as JSON-ready values.
	require.Equal(t, "2", seen["match_key"])
	require.Equal(t, ClassFull, seen["classification"])
	bank := seen["legs"].(map[string]any)["bank"].(map[string]any)
	require.Equal(t, 2, bank["count"])
	require.Equal(t, map[string]any{"amount": 10.0}, bank["sums"])
	require.Equal(t, []any{1, 2}, bank["indexes"])

	boom := errors.New("boom")
	_, err = NWay(legs, NWayOptions{MatchOn: []string{"k"}, Rules: []Rule{{Eval: func(map[string]any) (bool, error) { return false, boom }}}})
	require.ErrorIs(t, err, ErrRule)
	require.ErrorContains(t, err, `rule "rules/0" on group "1": boom`)
}

func TestNWayDeterministicJSON(t *testing.T) {
	t.Parallel()

	legs := randomLegs(3, 200, 42)
	opts := NWayOptions{MatchOn: []string{"k", "c"}, Tolerances: map[string]Tolerance{
		"amount": {Type: ToleranceCurrency, Value: 0.02, Pairs: map[string]float64{"l1:l0": 0.1}},
		"qty":    {Type: ToleranceAbs, Value: 0},
	}, DateWindowDays: f64(2), FuzzyThreshold: f64(50)}
	first := marshalResult(t, legs, opts)
	for range 5 {
		require.Equal(t, first, marshalResult(t, legs, opts))
	}
}

func marshalResult(t *testing.T, legs []Leg, opts NWayOptions) string {
	t.Helper()
	res, err := NWay(legs, opts)
	require.NoError(t, err)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	c, err := json.Marshal(res.Context())
	require.NoError(t, err)
	return string(b) + "\n" + string(c)
}

// randomLegs makes legs whose records share keys often, with noisy amounts, quantities,
// dates and descriptions.
func randomLegs(n, size int, seed uint64) []Leg {
	rng := rand.New(rand.NewPCG(seed, seed))
	words := []string{"acme", "globex", "invoice", "fee", "ref", "payment"}
	legs := make([]Leg, n)
	for li := range legs {
		legs[li].Key = fmt.Sprint("l", li)
		for range size {
			rec := Record{
				"k":           fmt.Sprint(rng.IntN(size / 2)),
				"c":           []string{"EUR", "USD"}[rng.IntN(2)],
				"amount":      float64(rng.IntN(400)) / 100,
				"qty":         float64(rng.IntN(3)) * 0.1,
				"date":        fmt.Sprintf("2024-02-%02d", 1+rng.IntN(9)),
				"description": words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))],
			}
			switch rng.IntN(20) {
			case 0:
				delete(rec, "k")
			case 1:
				rec["amount"] = "?"
			case 2:
				delete(rec, "date")
			}
			legs[li].Records = append(legs[li].Records, rec)
		}
	}
	return legs
}

// TestNWayReorderInvariance: shuffling the records within legs changes no group's
// classification, discrepancies or sums, and no count; only orphan keys (they carry the
// index) and the order of records inside a group.
func TestNWayReorderInvariance(t *testing.T) {
	t.Parallel()

	opts := NWayOptions{MatchOn: []string{"k", "c"}, Tolerances: map[string]Tolerance{
		"amount": {Type: ToleranceCurrency, Value: 0.02},
		"qty":    {Type: ToleranceAbs, Value: 0},
	}, DateWindowDays: f64(2), FuzzyThreshold: f64(50)}
	for seed := range uint64(10) {
		legs := randomLegs(2+int(seed%3), 150, seed)
		want := invariantView(t, legs, opts)
		rng := rand.New(rand.NewPCG(seed, 7))
		for range 3 {
			shuffled := make([]Leg, len(legs))
			for i, l := range legs {
				recs := slices.Clone(l.Records)
				rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
				shuffled[i] = Leg{l.Key, recs}
			}
			require.Equal(t, want, invariantView(t, shuffled, opts), "seed %d", seed)
		}
	}
}

func invariantView(t *testing.T, legs []Leg, opts NWayOptions) []string {
	t.Helper()
	res, err := NWay(legs, opts)
	require.NoError(t, err)
	out := []string{fmt.Sprintf("%+v", res.Counts)}
	for _, g := range res.Groups {
		var sums []string
		for _, l := range g.Legs {
			sums = append(sums, fmt.Sprint(l.Leg, l.Count, l.Sums))
		}
		d, err := json.Marshal(g.Discrepancies)
		require.NoError(t, err)
		out = append(out, fmt.Sprint(g.MatchKey, g.Classification, sums, string(d)))
	}
	var orphans []string
	for _, o := range res.Orphans {
		orphans = append(orphans, o.Leg+" "+string(appendCanonical(nil, o.Record)))
	}
	slices.Sort(orphans)
	return append(out, orphans...)
}

func TestNWayContextMatchesRows(t *testing.T) {
	t.Parallel()

	legs := randomLegs(3, 60, 3)
	res, err := NWay(legs, NWayOptions{MatchOn: []string{"k"}, Tolerances: currency(0.05), DateWindowDays: f64(1)})
	require.NoError(t, err)
	ctx := res.Context()
	require.ElementsMatch(t, []string{"matchGroupCounts", "matchGroups", "matchOrphans", "matchGroupExceptions"}, sortedKeys(ctx))
	same := func(typed, generic any) {
		a, err := json.Marshal(typed)
		require.NoError(t, err)
		b, err := json.Marshal(generic)
		require.NoError(t, err)
		require.JSONEq(t, string(a), string(b))
	}
	same(res.Counts, ctx["matchGroupCounts"])
	same(res.Groups, ctx["matchGroups"])
	same(res.Orphans, ctx["matchOrphans"])
	same(res.Exceptions, ctx["matchGroupExceptions"])
	require.Len(t, ctx["matchGroupExceptions"], res.Counts.Variance+res.Counts.MissingLeg+res.Counts.Orphan)
}

func TestNWayExceptionDetailsBounded(t *testing.T) {
	t.Parallel()

	// 300 tolerance fields, all off, make details far over 8 KiB.
	tol := map[string]Tolerance{}
	a, b := Record{"k": "1"}, Record{"k": "1"}
	for i := range 300 {
		f := fmt.Sprintf("field_with_a_long_name_%03d", i)
		tol[f] = Tolerance{Type: ToleranceAbs}
		a[f], b[f] = 1.0, 2.0
	}
	big := strings.Repeat("x", 20_000)
	res, err := NWay([]Leg{{"a", []Record{a, {"k": "2", "blob": big}}}, {"b", []Record{b}}},
		NWayOptions{MatchOn: []string{"k"}, Tolerances: tol})
	require.NoError(t, err)
	require.Len(t, res.Exceptions, 2)
	for _, x := range res.Exceptions {
		require.LessOrEqual(t, len(x.Details), MaxDetailsBytes)
		var d map[string]any
		require.NoError(t, json.Unmarshal([]byte(x.Details), &d), "still valid JSON")
		require.Equal(t, true, d["truncated"], "the marker")
		require.Greater(t, d["original_bytes"], float64(MaxDetailsBytes))
	}
	var d map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Exceptions[0].Details), &d))
	kept := len(d["discrepancies"].([]any))
	require.Positive(t, kept)
	require.Equal(t, float64(300-kept), d["omitted_discrepancies"])
	require.Len(t, strings.Split(res.Exceptions[0].DiscrepancyFields, ","), 300, "the column still names every field")
	require.NoError(t, json.Unmarshal([]byte(res.Exceptions[1].Details), &d))
	require.NotContains(t, d, "record", "an orphan's oversized record is dropped first")
	require.Equal(t, "a", d["leg"])
}

func TestNWayInvalidOptions(t *testing.T) {
	t.Parallel()

	two := []Leg{{"a", nil}, {"b", nil}}
	tests := []struct {
		name string
		legs []Leg
		opts NWayOptions
		want []Problem
	}{
		{"one leg", []Leg{{"a", nil}}, NWayOptions{MatchOn: []string{"k"}},
			[]Problem{{"/sets", "must hold 2 to 4 legs, got 1"}}},
		{"five legs", []Leg{{"a", nil}, {"b", nil}, {"c", nil}, {"d", nil}, {"e", nil}}, NWayOptions{MatchOn: []string{"k"}},
			[]Problem{{"/sets", "must hold 2 to 4 legs, got 5"}}},
		{"empty leg key", []Leg{{"a", nil}, {"", nil}}, NWayOptions{MatchOn: []string{"k"}},
			[]Problem{{"/sets/1/key", "every set needs a key"}}},
		{"duplicate leg key", []Leg{{"a", nil}, {"a", nil}}, NWayOptions{MatchOn: []string{"k"}},
			[]Problem{{"/sets/1/key", `leg key "a" is used twice`}}},
		{"pair names an unknown leg", two, NWayOptions{MatchOn: []string{"k"}, Tolerances: map[string]Tolerance{
			"amount": {Type: "abs", Pairs: map[string]float64{"a:z": 1}}}},
			[]Problem{{"/tolerances/amount/pairs/a:z", "does not name two legs of sets (a, b)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NWay(tt.legs, tt.opts)
			require.ErrorIs(t, err, ErrInvalidOptions)
			var verr *ValidationError
			require.True(t, errors.As(err, &verr))
			require.Equal(t, tt.want, verr.Problems)
		})
	}
}

// TestNWayParallelEqualsSerial: enough groups to be evaluated in parallel parts give the
// same result as the serial evaluation that rules force (a rule that is always true).
func TestNWayParallelEqualsSerial(t *testing.T) {
	t.Parallel()

	data := gen.Synthetic(3, 3, 12_000)
	legs := []Leg{{"a", data[0]}, {"b", data[1]}, {"c", data[2]}}
	opts := NWayOptions{MatchOn: []string{"key"}, Tolerances: currency(0.05), DateWindowDays: f64(1)}
	parallel, err := NWay(legs, opts)
	require.NoError(t, err)
	opts.Rules = []Rule{{Name: "always", Eval: func(map[string]any) (bool, error) { return true, nil }}}
	serial, err := NWay(legs, opts)
	require.NoError(t, err)
	require.Greater(t, parallel.Counts.Groups, 8192)
	require.Positive(t, parallel.Counts.Variance)
	require.Positive(t, parallel.Counts.MissingLeg)
	require.Positive(t, parallel.Counts.Orphan)
	a, err := json.Marshal(parallel)
	require.NoError(t, err)
	b, err := json.Marshal(serial)
	require.NoError(t, err)
	require.Equal(t, string(a), string(b))
}
