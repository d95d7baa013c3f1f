package match

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func f64(v float64) *float64 { return &v }

// ids lists the "id" of each pair as "left>right".
func pairIDs(pairs []Pair) []string {
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = fmt.Sprint(p.Left["id"], ">", p.Right["id"])
	}
	return out
}

func recIDs(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = fmt.Sprint(r["id"])
	}
	return out
}

func TestMatchCriteria(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name        string
		left, right []Record
		opts        MatchOptions
		want        []string
	}{
		{
			name:  "one to one: two lefts want the same right, the closer amount wins",
			left:  []Record{{"id": "L1", "k": "a", "amount": 100.0}, {"id": "L2", "k": "a", "amount": 100.02}},
			right: []Record{{"id": "R1", "k": "a", "amount": 100.02}},
			opts:  MatchOptions{MatchOn: []string{"k"}, Tolerance: f64(0.05)},
			want:  []string{"L2>R1"},
		},
		{
			name:  "amount difference beats date drift",
			left:  []Record{{"id": "L1", "amount": 10.0, "date": "2024-01-01"}},
			right: []Record{{"id": "R1", "amount": 10.01, "date": "2024-01-01"}, {"id": "R2", "amount": 10.0, "date": "2024-01-03"}},
			opts:  MatchOptions{Tolerance: f64(0.05), DateWindowDays: f64(3)},
			want:  []string{"L1>R2"},
		},
		{
			name:  "date drift decides equal amounts",
			left:  []Record{{"id": "L1", "amount": 10.0, "date": "2024-01-05"}},
			right: []Record{{"id": "R1", "amount": 10.0, "date": "2024-01-02"}, {"id": "R2", "amount": 10.0, "date": "2024-01-06"}},
			opts:  MatchOptions{Tolerance: f64(0), DateWindowDays: f64(3)},
			want:  []string{"L1>R2"},
		},
		{
			name: "similarity decides equal amounts and drift",
			left: []Record{{"id": "L1", "amount": 5.0, "description": "Invoice 17 ACME"}},
			right: []Record{
				{"id": "R1", "amount": 5.0, "description": "ACME INV 18"},
				{"id": "R2", "amount": 5.0, "description": "ACME INVOICE 17"},
			},
			opts: MatchOptions{Tolerance: f64(0), FuzzyThreshold: f64(0)},
			want: []string{"L1>R2"},
		},
		{
			name: "global order: the best pair overall is taken first",
			// L1 could take R1 (diff 1 cent) or R2 (diff 2); L2 only R1 (diff 0). Greedy by
			// left order would give L1>R1 and leave L2 alone; the global order gives both.
			left:  []Record{{"id": "L1", "amount": 1.00}, {"id": "L2", "amount": 1.01}},
			right: []Record{{"id": "R1", "amount": 1.01}, {"id": "R2", "amount": 1.02}},
			opts:  MatchOptions{Tolerance: f64(0.02)},
			want:  []string{"L1>R2", "L2>R1"},
		},
		{
			name:  "no dimension set: records pair in input order within a key",
			left:  []Record{{"id": "L1", "k": "x"}, {"id": "L2", "k": "y"}, {"id": "L3", "k": "x"}},
			right: []Record{{"id": "R1", "k": "x"}, {"id": "R2", "k": "x"}, {"id": "R3", "k": "x"}},
			opts:  MatchOptions{MatchOn: []string{"k"}},
			want:  []string{"L1>R1", "L3>R2"},
		},
		{
			name:  "composite key compares every field",
			left:  []Record{{"id": "L1", "a": "1", "b": "x"}, {"id": "L2", "a": "1", "b": "y"}},
			right: []Record{{"id": "R1", "a": "1", "b": "y"}},
			opts:  MatchOptions{MatchOn: []string{"a", "b"}},
			want:  []string{"L2>R1"},
		},
		{
			name:  "composite key escapes the separator",
			left:  []Record{{"id": "L1", "a": "x|y", "b": "z"}},
			right: []Record{{"id": "R1", "a": "x", "b": "y|z"}},
			opts:  MatchOptions{MatchOn: []string{"a", "b"}},
			want:  []string{},
		},
		{
			name: "keys compare as text: numbers in shortest form, strings as they are",
			left: []Record{
				{"id": "L1", "k": 1001.0}, {"id": "L2", "k": json.Number("7.50")}, {"id": "L3", "k": "abc"}, {"id": "L4", "k": 3},
			},
			right: []Record{
				{"id": "R1", "k": "1001"}, {"id": "R2", "k": 7.5}, {"id": "R3", "k": "ABC"}, {"id": "R4", "k": json.Number("3")},
			},
			opts: MatchOptions{MatchOn: []string{"k"}},
			want: []string{"L1>R1", "L2>R2", "L4>R4"},
		},
		{
			name:  "amounts as json.Number, ints and numeric strings",
			left:  []Record{{"id": "L1", "amount": json.Number("12.30")}, {"id": "L2", "amount": 7}, {"id": "L3", "amount": "5.5"}},
			right: []Record{{"id": "R1", "amount": 12.3}, {"id": "R2", "amount": "7.00"}, {"id": "R3", "amount": json.Number("5.50")}},
			opts:  MatchOptions{Tolerance: f64(0)},
			want:  []string{"L1>R1", "L2>R2", "L3>R3"},
		},
		{
			name:  "custom amount and date keys",
			left:  []Record{{"id": "L1", "total": 9.99, "booked": "2024-05-01"}},
			right: []Record{{"id": "R1", "total": 9.99, "booked": "2024-05-02T23:00:00+02:00"}},
			opts:  MatchOptions{AmountKey: "total", DateKey: "booked", Tolerance: f64(0), DateWindowDays: f64(1)},
			want:  []string{"L1>R1"},
		},
		{
			name:  "date index without matchOn or tolerance",
			left:  []Record{{"id": "L1", "date": "2024-01-10"}, {"id": "L2", "date": "2024-03-01"}},
			right: []Record{{"id": "R1", "date": "2024-02-28"}, {"id": "R2", "date": "2024-01-09"}},
			opts:  MatchOptions{DateWindowDays: f64(2)},
			want:  []string{"L1>R2", "L2>R1"},
		},
		{
			name:  "fuzzy alone compares pairs one by one",
			left:  []Record{{"id": "L1", "description": "Globex consulting"}, {"id": "L2", "description": "Initech license"}},
			right: []Record{{"id": "R1", "description": "INITECH LICENCE"}, {"id": "R2", "description": "GLOBEX CONSULTING Q3"}},
			opts:  MatchOptions{FuzzyThreshold: f64(80)},
			want:  []string{"L1>R2", "L2>R1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Match(tt.left, tt.right, tt.opts)
			require.NoError(t, err)
			require.Equal(t, tt.want, pairIDs(res.Matched))
			require.Len(t, res.UnmatchedLeft, len(tt.left)-len(tt.want))
			require.Len(t, res.UnmatchedRight, len(tt.right)-len(tt.want))
		})
	}
}

