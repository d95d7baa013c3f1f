// Command benchmatch measures the match package's quality and speed on a seeded,
// realistic, noisy reconciliation set with known truth (see match/internal/gen): amount
// jitter within and beyond tolerance, date drift within and beyond the window, typos and
// reordered words in descriptions, missing, duplicate and unrelated records, split
// payments and recurring invoices. It prints precision, recall, records per second and
// peak memory for the 2-way matcher, and the classification accuracy of the N-way
// matcher, and exits 1 when the 2-way targets (precision >= 99.5 %, recall >= 99 %) are
// missed.
//
//	go run ./match/cmd/benchmatch [-seed 1] [-n 100000] [-fuzzy 50]
//
// With -raw it runs the 2-way matcher on the records as JSON bytes instead of maps
// (match.RawRecords): it generates the set, writes it as two JSON arrays in memory, frees
// the maps, resets the process's peak RSS where Linux allows it, then indexes the bytes,
// matches and writes the three outputs to a counting writer. It prints the time, the
// input's JSON size, the peak heap and peak RSS, and their ratio to the input (issue 20's
// target: under 4x). With -from DIR it reads DIR/left.json and DIR/right.json instead (no
// truth, so no precision or recall).
//
// With -write DIR it only writes the 2-way set for the end-to-end comparison (make
// bench-match-http): left.json and right.json (arrays of {id, counterparty, amount, date}),
// left.csv and right.csv (the same, with a header), and in-process.txt, the matcher's own
// time and pair count on them, and exits.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/svcflow/svcflow/internal/procmem"
	"github.com/svcflow/svcflow/match"
	"github.com/svcflow/svcflow/match/internal/gen"
)

const (
	targetPrecision = 0.995
	targetRecall    = 0.99
)

func main() {
	seed := flag.Uint64("seed", 1, "generator seed")
	n := flag.Int("n", 100_000, "ledger records (the bank side gets about as many)")
	fuzzy := flag.Float64("fuzzy", 50, "fuzzyThreshold for the 2-way run (negative: not set)")
	write := flag.String("write", "", "write the 2-way set as JSON and CSV files into this directory, and exit")
	raw := flag.Bool("raw", false, "run the 2-way matcher on the records as JSON bytes (match.RawRecords) only")
	from := flag.String("from", "", "with -raw: read left.json and right.json from this directory instead of generating")
	flag.Parse()
	if *raw {
		ok, err := rawTwoWay(gen.Standard(*seed, *n), *fuzzy, *from)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchmatch:", err)
			os.Exit(2)
		}
		if !ok {
			fmt.Println("FAIL: 2-way targets missed")
			os.Exit(1)
		}
		fmt.Println("PASS")
		return
	}
	if *write != "" {
		if err := writeSet(gen.Standard(*seed, *n), *write); err != nil {
			fmt.Fprintln(os.Stderr, "benchmatch:", err)
			os.Exit(2)
		}
		return
	}

	p := gen.Standard(*seed, *n)
	fmt.Printf("benchmatch: standard profile, seed %d, %d ledger records, GOMAXPROCS %d\n", *seed, *n, runtime.GOMAXPROCS(0))
	ok := twoWay(p, *fuzzy)
	nWay(p)
	if !ok {
		fmt.Println("FAIL: 2-way targets missed")
		os.Exit(1)
	}
	fmt.Println("PASS")
}

