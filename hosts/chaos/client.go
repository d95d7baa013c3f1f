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
	"time"
)

const (
	// org is the organization every request of the chaos run acts as.
	org = "chaos"
	// requestTimeout bounds one request, a long poll included.
	requestTimeout = 20 * time.Second
)

// client speaks the runtime API. Every call is bounded; callers retry what a killed or
// restarting process answers (no answer, 5xx) with retry.
type client struct {
	base string
	hc   *http.Client
}

func newClient(base string) *client {
	tr := &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second}
	return &client{base: base, hc: &http.Client{Transport: tr}}
}

// apiError is a non-2xx answer.
type apiError struct {
	op     string
	status int
	body   string
}

func (e *apiError) Error() string { return fmt.Sprintf("%s: HTTP %d %s", e.op, e.status, e.body) }

// statusOf is err's HTTP status, 0 when the request got no answer.
func statusOf(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status
	}
	return 0
}

// transient says whether err is worth trying again: no answer (a process killed or
// restarting, the database away) or a 5xx.
func transient(err error) bool {
	s := statusOf(err)
	return s == 0 || s >= 500
}

// do sends one request and decodes a 2xx JSON answer into out (when not nil).
func (c *client) do(ctx context.Context, op, method, path string, body any, hdr map[string]string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-Org-Id", org)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &apiError{op: op, status: resp.StatusCode, body: string(bytes.TrimSpace(b))}
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("%s: decode the answer: %w", op, err)
		}
	}
	return nil
}

// retry calls fn until it succeeds, fails with an error that is not transient, or ctx ends;
// it sleeps 100 ms, doubling up to 1 s, between tries. It returns fn's last error.
func retry(ctx context.Context, fn func() error) error {
	wait := 100 * time.Millisecond
	for {
		err := fn()
		if err == nil || !transient(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (gave up: %v)", err, ctx.Err())
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// page is one page of a list route.
type page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// listAll reads every page of a list route (path without a query or with one), retrying
// transient failures.
func listAll[T any](ctx context.Context, c *client, op, path string) ([]T, error) {
	var all []T
	cursor := ""
	for {
		sep := "?"
		if bytes.ContainsRune([]byte(path), '?') {
			sep = "&"
		}
		p := path + sep + "limit=500"
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		var pg page[T]
		if err := retry(ctx, func() error { pg = page[T]{}; return c.do(ctx, op, http.MethodGet, p, nil, nil, &pg) }); err != nil {
			return nil, err
		}
		all = append(all, pg.Items...)
		if pg.NextCursor == "" {
			return all, nil
		}
		cursor = pg.NextCursor
	}
}
