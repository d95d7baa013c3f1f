package match

// NWay's options and its result: groups, their legs and sums, discrepancies, orphans
// and exception rows.

// Leg is one input set: its key names it in results ("bank", "ledger").
type Leg struct {
	Key     string
	Records []Record
}

// Tolerance is how far the legs' sums of one numeric field may differ. Type "abs" compares
// the float64 sums (0.1 + 0.2 is not 0.3 there); "currency" compares in minor units, two
// decimals (it is). Value is the largest difference allowed (0: equal); Pairs overrides it
// for a pair of legs, keyed "<leg>:<leg>" in either order.
type Tolerance struct {
	Type  string
	Value float64
	Pairs map[string]float64
}

// Rule is one of the step's rules, compiled by the engine. Eval receives the group row as
// a JSON-ready map, the shape of one element of matchGroups, as it stands before the rules
// run:
//
//	{
//	  "schema_version": "svc.match-group.v1",
//	  "match_key": "INV-1",
//	  "classification": "full" | "variance" | "missing_leg",   // from the checks, before rules
//	  "legs_present": ["bank", "ledger"],
//	  "missing_legs": ["processor"],
//	  "legs": {
//	    "bank":      {"count": 1, "indexes": [4], "records": [{...}], "sums": {"amount": 100.5}},
//	    "processor": {"count": 0, "indexes": [], "records": [], "sums": {}},
//	    ...every leg, present or not
//	  },
//	  "discrepancies": [...],
//	  "failed_rules": []
//	}
//
// so a rule such as {"equal": ["@group.legs.bank.count", 1]} or {"lessThan":
// ["@group.legs.fees.sums.amount", 5]} works when the engine binds this map to "group".
// Sums hold the tolerance fields only. A false result makes the group a variance (a
// missing_leg group stays missing_leg) and names the rule in failed_rules and in
// discrepancy_fields as "rule:<name>". An error fails NWay with ErrRule.
type Rule struct {
	Name string
	Eval func(group map[string]any) (bool, error)
}

// NWayOptions are the nway_match step's properties, sets aside.
type NWayOptions struct {
	// MatchOn fields make the group key; they compare exactly (see keyText).
	MatchOn []string
	// Tolerances maps a numeric field to its tolerance. A field without an entry is not
	// compared.
	Tolerances map[string]Tolerance
	// DateKey (default "date") and DescriptionKey (default "description") name the fields
	// that DateWindowDays and FuzzyThreshold apply to, across every pair of legs.
	DateKey, DescriptionKey        string
	DateWindowDays, FuzzyThreshold *float64
	Rules                          []Rule
}

// Counts is matchGroupCounts. Groups counts every group (full, variance, missing_leg);
// Orphan counts orphan records.
type Counts struct {
	Groups     int `json:"groups"`
	Full       int `json:"full"`
	MissingLeg int `json:"missing_leg"`
	Variance   int `json:"variance"`
	Orphan     int `json:"orphan"`
}

// Group is one element of matchGroups: the records of every leg that share a match key
// present in at least two legs.
type Group struct {
	SchemaVersion  string        `json:"schema_version"`
	MatchKey       string        `json:"match_key"`
	Classification string        `json:"classification"`
	LegsPresent    []string      `json:"legs_present"`
	MissingLegs    []string      `json:"missing_legs"`
	Legs           GroupLegs     `json:"legs"`
	Discrepancies  []Discrepancy `json:"discrepancies"`
	FailedRules    []string      `json:"failed_rules"`
}

// GroupLeg is one leg's part of a group. Its JSON sits under the leg's key in "legs".
type GroupLeg struct {
	Leg     string   `json:"-"`
	Count   int      `json:"count"`
	Indexes []int    `json:"indexes"`
	Records []Record `json:"records"`
	Sums    Sums     `json:"sums"`
}

// GroupLegs holds every leg in leg order; its JSON is an object keyed by leg.
type GroupLegs []GroupLeg

// Get returns the named leg's part.
func (g GroupLegs) Get(leg string) (GroupLeg, bool) {
	for _, l := range g {
		if l.Leg == leg {
			return l, true
		}
	}
	return GroupLeg{}, false
}

// FieldSum is the sum of one tolerance field over a leg's records of a group.
type FieldSum struct {
	Field string
	Value float64
}

// Sums holds a leg's sums in field order; its JSON is an object keyed by field.
type Sums []FieldSum

// Get returns the sum of field.
func (s Sums) Get(field string) (float64, bool) {
	for _, f := range s {
		if f.Field == field {
			return f.Value, true
		}
	}
	return 0, false
}

// Discrepancy is one failed check of a group.
type Discrepancy struct {
	// Kind is "tolerance", "date_window", "similarity", "missing_value" or "rule".
	Kind string `json:"kind"`
	// Field is the tolerance field, the date key or the description key.
	Field string `json:"field,omitempty"`
	// Legs are the two legs compared (one for missing_value).
	Legs []string `json:"legs,omitempty"`
	// Values are, per leg in Legs: the sums (tolerance), or the two dates furthest
	// apart (date_window).
	Values []any `json:"values,omitempty"`
	// Difference is the sums' absolute difference, or the drift in days.
	Difference *float64 `json:"difference,omitempty"`
	// Score is the descriptions' Similarity (similarity).
	Score *int `json:"score,omitempty"`
	// Allowed is the tolerance, the window in days, or the threshold.
	Allowed *float64 `json:"allowed,omitempty"`
	// Rule names the rule that was false (rule).
	Rule string `json:"rule,omitempty"`
	// Message says what is missing (missing_value).
	Message string `json:"message,omitempty"`
}

// Orphan is one element of matchOrphans: a record whose key is in its own leg only, or
// that lacks a matchOn field.
type Orphan struct {
	SchemaVersion  string `json:"schema_version"`
	MatchKey       string `json:"match_key"`
	Classification string `json:"classification"`
	Leg            string `json:"leg"`
	Index          int    `json:"index"`
	// Key is the record's group key text; empty when it lacks a matchOn field.
	Key           string   `json:"key"`
	Reason        string   `json:"reason"`
	MissingFields []string `json:"missing_fields,omitempty"`
	Record        Record   `json:"record"`
}

// ExceptionRow is one row for the exception table (and one element of
// matchGroupExceptions): every non-full group and every orphan. RunID is left empty here;
// the engine fills it. All columns are text.
type ExceptionRow struct {
	RunID             string `json:"run_id"`
	MatchKey          string `json:"match_key"`
	Classification    string `json:"classification"`
	MissingLegs       string `json:"missing_legs"`
	DiscrepancyFields string `json:"discrepancy_fields"`
	Details           string `json:"details"`
	Status            string `json:"status"`
}

// NWayResult is what NWay found. Groups are sorted by match key; orphans by leg order,
// then index; exceptions list the non-full groups in group order, then the orphans.
type NWayResult struct {
	Counts     Counts         `json:"counts"`
	Groups     []Group        `json:"groups"`
	Orphans    []Orphan       `json:"orphans"`
	Exceptions []ExceptionRow `json:"exceptions"`
}