func twoWay(p gen.Profile, fuzzy float64) bool {
	set := gen.NewTwoWay(p)
	tol, win := p.Tolerance, float64(p.WindowDays)
	opts := match.MatchOptions{MatchOn: []string{"counterparty"}, Tolerance: &tol, DateWindowDays: &win, DescriptionKey: "description"}
	if fuzzy >= 0 {
		opts.FuzzyThreshold = &fuzzy
	}
	recordsHeap := settledHeap()
	var res *match.MatchResult
	elapsed, peak := measure(func() {
		var err error
		if res, err = match.Match(set.Left, set.Right, opts); err != nil {
			fmt.Fprintln(os.Stderr, "benchmatch:", err)
			os.Exit(2)
		}
	})
	pairs := make([][2]int, len(res.Matched))
	for i, pr := range res.Matched {
		pairs[i] = [2]int{pr.LeftIndex, pr.RightIndex}
	}
	correct, precision, recall := set.Score(pairs)
	records := len(set.Left) + len(set.Right)

	fmt.Printf("\n2-way matcher: %d ledger x %d bank records; matchOn [counterparty], tolerance %.2f, dateWindowDays %d, fuzzyThreshold %s\n",
		len(set.Left), len(set.Right), tol, p.WindowDays, fuzzyText(opts.FuzzyThreshold))
	fmt.Printf("  expected pairs %d, matched %d, correct %d, wrong %d, missed %d\n",
		set.Expected, len(pairs), correct, len(pairs)-correct, set.Expected-correct)
	fmt.Printf("  precision %.3f %%  recall %.3f %%  (targets >= %.1f %%, >= %.1f %%)\n",
		100*precision, 100*recall, 100*targetPrecision, 100*targetRecall)
	fmt.Printf("  time %.3f s  %.0f records/s\n", elapsed.Seconds(), float64(records)/elapsed.Seconds())
	fmt.Printf("  peak heap %.1f MiB (records and generator %.1f MiB, so %.2fx)  peak RSS %s\n",
		mib(peak), mib(recordsHeap), float64(peak)/float64(recordsHeap), peakRSS())
	return precision >= targetPrecision && recall >= targetRecall
}

// rawTwoWay matches the 2-way set from its JSON bytes and writes the outputs to a
// counting writer. It reports whether the targets (precision, recall and peak RSS under
// 4x the input) are met.
func rawTwoWay(p gen.Profile, fuzzy float64, from string) (bool, error) {
	var leftJSON, rightJSON []byte
	var set *gen.TwoWay
	source := "generated, seed " + strconv.FormatUint(p.Seed, 10)
	if from != "" {
		var err error
		if leftJSON, err = os.ReadFile(filepath.Join(from, "left.json")); err != nil {
			return false, err
		}
		if rightJSON, err = os.ReadFile(filepath.Join(from, "right.json")); err != nil {
			return false, err
		}
		source = "read from " + from
	} else {
		set = gen.NewTwoWay(p)
		var err error
		if leftJSON, err = jsonArray(set.Left); err != nil {
			return false, err
		}
		if rightJSON, err = jsonArray(set.Right); err != nil {
			return false, err
		}
		set.Left, set.Right = nil, nil // the truth (Origin) is kept for the score
	}
	input := uint64(len(leftJSON) + len(rightJSON))
	inputHeap := settledHeap()
	rssReset := procmem.ResetPeak(0)

	tol, win := p.Tolerance, float64(p.WindowDays)
	opts := match.MatchOptions{MatchOn: []string{"counterparty"}, Tolerance: &tol, DateWindowDays: &win, DescriptionKey: "description"}
	if fuzzy >= 0 {
		opts.FuzzyThreshold = &fuzzy
	}
	var res *match.DatasetResult
	var left, right *match.RawRecords
	var indexing, matching time.Duration
	var out counter
	var runErr error
	elapsed, peak := measure(func() {
		start := time.Now()
		if left, runErr = match.NewRawRecords(leftJSON); runErr != nil {
			return
		}
		if right, runErr = match.NewRawRecords(rightJSON); runErr != nil {
			return
		}
		indexing = time.Since(start)
		if res, runErr = match.MatchDatasets(left, right, opts); runErr != nil {
			return
		}
		matching = time.Since(start) - indexing
		m, ul, ur := res.Outputs()
		for _, o := range []match.Output{m, ul, ur} {
			if _, runErr = o.WriteTo(&out); runErr != nil {
				return
			}
		}
	})
	if runErr != nil {
		return false, runErr
	}
	hwm, rssOK := procmem.Bytes(0, "VmHWM")
	rss := hwm[0]

	fmt.Printf("benchmatch -raw: standard profile (%s), GOMAXPROCS %d\n", source, runtime.GOMAXPROCS(0))
	fmt.Printf("\n2-way matcher on raw JSON: %d ledger x %d bank records, %.1f MiB of JSON (left %.1f, right %.1f); matchOn [counterparty], tolerance %.2f, dateWindowDays %d, fuzzyThreshold %s\n",
		left.Len(), right.Len(), mib(input), mib(uint64(len(leftJSON))), mib(uint64(len(rightJSON))), tol, p.WindowDays, fuzzyText(opts.FuzzyThreshold))
	ok := true
	if set != nil {
		pairs := make([][2]int, len(res.Pairs))
		for i, pr := range res.Pairs {
			pairs[i] = [2]int{pr.Left, pr.Right}
		}
		correct, precision, recall := set.Score(pairs)
		fmt.Printf("  expected pairs %d, matched %d, correct %d, wrong %d, missed %d\n",
			set.Expected, len(pairs), correct, len(pairs)-correct, set.Expected-correct)
		fmt.Printf("  precision %.3f %%  recall %.3f %%  (targets >= %.1f %%, >= %.1f %%)\n",
			100*precision, 100*recall, 100*targetPrecision, 100*targetRecall)
		ok = precision >= targetPrecision && recall >= targetRecall
	}
	fmt.Printf("  time %.3f s: index the bytes %.3f s, match %.3f s, write the outputs %.3f s (%d pairs, %d + %d unmatched: %.1f MiB of JSON)\n",
		elapsed.Seconds(), indexing.Seconds(), matching.Seconds(), (elapsed - indexing - matching).Seconds(),
		len(res.Pairs), len(res.UnmatchedLeft), len(res.UnmatchedRight), mib(uint64(out.n)))
	fmt.Printf("  peak heap %.1f MiB (%.2fx the input; the input alone %.1f MiB of heap)\n",
		mib(peak), float64(peak)/float64(input), mib(inputHeap))
	if !rssOK {
		fmt.Println("  peak RSS n/a")
		return ok, nil
	}
	since := "since the JSON was made (VmHWM reset)"
	if !rssReset {
		since = "of the whole process, the generator's maps included (VmHWM could not be reset)"
	}
	fmt.Printf("  peak RSS %.1f MiB %s: %.2fx the input (target < 4x)\n", mib(rss), since, float64(rss)/float64(input))
	return ok && float64(rss) < 4*float64(input), nil
}

