package match

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateMatch(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		opts MatchOptions
		want []Problem
	}{
		{"valid", MatchOptions{MatchOn: []string{"ref"}, Tolerance: f64(0), DateWindowDays: f64(3), FuzzyThreshold: f64(100)}, nil},
		{"nothing set is valid", MatchOptions{}, nil},
		{"empty matchOn field", MatchOptions{MatchOn: []string{"ref", ""}}, []Problem{{"/matchOn/1", "must be a non-empty field name"}}},
		{"duplicate matchOn field", MatchOptions{MatchOn: []string{"ref", "ref"}}, []Problem{{"/matchOn/1", `field "ref" is listed twice`}}},
		{"negative tolerance", MatchOptions{Tolerance: f64(-0.01)}, []Problem{{"/tolerance", "must be a finite number of at least 0"}}},
		{"NaN tolerance", MatchOptions{Tolerance: f64(math.NaN())}, []Problem{{"/tolerance", "must be a finite number of at least 0"}}},
		{"infinite tolerance", MatchOptions{Tolerance: f64(math.Inf(1))}, []Problem{{"/tolerance", "must be a finite number of at least 0"}}},
		{"negative window", MatchOptions{DateWindowDays: f64(-1)}, []Problem{{"/dateWindowDays", "must be a finite number of days, at least 0"}}},
		{"threshold over 100", MatchOptions{FuzzyThreshold: f64(100.5)}, []Problem{{"/fuzzyThreshold", "must be between 0 and 100, got 100.5"}}},
		{"threshold under 0", MatchOptions{FuzzyThreshold: f64(-1)}, []Problem{{"/fuzzyThreshold", "must be between 0 and 100, got -1"}}},
		{"every problem at once", MatchOptions{MatchOn: []string{""}, Tolerance: f64(-1), DateWindowDays: f64(-1), FuzzyThreshold: f64(200)}, []Problem{
			{"/matchOn/0", "must be a non-empty field name"},
			{"/tolerance", "must be a finite number of at least 0"},
			{"/dateWindowDays", "must be a finite number of days, at least 0"},
			{"/fuzzyThreshold", "must be between 0 and 100, got 200"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ValidateMatch(tt.opts))
		})
	}
}