func TestMatchBoundaries(t *testing.T) {
	t.Parallel()

	one := func(l, r Record, opts MatchOptions) bool {
		res, err := Match([]Record{l}, []Record{r}, opts)
		require.NoError(t, err)
		return len(res.Matched) == 1
	}
	tests := []struct {
		name string
		l, r Record
		opts MatchOptions
		want bool
	}{
		{"tolerance 0: equal amounts", Record{"amount": 10.0}, Record{"amount": 10.0}, MatchOptions{Tolerance: f64(0)}, true},
		{"tolerance 0: one cent apart", Record{"amount": 10.0}, Record{"amount": 10.01}, MatchOptions{Tolerance: f64(0)}, false},
		{"tolerance 0: 0.1+0.2 equals 0.3 in minor units", Record{"amount": 0.1 + 0.2}, Record{"amount": 0.3}, MatchOptions{Tolerance: f64(0)}, true},
		{"difference exactly the tolerance", Record{"amount": 10.0}, Record{"amount": 10.05}, MatchOptions{Tolerance: f64(0.05)}, true},
		{"one cent over the tolerance", Record{"amount": 10.0}, Record{"amount": 10.06}, MatchOptions{Tolerance: f64(0.05)}, false},
		{"0.1 tolerance is 10 cents despite float error", Record{"amount": 1.0}, Record{"amount": 1.1}, MatchOptions{Tolerance: f64(0.1)}, true},
		{"half a cent rounds away from zero", Record{"amount": 0.145}, Record{"amount": 0.15}, MatchOptions{Tolerance: f64(0)}, true},
		{"window 0: same day", Record{"date": "2024-02-29"}, Record{"date": "2024-02-29T23:59:59Z"}, MatchOptions{DateWindowDays: f64(0)}, true},
		{"window 0: next day", Record{"date": "2024-02-29"}, Record{"date": "2024-03-01"}, MatchOptions{DateWindowDays: f64(0)}, false},
		{"drift exactly the window", Record{"date": "2024-12-30"}, Record{"date": "2025-01-02"}, MatchOptions{DateWindowDays: f64(3)}, true},
		{"a day past the window", Record{"date": "2024-12-30"}, Record{"date": "2025-01-03"}, MatchOptions{DateWindowDays: f64(3)}, false},
		{"fractional window counts whole days", Record{"date": "2024-01-01"}, Record{"date": "2024-01-03"}, MatchOptions{DateWindowDays: f64(2.5)}, true},
		{"timestamps count their own calendar date", Record{"date": "2024-01-01T23:30:00-05:00"}, Record{"date": "2024-01-01"}, MatchOptions{DateWindowDays: f64(0)}, true},
		// "new york mets" vs "new york meats" scores 96.296 (see TestSimilarityReference).
		{"similarity at the threshold", Record{"description": "new york mets"}, Record{"description": "new york meats"}, MatchOptions{FuzzyThreshold: f64(96)}, true},
		{"similarity just under a fractional threshold", Record{"description": "new york mets"}, Record{"description": "new york meats"}, MatchOptions{FuzzyThreshold: f64(96.3)}, false},
		{"threshold 0 admits empty descriptions", Record{}, Record{"description": "x"}, MatchOptions{FuzzyThreshold: f64(0)}, true},
		{"custom description key", Record{"memo": "ACME"}, Record{"memo": "acme"}, MatchOptions{DescriptionKey: "memo", FuzzyThreshold: f64(100)}, true},
		{"nil dimensions compare nothing", Record{"amount": 1.0, "date": "2024-01-01"}, Record{"amount": 900.0, "date": "2020-01-01"}, MatchOptions{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, one(tt.l, tt.r, tt.opts))
		})
	}
}

