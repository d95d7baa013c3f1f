package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The load mode's step latency, read from the outside: every process that runs steps
// records each committed unit of run work in the histogram svcflow_step_duration_seconds
// (engine/core/metrics.go) and serves it on --ops-addr /metrics. The load mode scrapes it
// before and after the timed runs and takes quantiles of the difference, summed over the
// processes and the step types. The run status document carries no step timings.

// stepHistogram is the metric the load mode reads.
const stepHistogram = "svcflow_step_duration_seconds"

// histogram is a cumulative Prometheus histogram: counts[i] observations at most bounds[i],
// the last bound +Inf.
type histogram struct {
	bounds []float64
	counts []float64
}

// scrapeHistogram reads the histogram name from the /metrics page at url, summing its
// series (one per label set other than le).
func scrapeHistogram(ctx context.Context, hc *http.Client, url, name string) (histogram, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return histogram{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return histogram{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return histogram{}, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	byBound := map[float64]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	prefix := name + "_bucket{"
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		le, v, err := bucketLine(line[len(prefix):])
		if err != nil {
			return histogram{}, fmt.Errorf("scrape %s: %q: %w", url, line, err)
		}
		byBound[le] += v
	}
	if err := sc.Err(); err != nil {
		return histogram{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	var h histogram
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	slices.Sort(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	return h, nil
}

// bucketLine parses what follows `name_bucket{`: the labels, whose le it returns, and the
// value.
func bucketLine(rest string) (le, v float64, err error) {
	end := strings.LastIndexByte(rest, '}')
	if end < 0 {
		return 0, 0, fmt.Errorf("no closing brace")
	}
	labels, value := rest[:end], strings.Fields(rest[end+1:])
	if len(value) == 0 {
		return 0, 0, fmt.Errorf("no value")
	}
	i := strings.Index(labels, `le="`)
	if i < 0 {
		return 0, 0, fmt.Errorf("no le label")
	}
	q := labels[i+len(`le="`):]
	q = q[:strings.IndexByte(q, '"')]
	if le, err = strconv.ParseFloat(q, 64); err != nil { // ParseFloat reads "+Inf"
		return 0, 0, err
	}
	v, err = strconv.ParseFloat(value[0], 64)
	return le, v, err
}

// add sums two histograms of the same buckets (two processes').
func (h histogram) add(o histogram) histogram {
	if len(h.bounds) == 0 {
		return o
	}
	if len(o.bounds) == 0 {
		return h
	}
	out := histogram{bounds: h.bounds, counts: slices.Clone(h.counts)}
	for i := range out.counts {
		if i < len(o.counts) {
			out.counts[i] += o.counts[i]
		}
	}
	return out
}

// sub is what was observed between before and h (h - before). A process whose histogram
// was empty before (no step yet: no series) has no bounds there.
func (h histogram) sub(before histogram) histogram {
	out := histogram{bounds: h.bounds, counts: slices.Clone(h.counts)}
	if len(before.counts) == len(out.counts) {
		for i := range out.counts {
			out.counts[i] -= before.counts[i]
		}
	}
	return out
}

// total is how many observations the histogram holds.
func (h histogram) total() float64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// quantile is the q-quantile (0..1) interpolated linearly inside its bucket, as
// Prometheus's histogram_quantile: exact only at the bucket bounds. A quantile in the +Inf
// bucket is the largest finite bound. 0 when the histogram is empty.
func (h histogram) quantile(q float64) time.Duration {
	n := h.total()
	if n == 0 {
		return 0
	}
	rank := q * n
	lower, below := 0.0, 0.0
	for i, b := range h.bounds {
		c := h.counts[i]
		if c >= rank {
			if math.IsInf(b, 1) {
				return seconds(lower)
			}
			if c == below {
				return seconds(b)
			}
			return seconds(lower + (b-lower)*(rank-below)/(c-below))
		}
		lower, below = b, c
	}
	return seconds(lower)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// claimsCounter is the worker's counter of claims by outcome (hosts/worker/metrics.go).
const claimsCounter = "svcflow_worker_claims_total"

// scrapeCounter reads the series of the counter name from the /metrics page at url: each
// series' value by its labels as written ({outcome="empty"}), "" for a series without any.
func scrapeCounter(ctx context.Context, hc *http.Client, url, name string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		labels := ""
		if rest[0] == '{' {
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				continue
			}
			labels, rest = rest[:end+1], rest[end+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("scrape %s: %q: %w", url, line, err)
		}
		out[labels] += v
	}
	return out, sc.Err()
}
