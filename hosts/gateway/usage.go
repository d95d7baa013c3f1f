package gateway

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
)

// Usage is counted in memory per (organization, day, route class) and added to the store by
// Flush (every few seconds, and on the way out): no request waits for a write.

type usageKey struct{ org, day, class string }

// routeClass names what a runtime path is about: its first segment, with workflow
// executions apart (they start runs).
func routeClass(method, path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if method == http.MethodPost && len(parts) == 3 && parts[0] == "workflows" && parts[2] == "execute" {
		return "execute"
	}
	if parts[0] == "" {
		return "other"
	}
	return parts[0]
}

// count adds to the usage of org now.
func (s *Server) count(org, class string, requests, limited, runs int64) {
	k := usageKey{org, s.now().UTC().Format(time.DateOnly), class}
	s.umu.Lock()
	defer s.umu.Unlock()
	u := s.usage[k]
	if u == nil {
		u = &gwstore.Usage{OrgID: k.org, Day: k.day, Class: k.class}
		s.usage[k] = u
	}
	u.Requests += requests
	u.RateLimited += limited
	u.RunsStarted += runs
}

// Flush adds the usage counted since the last flush to the store. On failure the counts
// are kept for the next flush.
func (s *Server) Flush(ctx context.Context) error {
	s.umu.Lock()
	pending := s.usage
	s.usage = map[usageKey]*gwstore.Usage{}
	s.umu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	deltas := make([]gwstore.Usage, 0, len(pending))
	for _, u := range pending {
		deltas = append(deltas, *u)
	}
	if err := s.store.AddUsage(ctx, deltas); err != nil {
		s.umu.Lock()
		for _, d := range deltas {
			k := usageKey{d.OrgID, d.Day, d.Class}
			if u := s.usage[k]; u != nil {
				u.Requests, u.RateLimited, u.RunsStarted = u.Requests+d.Requests, u.RateLimited+d.RateLimited, u.RunsStarted+d.RunsStarted
			} else {
				d := d
				s.usage[k] = &d
			}
		}
		s.umu.Unlock()
		return err
	}
	return nil
}

// RunFlusher flushes the usage every interval until ctx is done, then once more, and waits
// for the sign-in codes still being mailed (each bounded by mailTimeout).
func (s *Server) RunFlusher(ctx context.Context, interval time.Duration) {
	defer s.WaitMails()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := s.Flush(context.WithoutCancel(ctx)); err != nil {
				s.log.Warn("gateway usage not saved", "err", err)
			}
			return
		case <-t.C:
			if err := s.Flush(ctx); err != nil {
				s.log.Warn("gateway usage not saved; kept for the next flush", "err", err)
			}
		}
	}
}

// statusRecorder remembers the status the runtime answered.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) registerUsage() {
	o := huma.Operation{OperationID: "get-usage", Method: http.MethodGet, Path: "/gateway/orgs/{orgId}/usage", Summary: "An organization's usage",
		Tags: []string{"Organizations"}, Description: "Per day (UTC) and route class: requests forwarded, requests refused by the rate limit, " +
			"runs started (workflow executions the runtime accepted). Counted by each gateway process and saved every few seconds."}
	huma.Register(s.api, s.accountRoute(managementOp(o, http.StatusNotFound, http.StatusUnprocessableEntity)), func(ctx context.Context, in *struct {
		OrgPath
		From string `query:"from" pattern:"^[0-9]{4}-[0-9]{2}-[0-9]{2}$" doc:"First day (YYYY-MM-DD); default 30 days ago."`
		To   string `query:"to" pattern:"^[0-9]{4}-[0-9]{2}-[0-9]{2}$" doc:"Last day; default today."`
	}) (*struct {
		Body struct {
			Items []gwstore.Usage `json:"items" nullable:"false"`
		}
	}, error) {
		if _, err := s.store.GetGatewayOrg(ctx, accountIn(ctx).ID, in.OrgID); err != nil {
			return nil, s.fail(ctx, err, "organization not found")
		}
		if err := s.Flush(ctx); err != nil {
			return nil, s.fail(ctx, err, "")
		}
		now := s.now().UTC()
		from, to := in.From, in.To
		if from == "" {
			from = now.AddDate(0, 0, -30).Format(time.DateOnly)
		}
		if to == "" {
			to = now.Format(time.DateOnly)
		}
		rows, err := s.store.ListUsage(ctx, in.OrgID, from, to)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		out := &struct {
			Body struct {
				Items []gwstore.Usage `json:"items" nullable:"false"`
			}
		}{}
		out.Body.Items = rows
		if out.Body.Items == nil {
			out.Body.Items = []gwstore.Usage{}
		}
		return out, nil
	})
}
