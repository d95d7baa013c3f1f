package match_test

import (
	"encoding/json"
	"fmt"

	"github.com/svcflow/svcflow/match"
)

func ExampleSimilarity() {
	fmt.Println(match.Similarity("fuzzy was a bear", "fuzzy fuzzy was a bear"))
	fmt.Println(match.Similarity("new york mets", "new york meats"))
	// Common words "4821 acme corp"; ratio("4821 acme corp", "4821 acme corp invoice")
	// = 100 * (1 - 8/36) = 77.8.
	fmt.Println(match.Similarity("Invoice 4821 ACME Corp.", "ACME CORP PAYMENT REF 4821"))
	fmt.Println(match.Similarity("apple", "orange"))
	// Output:
	// 100
	// 96
	// 77
	// 36
}

func ExampleSimilarityAtLeast() {
	// 96.30: at least 96, not 96.5 (the cut-off compares against the exact score).
	fmt.Println(match.SimilarityAtLeast("new york mets", "new york meats", 96))
	fmt.Println(match.SimilarityAtLeast("new york mets", "new york meats", 96.5))
	// "invoice" against "refund cust 1182": the lengths alone rule out 90.
	fmt.Println(match.SimilarityAtLeast("Invoice 1182", "REFUND CUST 1182", 90))
	// Output:
	// true
	// false
	// false
}

// A text scored against many others is prepared once: SimilarityPrepared gives
// Similarity's integer without splitting and sorting either text again.
func ExamplePrepare() {
	ledger := match.Prepare("Invoice 4821 ACME Corp.")
	for _, bank := range []string{"ACME CORP PAYMENT REF 4821", "GLOBEX WIRE 99812", "Café Müller"} {
		fmt.Println(match.SimilarityPrepared(ledger, match.Prepare(bank)), match.Similarity(ledger.Text(), bank))
	}
	// Output:
	// 77 77
	// 35 35
	// 24 24
}

func ExampleMatch() {
	ledger := []match.Record{
		{"id": "L1", "ref": "ACME", "amount": 120.00, "date": "2024-03-01", "description": "Invoice 17 ACME office chairs"},
		{"id": "L2", "ref": "ACME", "amount": 120.00, "date": "2024-03-15", "description": "Invoice 18 ACME office chairs"},
		{"id": "L3", "ref": "GLOBEX", "amount": 99.99, "date": "2024-03-02", "description": "Globex consulting"},
	}
	bank := []match.Record{
		{"id": "B1", "ref": "ACME", "amount": 120.00, "date": "2024-03-16", "description": "ACME OFFICE CHAIRS INV 18"},
		{"id": "B2", "ref": "ACME", "amount": 119.99, "date": "2024-03-02", "description": "ACME INV 17"},
		{"id": "B3", "ref": "GLOBEX", "amount": 80.00, "date": "2024-03-02", "description": "GLOBEX"},
	}
	tolerance, window := 0.01, 3.0
	res, err := match.Match(ledger, bank, match.MatchOptions{
		MatchOn: []string{"ref"}, Tolerance: &tolerance, DateWindowDays: &window,
	})
	if err != nil {
		panic(err)
	}
	for _, p := range res.Matched {
		fmt.Println(p.Left["id"], "<->", p.Right["id"])
	}
	fmt.Println("unmatched:", len(res.UnmatchedLeft), len(res.UnmatchedRight))
	// Output:
	// L1 <-> B2
	// L2 <-> B1
	// unmatched: 1 1
}

// ExampleMatchDatasets matches records left as JSON bytes and writes an output in parts
// of at most two elements, each a JSON array, straight from the records' bytes.
func ExampleMatchDatasets() {
	ledger, err := match.NewRawRecords([]byte(`[
		{"id": "L1", "ref": "caf\u00e9", "amount": "120.00", "date": "2024-03-01"},
		{"id": "L2", "ref": "ACME", "amount": 120, "date": "2024-03-15"},
		{"id": "L3", "ref": "ACME", "amount": 99.99, "date": "2024-03-02"}
	]`))
	if err != nil {
		panic(err)
	}
	// The bank side could as well be decoded maps: match.Records(bank).
	bank, err := match.NewRawRecords([]byte(`[
		{"id": "B1", "ref": "ACME", "amount": 120.0, "date": "2024-03-16"},
		{"id": "B2", "ref": "café", "amount": 119.99, "date": "2024-03-02"},
		{"id": "B3", "ref": "ACME", "amount": 80, "date": "2024-03-02"}
	]`))
	if err != nil {
		panic(err)
	}
	tolerance, window := 0.01, 3.0
	res, err := match.MatchDatasets(ledger, bank, match.MatchOptions{
		MatchOn: []string{"ref"}, Tolerance: &tolerance, DateWindowDays: &window,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Pairs, res.UnmatchedLeft, res.UnmatchedRight)
	matched, _, _ := res.Outputs()
	for from := 0; from < matched.Len(); from += 2 {
		part, err := matched.AppendArray(nil, from, min(from+2, matched.Len()))
		if err != nil {
			panic(err)
		}
		fmt.Println(string(part))
	}
	// Output:
	// [{0 1} {1 0}] [2] [2]
	// [{"left":{"id": "L1", "ref": "caf\u00e9", "amount": "120.00", "date": "2024-03-01"},"right":{"id": "B2", "ref": "café", "amount": 119.99, "date": "2024-03-02"}},{"left":{"id": "L2", "ref": "ACME", "amount": 120, "date": "2024-03-15"},"right":{"id": "B1", "ref": "ACME", "amount": 120.0, "date": "2024-03-16"}}]
}

func ExampleNWay() {
	legs := []match.Leg{
		{Key: "ledger", Records: []match.Record{
			{"invoice": "INV-1", "amount": 0.30},
			{"invoice": "INV-2", "amount": 50.00},
			{"invoice": "INV-3", "amount": 10.00},
		}},
		{Key: "bank", Records: []match.Record{
			{"invoice": "INV-1", "amount": 0.10}, // paid in two parts
			{"invoice": "INV-1", "amount": 0.20},
			{"invoice": "INV-2", "amount": 49.00},
			{"invoice": "INV-9", "amount": 5.00},
		}},
	}
	res, err := match.NWay(legs, match.NWayOptions{
		MatchOn:    []string{"invoice"},
		Tolerances: map[string]match.Tolerance{"amount": {Type: match.ToleranceCurrency, Value: 0.5}},
	})
	if err != nil {
		panic(err)
	}
	for _, g := range res.Groups {
		fmt.Println(g.MatchKey, g.Classification, g.MissingLegs)
	}
	for _, o := range res.Orphans {
		fmt.Println(o.MatchKey, o.Reason)
	}
	counts, _ := json.Marshal(res.Counts)
	fmt.Println(string(counts))
	fmt.Println(res.Exceptions[0].MatchKey, res.Exceptions[0].DiscrepancyFields, res.Exceptions[0].Status)
	// The orphans' keys end in the SHA-256 of the record's canonical JSON,
	// {"amount":10,"invoice":"INV-3"} and {"amount":5,"invoice":"INV-9"}.

	// Output:
	// INV-1 full []
	// INV-2 variance []
	// orphan:ledger:2:4ec748cb85660ba9 key_in_one_leg
	// orphan:bank:3:644b379fa55e1393 key_in_one_leg
	// {"groups":2,"full":1,"missing_leg":0,"variance":1,"orphan":2}
	// INV-2 amount pending_review
}