func TestMatchMissingValuesStayUnmatched(t *testing.T) {
	t.Parallel()

	left := []Record{
		{"id": "L1", "k": "a", "amount": 1.0, "date": "2024-01-01"},
		{"id": "L2", "amount": 1.0, "date": "2024-01-01"},           // no key
		{"id": "L3", "k": nil, "amount": 1.0, "date": "2024-01-01"}, // null key
		{"id": "L4", "k": "a", "date": "2024-01-01"},                // no amount
		{"id": "L5", "k": "a", "amount": "n/a", "date": "2024-01-01"},
		{"id": "L6", "k": "a", "amount": 1.0, "date": "01/02/2024"}, // not a date
		{"id": "L7", "k": "a", "amount": 1.0, "date": "2024-02-30"},
		{"id": "L8", "k": "a", "amount": 1.0},
	}
	right := []Record{{"id": "R1", "k": "a", "amount": 1.0, "date": "2024-01-01"}, {"id": "R2", "amount": 1.0, "date": "2024-01-01"}}
	res, err := Match(left, right, MatchOptions{MatchOn: []string{"k"}, Tolerance: f64(0), DateWindowDays: f64(1)})
	require.NoError(t, err)
	require.Equal(t, []string{"L1>R1"}, pairIDs(res.Matched))
	require.Equal(t, []string{"L2", "L3", "L4", "L5", "L6", "L7", "L8"}, recIDs(res.UnmatchedLeft))
	require.Equal(t, []string{"R2"}, recIDs(res.UnmatchedRight))
	require.Equal(t, reflect.ValueOf(left[1]).UnsafePointer(), reflect.ValueOf(res.UnmatchedLeft[0]).UnsafePointer(),
		"unmatched records are the source records themselves")

	res, err = Match(nil, right, MatchOptions{MatchOn: []string{"k"}})
	require.NoError(t, err)
	require.Empty(t, res.Matched)
	require.Len(t, res.UnmatchedRight, 2)
}

