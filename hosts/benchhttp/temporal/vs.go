package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// versus runs both sides rounds times, alternating which goes first, and prints every
// round's figures, the medians and the ratio of the medians' runs/s. Without a temporal
// binary it measures svcflow alone and compares with reference, saying so.
func versus(ctx context.Context, o options, svcflowCmd string, rounds int, reference float64) int {
	_, lookErr := exec.LookPath(o.temporal)
	if lookErr != nil {
		fmt.Printf("temporalbench: no Temporal here (%v): svcflow alone, beside the reference %.1f runs/s (issue 35: the dev server with three local activities, measured elsewhere)\n", lookErr, reference)
	}
	var svc, tmp []figures
	for r := range rounds {
		order := []string{"svcflow", "temporal"}
		if r%2 == 1 {
			order = []string{"temporal", "svcflow"}
		}
		for _, side := range order {
			if ctx.Err() != nil {
				return 1
			}
			fmt.Printf("\nround %d, %s%s\n", r+1, side, loadAverage())
			switch {
			case side == "svcflow":
				f, err := svcflowSide(ctx, svcflowCmd)
				if err != nil {
					fmt.Fprintln(os.Stderr, "temporalbench: svcflow:", err)
					return 1
				}
				fmt.Println("  " + f.line())
				svc = append(svc, f)
			case lookErr == nil:
				f, err := temporalSide(ctx, o)
				if err != nil {
					fmt.Fprintln(os.Stderr, "temporalbench: temporal:", err)
					return 1
				}
				fmt.Println("  " + f.line())
				tmp = append(tmp, f)
			default:
				fmt.Println("  skipped: no temporal binary")
			}
		}
	}
	fmt.Printf("\nmedians of %d rounds%s\n", rounds, loadAverage())
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "side\truns/s\tp50\tp90\tp99\tmax\tserver CPU/run\tclient CPU/run\t")
	row := func(name string, fs []figures) float64 {
		m := func(get func(figures) float64) float64 { return median(fs, get) }
		rate := m(figures.rate)
		fmt.Fprintf(tw, "%s\t%.1f\t%.1fms\t%.1fms\t%.1fms\t%.1fms\t%.2fms\t%.2fms\t\n", name, rate,
			m(figures.p50), m(figures.p90), m(figures.p99), m(figures.max),
			m(func(f figures) float64 { return f.serverCPU }), m(func(f figures) float64 { return f.ownCPU }))
		return rate
	}
	svcRate := row("svcflow", svc)
	var tmpRate float64
	if len(tmp) > 0 {
		tmpRate = row("temporal-"+o.activities, tmp)
	} else {
		tmpRate = reference
		fmt.Fprintf(tw, "temporal (reference)\t%.1f\t-\t-\t-\t-\t-\t-\t\n", reference)
	}
	_ = tw.Flush()
	what := "measured here, the same minutes"
	if len(tmp) == 0 {
		what = "against the reference figure, not measured here"
	}
	fmt.Printf("ratio: svcflow %.1fx Temporal's runs/s (%s); svcflow p99 %.1f ms (target: at least 25x with p99 under 300 ms)\n",
		svcRate/tmpRate, what, median(svc, figures.p99))
	return 0
}

// svcflowSide runs cmd (bash -c) and reads the last figures: line of its output.
func svcflowSide(ctx context.Context, cmd string) (figures, error) {
	var out bytes.Buffer
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	c.Stdout, c.Stderr = &out, os.Stderr
	if err := c.Run(); err != nil {
		os.Stdout.Write(out.Bytes())
		return figures{}, fmt.Errorf("%s: %w", cmd, err)
	}
	var last string
	for l := range strings.SplitSeq(out.String(), "\n") {
		if _, rest, ok := strings.Cut(l, "figures: "); ok {
			last = rest
		}
	}
	if last == "" {
		os.Stdout.Write(out.Bytes())
		return figures{}, fmt.Errorf("%s printed no figures: line", cmd)
	}
	return parseFigures(last)
}

// parseFigures reads the key=value pairs of a figures: line.
func parseFigures(s string) (figures, error) {
	kv := map[string]string{}
	for f := range strings.FieldsSeq(s) {
		k, v, ok := strings.Cut(f, "=")
		if ok {
			kv[k] = v
		}
	}
	num := func(k string) float64 {
		v, _ := strconv.ParseFloat(kv[k], 64)
		return v
	}
	if kv["runs_per_s"] == "" || kv["p99_ms"] == "" {
		return figures{}, fmt.Errorf("figures line without runs_per_s or p99_ms: %q", s)
	}
	f := figures{
		side: kv["mode"], runs: int(num("runs")), completed: int(num("completed")),
		elapsed:   time.Duration(num("seconds") * float64(time.Second)),
		serverCPU: num("server_cpu_ms_per_run"), ownCPU: num("client_cpu_ms_per_run"),
		p: [4]float64{num("p50_ms"), num("p90_ms"), num("p99_ms"), num("max_ms")},
	}
	return f, nil
}

// median is the median of get over fs (the lower middle of an even count); 0 for none.
func median(fs []figures, get func(figures) float64) float64 {
	if len(fs) == 0 {
		return 0
	}
	v := make([]float64, len(fs))
	for i, f := range fs {
		v[i] = get(f)
	}
	slices.Sort(v)
	return v[(len(v)-1)/2]
}

// loadAverage is " (load average X)" from /proc/loadavg, or "".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return fmt.Sprintf(" (load average %s %s %s)", f[0], f[1], f[2])
}
