package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// regressionRatio is how much of its baseline a figure may lose before the load mode calls
// it a REGRESSION: a rate below 80 % of the baseline's, a latency above 1/0.8 = 1.25 times.
const regressionRatio = 0.8

// figure is one line of the load mode's table.
type figure struct {
	key   string // stable, the baseline file's key: "sqlite.runs_per_s"
	label string // what the table says
	value float64
	unit  string // "/s" or "ms"
	// higher is true for a rate (more is better), false for a latency.
	higher bool
}

func rate(key, label string, v float64) figure {
	return figure{key: key, label: label, value: v, unit: "/s", higher: true}
}

func latency(key, label string, d time.Duration) figure {
	return figure{key: key, label: label, value: float64(d) / float64(time.Millisecond), unit: "ms"}
}

func (f figure) String() string {
	if f.unit == "ms" {
		return fmtDur(time.Duration(f.value * float64(time.Millisecond)))
	}
	return fmt.Sprintf("%.0f%s", f.value, f.unit)
}

// baseline is the committed file of previous figures (docs/load-baseline.json): what the
// load mode compares each figure with.
type baseline struct {
	Taken   string             `json:"taken"`   // RFC 3339
	Machine string             `json:"machine"` // CPUs, model, load average, PostgreSQL
	Note    string             `json:"note,omitempty"`
	Figures map[string]float64 `json:"figures"` // rates in /s, latencies in ms
}

func readBaseline(path string) (*baseline, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var bl baseline
	if err := json.Unmarshal(b, &bl); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &bl, nil
}

func writeBaseline(path, machine, note string, figs []figure) error {
	bl := baseline{Taken: time.Now().UTC().Format(time.RFC3339), Machine: machine, Note: note, Figures: map[string]float64{}}
	for _, f := range figs {
		bl.Figures[f.key] = roundFigure(f.value)
	}
	b, err := json.MarshalIndent(bl, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// roundFigure keeps three significant digits or so: the machine's noise is larger.
func roundFigure(v float64) float64 {
	switch {
	case v >= 100:
		return float64(int64(v + 0.5))
	case v >= 1:
		return float64(int64(v*100+0.5)) / 100
	default:
		return float64(int64(v*10000+0.5)) / 10000
	}
}

// compare prints the figures as one table, each beside the baseline's (when bl is not nil)
// with the ratio now/baseline, and returns how many are REGRESSIONs.
func compare(w io.Writer, figs []figure, bl *baseline) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tnow\tbaseline\tnow/baseline\t")
	regressions := 0
	for _, f := range figs {
		base, ratio, flag := "-", "-", ""
		if old, ok := bl.figure(f.key); ok && old > 0 && f.value > 0 {
			bf := f
			bf.value = old
			base = bf.String()
			r := f.value / old
			ratio = fmt.Sprintf("%.2f", r)
			kept := r // what is left of the baseline's performance
			if !f.higher {
				kept = 1 / r
			}
			if kept < regressionRatio {
				flag = "REGRESSION"
				regressions++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.label, f, base, ratio, flag)
	}
	_ = tw.Flush()
	return regressions
}

func (bl *baseline) figure(key string) (float64, bool) {
	if bl == nil {
		return 0, false
	}
	v, ok := bl.Figures[key]
	return v, ok
}

// machine describes where the figures were taken: CPUs, their model, the load average
// and, when known, PostgreSQL's version.
func machine(pgVersion string) string {
	parts := []string{fmt.Sprintf("%d CPUs", runtime.NumCPU())}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				parts = append(parts, strings.TrimSpace(v))
				break
			}
		}
	}
	parts = append(parts, runtime.GOOS+"/"+runtime.GOARCH, runtime.Version())
	if pgVersion != "" {
		parts = append(parts, "PostgreSQL "+pgVersion)
	}
	if la := strings.TrimPrefix(loadAverage(), " "); la != "" {
		parts = append(parts, strings.Trim(la, "()")+" at the end")
	}
	return strings.Join(parts, ", ")
}