// TestMatchShuffleInvariance is a property test: whatever the input order, the matcher
// pairs the same records, up to records that are equal on every compared value (which of
// two such records is used may change; what they compare by may not). Values come from
// small ranges so that ties and competition are frequent.
func TestMatchShuffleInvariance(t *testing.T) {
	t.Parallel()

	opts := []MatchOptions{
		{MatchOn: []string{"k"}, Tolerance: f64(0.02), DateWindowDays: f64(2)},
		{MatchOn: []string{"k"}, Tolerance: f64(0.02), DateWindowDays: f64(2), FuzzyThreshold: f64(40)},
		{Tolerance: f64(0.01)},
		{DateWindowDays: f64(1)},
		{MatchOn: []string{"k"}},
		{MatchOn: []string{"k"}, FuzzyThreshold: f64(30)},
	}
	words := []string{"acme", "globex", "invoice", "fee", "ref"}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 99))
		mk := func(n int) []Record {
			recs := make([]Record, n)
			for i := range recs {
				recs[i] = Record{
					"k":           fmt.Sprint("k", rng.IntN(3)),
					"amount":      float64(100+rng.IntN(6)) / 100,
					"date":        fmt.Sprintf("2024-01-%02d", 1+rng.IntN(5)),
					"description": words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))],
				}
			}
			return recs
		}
		left, right := mk(5+rng.IntN(30)), mk(5+rng.IntN(30))
		for oi, o := range opts {
			want := matchSignature(t, left, right, o)
			for range 5 {
				l, r := slices.Clone(left), slices.Clone(right)
				rng.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
				rng.Shuffle(len(r), func(i, j int) { r[i], r[j] = r[j], r[i] })
				require.Equal(t, want, matchSignature(t, l, r, o), "seed %d options %d", seed, oi)
			}
		}
	}
}

// matchSignature is the sorted list of matched pairs and unmatched records, each reduced
// to the values the options compare: it does not depend on which of two interchangeable
// records was used.
func matchSignature(t *testing.T, left, right []Record, opts MatchOptions) []string {
	t.Helper()
	res, err := Match(left, right, opts)
	require.NoError(t, err)
	compared := func(r Record) string {
		m := Record{}
		for _, f := range opts.MatchOn {
			m[f] = r[f]
		}
		if opts.Tolerance != nil {
			m["amount"] = r["amount"]
		}
		if opts.DateWindowDays != nil {
			m["date"] = r["date"]
		}
		if opts.FuzzyThreshold != nil {
			m["description"] = r["description"]
		}
		return string(appendCanonical(nil, m))
	}
	var out []string
	for _, p := range res.Matched {
		out = append(out, "pair "+compared(p.Left)+" "+compared(p.Right))
	}
	for _, r := range res.UnmatchedLeft {
		out = append(out, "left "+compared(r))
	}
	for _, r := range res.UnmatchedRight {
		out = append(out, "right "+compared(r))
	}
	slices.Sort(out)
	return out
}