func TestValidateNWay(t *testing.T) {
	t.Parallel()

	on := []string{"invoice"}
	rule := Rule{Name: "r", Eval: func(map[string]any) (bool, error) { return true, nil }}
	tests := []struct {
		name string
		opts NWayOptions
		legs int
		want []Problem
	}{
		{"valid", NWayOptions{MatchOn: on, Tolerances: map[string]Tolerance{
			"amount": {Type: "currency", Value: 0.01, Pairs: map[string]float64{"bank:ledger": 1, "ledger:bank": 1}},
			"qty":    {Type: "abs"},
		}, DateWindowDays: f64(0), FuzzyThreshold: f64(0), Rules: []Rule{rule}}, 4, nil},
		{"one leg", NWayOptions{MatchOn: on}, 1, []Problem{{"/sets", "must hold 2 to 4 legs, got 1"}}},
		{"five legs", NWayOptions{MatchOn: on}, 5, []Problem{{"/sets", "must hold 2 to 4 legs, got 5"}}},
		{"no matchOn", NWayOptions{}, 2, []Problem{{"/matchOn", "must name at least one field"}}},
		{"empty matchOn field", NWayOptions{MatchOn: []string{"a", ""}}, 2, []Problem{{"/matchOn/1", "must be a non-empty field name"}}},
		{"duplicate matchOn field", NWayOptions{MatchOn: []string{"a", "a"}}, 2, []Problem{{"/matchOn/1", `field "a" is listed twice`}}},
		{"unknown tolerance type", NWayOptions{MatchOn: on, Tolerances: map[string]Tolerance{"amount": {Type: "percent"}}}, 2,
			[]Problem{{"/tolerances/amount/type", `unknown tolerance type "percent": want "abs" or "currency"`}}},
		{"missing tolerance type", NWayOptions{MatchOn: on, Tolerances: map[string]Tolerance{"amount": {}}}, 2,
			[]Problem{{"/tolerances/amount/type", `unknown tolerance type "": want "abs" or "currency"`}}},
		{"negative tolerance value", NWayOptions{MatchOn: on, Tolerances: map[string]Tolerance{"amount": {Type: "abs", Value: -1}}}, 2,
			[]Problem{{"/tolerances/amount/value", "must be a finite number of at least 0"}}},
		{"empty tolerance field", NWayOptions{MatchOn: on, Tolerances: map[string]Tolerance{"": {Type: "abs"}}}, 2,
			[]Problem{{"/tolerances/", "the field name must not be empty"}}},
		{"field name escaped in the pointer", NWayOptions{MatchOn: on, Tolerances: map[string]Tolerance{"a/b~c": {Type: "x"}}}, 2,
			[]Problem{{"/tolerances/a~1b~0c/type", `unknown tolerance type "x": want "abs" or "currency"`}}},
		{"pair without a colon", NWayOptions{MatchOn: on, Tolerances: map[string]Tolerance{"amount": {Type: "abs", Pairs: map[string]float64{"bank": 1}}}}, 2,
			[]Problem{{"/tolerances/amount/pairs/bank", "must be written <leg>:<leg>"}}},
		{"pair with an empty side", NWayOptions{MatchOn: on, Tolerances: map[string]Tolerance{"amount": {Type: "abs", Pairs: map[string]float64{"bank:": 1}}}}, 2,
			[]Problem{{"/tolerances/amount/pairs/bank:", "must be written <leg>:<leg>"}}},
		{"pair of one leg", NWayOptions{MatchOn: on, Tolerances: map[string]Tolerance{"amount": {Type: "abs", Pairs: map[string]float64{"bank:bank": 1}}}}, 2,
			[]Problem{{"/tolerances/amount/pairs/bank:bank", "must name two different legs"}}},
		{"negative pair value", NWayOptions{MatchOn: on, Tolerances: map[string]Tolerance{"amount": {Type: "abs", Pairs: map[string]float64{"a:b": -1}}}}, 2,
			[]Problem{{"/tolerances/amount/pairs/a:b", "must be a finite number of at least 0"}}},
		{"a:b and b:a disagree", NWayOptions{MatchOn: on, Tolerances: map[string]Tolerance{"amount": {Type: "abs", Pairs: map[string]float64{"a:b": 1, "b:a": 2}}}}, 2,
			[]Problem{{"/tolerances/amount/pairs/b:a", "b:a is also given as a:b with another value"}}},
		{"negative window", NWayOptions{MatchOn: on, DateWindowDays: f64(-2)}, 2, []Problem{{"/dateWindowDays", "must be a finite number of days, at least 0"}}},
		{"threshold over 100", NWayOptions{MatchOn: on, FuzzyThreshold: f64(101)}, 2, []Problem{{"/fuzzyThreshold", "must be between 0 and 100, got 101"}}},
		{"rule without a condition", NWayOptions{MatchOn: on, Rules: []Rule{rule, {Name: "x"}}}, 2, []Problem{{"/rules/1", "rule has no condition"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ValidateNWay(tt.opts, tt.legs))
		})
	}
}

func TestValidationErrorMessage(t *testing.T) {
	t.Parallel()

	err := &ValidationError{Problems: []Problem{{"/sets", "must hold 2 to 4 legs, got 1"}, {"/fuzzyThreshold", "must be between 0 and 100, got 120"}}}
	require.Equal(t, "match: invalid options: /sets: must hold 2 to 4 legs, got 1; /fuzzyThreshold: must be between 0 and 100, got 120", err.Error())
	require.ErrorIs(t, err, ErrInvalidOptions)
}
