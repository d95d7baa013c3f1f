package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The load mode's gateway phase: serve's gateway (--gateway-addr) in front of its runtime.
// A platform account signs up, makes an organization and a runtime key; then o.gwClients
// keep-alive clients send o.gwRequests GET /workflows/{id} with the key, a keyed read of one
// workflow. The same requests then go to the runtime directly (X-Org-Id), so that the
// gateway's share shows.

const gwOrg = "load-gateway"

// gwRate is the key's rate limit in the gateway phase: far above what the machine can send,
// so that what is measured is the gateway's work, not its limit (50/s by default).
const gwRate = "1000000000"

func gatewayPhase(ctx context.Context, bin, dir string, o loadOptions) (figs []figure, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	args := serveArgs(dir, addrs[0], o.workers, "--gateway-addr", addrs[1], "--rate", gwRate, "--burst", gwRate)
	p, ctx, err := startPhaseServe(ctx, bin, dir, args, "http://"+addrs[0], "http://"+addrs[1]+"/health", o.gwClients+8)
	if err != nil {
		return nil, err
	}
	defer p.stop(&err)
	c := p.c
	gw := "http://" + addrs[1]

	var acct struct {
		Token string `json:"management_token"`
	}
	if err := c.bearer(ctx, http.MethodPost, gw+"/gateway/signup", "", `{"email": "load@example.com", "name": "Load"}`, &acct); err != nil {
		return nil, err
	}
	if err := c.bearer(ctx, http.MethodPost, gw+"/gateway/orgs", acct.Token, `{"id": "`+gwOrg+`", "name": "Load"}`, nil); err != nil {
		return nil, err
	}
	var key struct {
		Secret string `json:"secret"`
	}
	if err := c.bearer(ctx, http.MethodPost, gw+"/gateway/orgs/"+gwOrg+"/keys", acct.Token, `{"kind": "runtime"}`, &key); err != nil {
		return nil, err
	}
	var wf struct {
		ID string `json:"id"`
	}
	if err := c.bearer(ctx, http.MethodPost, gw+"/workflows", key.Secret, `{"name": "read-me", "definition": {"actions": []}}`, &wf); err != nil {
		return nil, err
	}
	path := "/workflows/" + url.PathEscape(wf.ID)

	fmt.Printf("\ngateway: svcflow serve --gateway-addr --rate %s; %d clients, %d GET %s{id} through the gateway with a runtime key, then to the runtime directly%s\n",
		gwRate, o.gwClients, o.gwRequests, "/workflows/", loadAverage())
	for _, target := range []struct {
		key, label, url, header, value string
	}{
		{"gateway", "gateway", gw + path, "Authorization", "Bearer " + key.Secret},
		{"runtime_direct", "runtime direct (same route)", p.srv.base + path, "X-Org-Id", gwOrg},
	} {
		n, elapsed, lat, fails := hammer(ctx, c.hc, target.url, target.header, target.value, o.gwRequests, o.gwClients)
		if ctx.Err() != nil {
			return figs, context.Cause(ctx)
		}
		if fails.count() > 0 {
			return figs, fmt.Errorf("%s: %d of %d requests failed: %v", target.label, fails.count(), o.gwRequests, fails.reasons())
		}
		r := result{lat: lat}
		rps := float64(n) / elapsed.Seconds()
		fmt.Printf("  %s: %d requests in %s = %.0f/s; p50 %s, p99 %s, max %s\n",
			target.label, n, elapsed.Round(time.Millisecond), rps, fmtDur(r.percentile(50)), fmtDur(r.percentile(99)), fmtDur(r.percentile(100)))
		figs = append(figs,
			rate(target.key+".requests_per_s", target.label+": requests/s", rps),
			latency(target.key+".p50_ms", target.label+": p50", r.percentile(50)),
			latency(target.key+".p99_ms", target.label+": p99", r.percentile(99)))
	}
	return figs, nil
}

// hammer sends n GETs of u with header: value from clients keep-alive clients and returns
// how many answered 200, in how long, their latencies sorted, and the failures.
func hammer(ctx context.Context, hc *http.Client, u, header, value string, n, clients int) (int, time.Duration, []time.Duration, *tally) {
	var next atomic.Int64
	fails := newTally()
	per := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range clients {
		wg.Go(func() {
			for int(next.Add(1)) <= n && ctx.Err() == nil {
				t := time.Now()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
				if err != nil {
					fails.add(err.Error())
					continue
				}
				req.Header.Set(header, value)
				resp, err := hc.Do(req)
				if err != nil {
					if ue := (*url.Error)(nil); errors.As(err, &ue) {
						err = ue.Err
					}
					fails.add(err.Error())
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					fails.add(resp.Status)
					continue
				}
				per[i] = append(per[i], time.Since(t))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	var all []time.Duration
	for _, l := range per {
		all = append(all, l...)
	}
	slices.Sort(all)
	return len(all), elapsed, all, fails
}

// bearer sends a JSON request to an absolute URL with a bearer credential ("" for none) and
// decodes a 2xx answer into out (when not nil).
func (c *client) bearer(ctx context.Context, method, u, token, body string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s %s: %s %s", method, req.URL.Path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
