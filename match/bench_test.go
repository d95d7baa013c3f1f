package match

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcflow/svcflow/match/internal/gen"
)

// similarityPairs are ledger and bank descriptions of up to 64 characters, in the shapes
// reconciliation sees: reordered words, abbreviations, typos, extra references.
var similarityPairs = [][2]string{
	{"Invoice 4821 ACME Corp office supplies", "ACME CORP PAYMENT REF 4821"},
	{"AWS monthly subscription", "AMAZON WEB SERVICES AWS.AMAZON.CO"},
	{"Payroll run 2024-03-15", "PAYROLL 15/03 BATCH 2024"},
	{"Globex consulting Q3 2024 inv 99812", "GLOBEX CORP CONSULTING Q3 INV 99812 wire"},
	{"Rent March 2024 Main St office", "MAIN ST PROPERTIES RENT MAR 2024"},
	{"Stripe payout", "STRIPE PAYOUT TRANSFER PO_1NXYZ"},
	{"Office Depot order 55123 printer paper and toner", "OFFICE DEPOT #55123 PRINTER PAPER TONER"},
	{"Initech software license renewal 2024", "INITECH SOFTWRE LICENSE RENEWAL"},
	{"Travel reimbursement J. Smith conference Berlin", "SMITH J REIMB TRAVEL BERLIN CONF"},
	{"Utility bill electricity February", "CITY POWER & LIGHT ELECTRICITY FEB"},
	{"Hooli cloud storage annual plan invoice 7781", "HOOLI INC ANNUAL PLAN 7781"},
	{"Bank fee", "MONTHLY ACCOUNT FEE"},
	{"Umbrella Corp lab equipment purchase order 30012", "UMBRELLA CORPORATION PO 30012 LAB EQUIPMENT"},
	{"Refund customer 1182 damaged goods", "REFUND CUST 1182 DAMAGED GOODS RETURN"},
	{"Payment to Globex Corporation for consulting services Q3 2024 v", "GLOBEX CORP CONSULTING SVCS Q3/2024 INV 99812 wire transfer ref"},
	{"Soylent catering team lunch", "SOYLENT CATERING LUNCH TEAM EVENT 0412"},
}

func BenchmarkSimilarity(b *testing.B) {
	for _, p := range similarityPairs {
		if len(p[0]) > 64 || len(p[1]) > 64 {
			b.Fatalf("pair over 64 characters: %q", p)
		}
	}
	b.ReportAllocs()
	sink := 0
	for i := 0; b.Loop(); i++ {
		p := similarityPairs[i%len(similarityPairs)]
		sink += Similarity(p[0], p[1])
	}
	_ = sink
}

var synthetic = sync.OnceValue(func() [][]Record { return gen.Synthetic(7, 4, 250_000) })

// BenchmarkMatch100k pairs 100,000 ledger x 100,000 bank records of the standard noisy
// profile on one exact key (the counterparty: about 8 ledger records share each), a
// tolerance of 0.05 and a 3-day window. It reports the peak heap during Match against the
// records' own heap.
func BenchmarkMatch100k(b *testing.B) {
	base := heapNow()
	data := gen.NewTwoWay(gen.Standard(11, 100_000))
	left, right := data.Left, slices.Clone(data.Right[:100_000])
	data = nil
	recordsBytes := float64(heapNow() - base)
	tol, win := 0.05, 3.0
	opts := MatchOptions{MatchOn: []string{"counterparty"}, Tolerance: &tol, DateWindowDays: &win}
	var peak float64
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		var res *MatchResult
		p := peakHeapDuring(func() {
			var err error
			if res, err = Match(left, right, opts); err != nil {
				b.Fatal(err)
			}
		})
		peak = max(peak, float64(p))
		if len(res.Matched) < 85_000 {
			b.Fatalf("matched only %d", len(res.Matched))
		}
	}
	b.ReportMetric(recordsBytes/(1<<20), "records-MiB")
	b.ReportMetric(peak/(1<<20), "peak-heap-MiB")
	b.ReportMetric(peak/recordsBytes, "peak/records")
}

// BenchmarkMatch50k pairs 50,000 ledger x ~51,000 bank records of the standard noisy
// profile (matchOn counterparty, tolerance 0.05, 3-day window) from maps (Match), and
// from the same records as JSON (RawRecords: indexing the bytes included), then also
// writing the three outputs from the bytes to io.Discard.
func BenchmarkMatch50k(b *testing.B) {
	set := gen.NewTwoWay(gen.Standard(11, 50_000))
	leftJSON, rightJSON := marshalRecords(b, set.Left), marshalRecords(b, set.Right)
	tol, win := 0.05, 3.0
	opts := MatchOptions{MatchOn: []string{"counterparty"}, Tolerance: &tol, DateWindowDays: &win}
	raw := func(b *testing.B, write bool) {
		l, err := NewRawRecords(leftJSON)
		if err != nil {
			b.Fatal(err)
		}
		r, err := NewRawRecords(rightJSON)
		if err != nil {
			b.Fatal(err)
		}
		res, err := MatchDatasets(l, r, opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Pairs) < 40_000 {
			b.Fatalf("matched only %d", len(res.Pairs))
		}
		if write {
			m, ul, ur := res.Outputs()
			for _, o := range []Output{m, ul, ur} {
				if _, err := o.WriteTo(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("maps", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := Match(set.Left, set.Right, opts)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Matched) < 40_000 {
				b.Fatalf("matched only %d", len(res.Matched))
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			raw(b, false)
		}
	})
	b.Run("raw+outputs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			raw(b, true)
		}
	})
}