func TestMatchOneToOneProperty(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(5, 6))
	mk := func(n int) []Record {
		recs := make([]Record, n)
		for i := range recs {
			recs[i] = Record{"k": rng.IntN(4), "amount": float64(rng.IntN(5)), "date": "2024-01-01"}
		}
		return recs
	}
	for range 50 {
		left, right := mk(rng.IntN(40)), mk(rng.IntN(40))
		res, err := Match(left, right, MatchOptions{MatchOn: []string{"k"}, Tolerance: f64(1)})
		require.NoError(t, err)
		seenL, seenR := map[int]bool{}, map[int]bool{}
		for i, p := range res.Matched {
			require.False(t, seenL[p.LeftIndex] || seenR[p.RightIndex], "a record matched twice")
			seenL[p.LeftIndex], seenR[p.RightIndex] = true, true
			require.Equal(t, left[p.LeftIndex], p.Left)
			require.Equal(t, right[p.RightIndex], p.Right)
			if i > 0 {
				require.Less(t, res.Matched[i-1].LeftIndex, p.LeftIndex, "ordered by left index")
			}
		}
		require.Equal(t, len(left), len(res.Matched)+len(res.UnmatchedLeft))
		require.Equal(t, len(right), len(res.Matched)+len(res.UnmatchedRight))
	}
}

func TestMatchTooManyUnindexedPairs(t *testing.T) {
	t.Parallel()

	n := 4500 // 4500 x 4500 > MaxUnindexedPairs
	left, right := make([]Record, n), make([]Record, n)
	for i := range n {
		left[i], right[i] = Record{"description": "a"}, Record{"description": "b"}
	}
	_, err := Match(left, right, MatchOptions{FuzzyThreshold: f64(90)})
	require.ErrorIs(t, err, ErrTooManyPairs)
}

func TestMatchPolicyAndOutputs(t *testing.T) {
	t.Parallel()

	left := []Record{{"id": "L1", "amount": 1.0}, {"id": "L2", "amount": 2.0}}
	right := []Record{{"id": "R1", "amount": 1.0}}
	res, err := Match(left, right, MatchOptions{Tolerance: f64(0)})
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"matchOn": []any{}, "amountKey": "amount", "dateKey": "date", "descriptionKey": "description",
		"tolerance": 0.0, "dateWindowDays": nil, "fuzzyThreshold": nil, "oneToOne": true,
		"similarity": "token_set_ratio",
		"tieBreak":   []any{"amount_difference", "date_drift", "similarity", "compared_values", "index"},
	}, res.Policy)

	matched, ul, ur := res.Outputs()
	// Values as encoding/json decodes JSON: plain maps, no named types.
	require.IsType(t, map[string]any{}, matched[0])
	require.IsType(t, map[string]any{}, matched[0].(map[string]any)["left"])
	require.IsType(t, map[string]any{}, ul[0])
	b, err := json.Marshal(map[string]any{"matched": matched, "left": ul, "right": ur})
	require.NoError(t, err)
	require.JSONEq(t, `{"matched":[{"left":{"id":"L1","amount":1},"right":{"id":"R1","amount":1}}],
		"left":[{"id":"L2","amount":2}],"right":[]}`, string(b))
	b, err = json.Marshal(res.Matched)
	require.NoError(t, err)
	require.JSONEq(t, `[{"left":{"id":"L1","amount":1},"right":{"id":"R1","amount":1}}]`, string(b), "a Pair's JSON is {left, right}")
}

func TestMatchInvalidOptions(t *testing.T) {
	t.Parallel()

	_, err := Match(nil, nil, MatchOptions{FuzzyThreshold: f64(101)})
	require.ErrorIs(t, err, ErrInvalidOptions)
	var verr *ValidationError
	require.True(t, errors.As(err, &verr))
	require.Equal(t, []Problem{{"/fuzzyThreshold", "must be between 0 and 100, got 101"}}, verr.Problems)
}