// jsonArray writes records as one JSON array, encoding/json's bytes for each.
func jsonArray(recs []gen.Record) ([]byte, error) {
	out := []byte{'['}
	for i, r := range recs {
		if i > 0 {
			out = append(out, ',')
		}
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return append(out, ']'), nil
}

// counter is a writer that counts and discards.
type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// writeSet writes the 2-way set's records without descriptions (the comparison matches on
// counterparty, amount within tolerance and date within the window), as JSON and CSV, and
// the in-process matcher's time on them.
func writeSet(p gen.Profile, dir string) error {
	set := gen.NewTwoWay(p)
	strip := func(recs []gen.Record) []gen.Record {
		out := make([]gen.Record, len(recs))
		for i, r := range recs {
			out[i] = gen.Record{"id": r["id"], "counterparty": r["counterparty"], "amount": r["amount"], "date": r["date"]}
		}
		return out
	}
	left, right := strip(set.Left), strip(set.Right)
	for name, recs := range map[string][]gen.Record{"left": left, "right": right} {
		b, err := json.Marshal(recs)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644); err != nil {
			return err
		}
		var csv strings.Builder
		csv.WriteString("id,counterparty,amount,date\n")
		for _, r := range recs {
			fmt.Fprintf(&csv, "%s,%s,%s,%s\n", r["id"], r["counterparty"], strconv.FormatFloat(r["amount"].(float64), 'f', -1, 64), r["date"])
		}
		if err := os.WriteFile(filepath.Join(dir, name+".csv"), []byte(csv.String()), 0o644); err != nil {
			return err
		}
	}
	tol, win := p.Tolerance, float64(p.WindowDays)
	start := time.Now()
	res, err := match.Match(left, right, match.MatchOptions{MatchOn: []string{"counterparty"}, Tolerance: &tol, DateWindowDays: &win})
	if err != nil {
		return err
	}
	line := fmt.Sprintf("in process: %d x %d records, %d pairs in %.3f s\n", len(left), len(right), len(res.Matched), time.Since(start).Seconds())
	fmt.Print(line)
	return os.WriteFile(filepath.Join(dir, "in-process.txt"), []byte(line), 0o644)
}

