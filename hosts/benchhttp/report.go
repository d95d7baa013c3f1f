package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// result is what one mode measured for one organization.
type result struct {
	name      string
	runs      int             // runs sent
	completed int             // runs that ended completed
	elapsed   time.Duration   // from the first execute until the last run ended
	lat       []time.Duration // each completed run's latency, sorted; nil when not measured
	requests  int64           // HTTP requests sent for the runs, executes included
	failures  *tally
	notes     []string
	// serverCPU and ownCPU are the CPU time the svcflow processes and this program used
	// while the runs ran; cpuKnown is false where /proc did not tell.
	serverCPU, ownCPU time.Duration
	cpuKnown          bool
}

// cpuNote says what a run cost the server's CPU and this program's.
func (r result) cpuNote() string {
	if !r.cpuKnown || r.completed == 0 {
		return ""
	}
	n := float64(r.completed)
	return fmt.Sprintf("CPU a run: svcflow %.2f ms (user+system of its processes, /proc/PID/stat, %.1f s in all over %.1f s: %.2f CPUs busy), benchhttp's clients %.2f ms",
		ms(r.serverCPU)/n, r.serverCPU.Seconds(), r.elapsed.Seconds(), r.serverCPU.Seconds()/max(r.elapsed.Seconds(), 1e-9), ms(r.ownCPU)/n)
}

// figuresLine is the closed loop's figures on one line of key=value pairs, for a program
// that runs benchhttp and reads its answer (make bench-vs-temporal).
func (r result) figuresLine() string {
	line := fmt.Sprintf("figures: mode=%s runs=%d completed=%d seconds=%.3f runs_per_s=%.1f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f",
		r.name, r.runs, r.completed, r.elapsed.Seconds(), float64(r.completed)/max(r.elapsed.Seconds(), 1e-9),
		ms(r.percentile(50)), ms(r.percentile(90)), ms(r.percentile(99)), ms(r.percentile(100)))
	if r.cpuKnown && r.completed > 0 {
		line += fmt.Sprintf(" server_cpu_ms_per_run=%.3f client_cpu_ms_per_run=%.3f", ms(r.serverCPU)/float64(r.completed), ms(r.ownCPU)/float64(r.completed))
	}
	return line
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile is the nearest-rank p-th percentile of the sorted latencies.
func (r result) percentile(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	k := int(math.Ceil(float64(len(r.lat))*p/100)) - 1
	return r.lat[min(max(k, 0), len(r.lat)-1)]
}

// tally counts failures by reason.
type tally struct {
	mu sync.Mutex
	n  int
	by map[string]int
}

func newTally() *tally { return &tally{by: map[string]int{}} }

func (t *tally) add(reason string) { t.addN(reason, 1) }

func (t *tally) addN(reason string, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n += n
	t.by[reason] += n
}

func (t *tally) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// reasons lists the reasons, most frequent first.
func (t *tally) reasons() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]string, 0, len(t.by))
	for k := range t.by {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(t.by[b], t.by[a]), strings.Compare(a, b))
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%d x %s", t.by[k], k)
	}
	return out
}

// printMode prints one mode's table and notes.
func printMode(title string, rs ...result) {
	fmt.Printf("\n%s%s\n", title, loadAverage())
	printTable(os.Stdout, rs)
	for _, r := range rs {
		for _, n := range r.notes {
			fmt.Println("  " + n)
		}
		for _, f := range r.failures.reasons() {
			fmt.Printf("  %s failure: %s\n", r.name, f)
		}
	}
}

func printTable(w io.Writer, rs []result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\truns\tseconds\truns/s\tp50\tp90\tp99\tmax\treq/run\tfailures\t")
	for _, r := range rs {
		lat := [4]string{"-", "-", "-", "-"}
		if r.lat != nil {
			lat = [4]string{fmtDur(r.percentile(50)), fmtDur(r.percentile(90)), fmtDur(r.percentile(99)), fmtDur(r.percentile(100))}
		}
		perRun := "-"
		if r.runs > 0 {
			perRun = fmt.Sprintf("%.1f", float64(r.requests)/float64(r.runs))
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%d\t\n",
			r.name, r.runs, r.elapsed.Seconds(), float64(r.completed)/max(r.elapsed.Seconds(), 1e-9),
			lat[0], lat[1], lat[2], lat[3], perRun, r.failures.count())
	}
	_ = tw.Flush()
}

// fmtDur prints a latency with three significant digits or so.
func fmtDur(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

// loadAverage is the machine's 1-minute load average, where Linux tells it: figures taken
// while other work ran on the machine are to be marked so (docs/performance.md).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return " (load average " + f[0] + ")"
}