// BenchmarkNWay4x250k groups four legs of 250,000 records each.
func BenchmarkNWay4x250k(b *testing.B) {
	data := synthetic()
	legs := []Leg{{"ledger", data[0]}, {"bank", data[1]}, {"processor", data[2]}, {"erp", data[3]}}
	win := 3.0
	opts := NWayOptions{
		MatchOn:        []string{"key"},
		Tolerances:     map[string]Tolerance{"amount": {Type: ToleranceCurrency, Value: 0.05}},
		DateWindowDays: &win,
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := NWay(legs, opts)
		if err != nil {
			b.Fatal(err)
		}
		if res.Counts.Groups < 200_000 {
			b.Fatalf("only %d groups", res.Counts.Groups)
		}
	}
}

func heapNow() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakHeapDuring samples the heap every millisecond while f runs.
func peakHeapDuring(f func()) uint64 {
	read := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	var peak atomic.Uint64
	peak.Store(read())
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if h := read(); h > peak.Load() {
					peak.Store(h)
				}
			}
		}
	}()
	f()
	close(done)
	<-stopped
	if h := read(); h > peak.Load() {
		peak.Store(h)
	}
	return peak.Load()
}

// BenchmarkSimilarityOracle scores the 684 pairs of testdata/similarity_oracle.jsonl, one
// pair an op (ns/op is the time a pair): descriptions of one transaction and of unrelated
// ones, Unicode pairs and pairs over 64 bytes. "cutoff90" is SimilarityAtLeast at 90, as
// the matcher asks.
func BenchmarkSimilarityOracle(b *testing.B) {
	file, err := os.ReadFile("testdata/similarity_oracle.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	var pairs [][2]string
	for line := range bytes.Lines(file) {
		var row [3]any
		if err := json.Unmarshal(line, &row); err != nil {
			b.Fatal(err)
		}
		pairs = append(pairs, [2]string{row[1].(string), row[2].(string)})
	}
	b.Run("score", func(b *testing.B) {
		b.ReportAllocs()
		sink := 0
		for i := 0; b.Loop(); i++ {
			p := pairs[i%len(pairs)]
			sink += Similarity(p[0], p[1])
		}
		_ = sink
	})
	b.Run("cutoff90", func(b *testing.B) {
		b.ReportAllocs()
		sink := 0
		for i := 0; b.Loop(); i++ {
			p := pairs[i%len(pairs)]
			if SimilarityAtLeast(p[0], p[1], 90) {
				sink++
			}
		}
		_ = sink
	})
}

// BenchmarkSimilarityPrepared is BenchmarkSimilarityOracle/score with every text prepared
// once before the loop (Prepare, outside the timing): the cost a pair when each text is
// scored against many others, as the matcher's records are in a block compared all to all.
func BenchmarkSimilarityPrepared(b *testing.B) {
	file, err := os.ReadFile("testdata/similarity_oracle.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	var pairs [][2]*Prepared
	for line := range bytes.Lines(file) {
		var row [3]any
		if err := json.Unmarshal(line, &row); err != nil {
			b.Fatal(err)
		}
		pairs = append(pairs, [2]*Prepared{Prepare(row[1].(string)), Prepare(row[2].(string))})
	}
	b.ReportAllocs()
	sink := 0
	for i := 0; b.Loop(); i++ {
		p := pairs[i%len(pairs)]
		sink += SimilarityPrepared(p[0], p[1])
	}
	_ = sink
}

// BenchmarkMatchFuzzyOnly matches 20,000 ledger x ~20,600 bank records of the standard
// noisy profile on the counterparty with fuzzyThreshold 50 alone: every ledger
// description of a counterparty is scored against every bank one (about 8 x 8 a key), the
// matcher's all-pairs case, where each description is prepared once for its block.
func BenchmarkMatchFuzzyOnly(b *testing.B) {
	set := gen.NewTwoWay(gen.Standard(11, 20_000))
	fuzzy := 50.0
	opts := MatchOptions{MatchOn: []string{"counterparty"}, FuzzyThreshold: &fuzzy}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Match(set.Left, set.Right, opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Matched) < 10_000 {
			b.Fatalf("matched only %d", len(res.Matched))
		}
	}
}