func nWay(p gen.Profile) {
	set := gen.NewNWay(p)
	tol, win := p.Tolerance, float64(p.WindowDays)
	legs := []match.Leg{{Key: "ledger", Records: set.Ledger}, {Key: "bank", Records: set.Bank}, {Key: "processor", Records: set.Processor}}
	opts := match.NWayOptions{
		MatchOn:        []string{"invoice"},
		Tolerances:     map[string]match.Tolerance{"amount": {Type: match.ToleranceCurrency, Value: tol}},
		DateWindowDays: &win,
	}
	recordsHeap := settledHeap()
	var res *match.NWayResult
	elapsed, peak := measure(func() {
		var err error
		if res, err = match.NWay(legs, opts); err != nil {
			fmt.Fprintln(os.Stderr, "benchmatch:", err)
			os.Exit(2)
		}
	})
	got := make(map[string]string, len(set.Truth))
	for _, g := range res.Groups {
		got[g.MatchKey] = g.Classification
	}
	for _, o := range res.Orphans {
		got[o.Key] = match.ClassOrphan
	}
	// Per class: predicted, true, both.
	type tally struct{ predicted, truth, both int }
	classes := []string{match.ClassFull, match.ClassVariance, match.ClassMissingLeg, match.ClassOrphan}
	tallies := map[string]*tally{}
	for _, c := range classes {
		tallies[c] = &tally{}
	}
	for key, want := range set.Truth {
		have := got[key]
		tallies[want].truth++
		if t, ok := tallies[have]; ok {
			t.predicted++
			if have == want {
				t.both++
			}
		}
	}
	records := len(set.Ledger) + len(set.Bank) + len(set.Processor)
	fmt.Printf("\nN-way matcher: ledger %d, bank %d, processor %d records; matchOn [invoice], amount currency %.2f, dateWindowDays %d\n",
		len(set.Ledger), len(set.Bank), len(set.Processor), tol, p.WindowDays)
	fmt.Printf("  counts %+v\n", res.Counts)
	for _, c := range classes {
		t := tallies[c]
		fmt.Printf("  %-11s true %6d  found %6d  precision %.3f %%  recall %.3f %%\n",
			c, t.truth, t.predicted, pct(t.both, t.predicted), pct(t.both, t.truth))
	}
	fmt.Printf("  time %.3f s  %.0f records/s  peak heap %.1f MiB (records %.1f MiB)  peak RSS %s\n",
		elapsed.Seconds(), float64(records)/elapsed.Seconds(), mib(peak), mib(recordsHeap), peakRSS())
}

func pct(a, b int) float64 {
	if b == 0 {
		return 100
	}
	return 100 * float64(a) / float64(b)
}

func fuzzyText(f *float64) string {
	if f == nil {
		return "not set"
	}
	return fmt.Sprint(*f)
}

// settledHeap collects garbage and returns the live heap: the records and the truth.
func settledHeap() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	return heapObjects()
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// measure runs f, sampling the heap every millisecond, and returns its duration and the
// largest heap seen.
func measure(f func()) (time.Duration, uint64) {
	var peak atomic.Uint64
	peak.Store(heapObjects())
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if h := heapObjects(); h > peak.Load() {
					peak.Store(h)
				}
			}
		}
	}()
	start := time.Now()
	f()
	elapsed := time.Since(start)
	close(done)
	<-stopped
	if h := heapObjects(); h > peak.Load() {
		peak.Store(h)
	}
	return elapsed, peak.Load()
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// peakRSS is the process's peak resident set (VmHWM) in MiB, where Linux reports it.
func peakRSS() string {
	b, ok := procmem.Bytes(0, "VmHWM")
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", mib(b[0]))
}
