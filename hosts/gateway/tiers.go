package gateway

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
)

// Tiers as the proxy applies them: a tier's rate limit, daily run quota and features,
// read through a short cache. The operator edits them under /admin/tiers (admin.go).

var errFeatureNotInTie = newProblem(http.StatusForbidden, "feature_not_in_tier", "the account's tier does not include this feature")

// tierCache keeps tiers read for keyCacheTTL, so that a proxied request does not read its
// tier each time; a change reaches every process within that.
type tierCache struct {
	mu sync.Mutex
	m  map[string]cachedTier
}

type cachedTier struct {
	t    *gwstore.Tier // nil: no such tier (the defaults apply)
	read time.Time
}

// tier returns a tier by name (nil when it does not exist).
func (s *Server) tier(ctx context.Context, name string) (*gwstore.Tier, error) {
	now := s.now()
	s.tiers.mu.Lock()
	c, ok := s.tiers.m[name]
	s.tiers.mu.Unlock()
	if ok && now.Sub(c.read) < keyCacheTTL {
		return c.t, nil
	}
	t, err := s.store.GetTier(ctx, name)
	if err != nil && !errors.Is(err, gwstore.ErrNotFound) {
		return nil, err
	}
	s.tiers.mu.Lock()
	if s.tiers.m == nil || len(s.tiers.m) > 1000 {
		s.tiers.m = map[string]cachedTier{}
	}
	s.tiers.m[name] = cachedTier{t: t, read: now}
	s.tiers.mu.Unlock()
	return t, nil
}

// Tier features that gate routes.
const (
	FeatureAgents     = "agents"
	FeatureAgentForms = "agent_forms"
)

// tierAllows checks a runtime request against the account's tier: its features, and its
// daily run quota for workflow executions (counted from the usage flushed by every gateway
// plus this one's unflushed count, so it may run over by what other gateways counted in
// their last flush interval).
func (s *Server) tierAllows(ctx context.Context, t *gwstore.Tier, orgID, method, path, class string) error {
	need := ""
	switch {
	case class == "agents":
		need = FeatureAgents
	case method == http.MethodPost && strings.TrimSuffix(path, "/") == "/forms/generate":
		need = FeatureAgentForms
	}
	if need != "" && !slices.Contains(t.Features, need) {
		p := *errFeatureNotInTie.(*problem)
		p.Detail = "the account's tier (" + t.Name + ") does not include " + need
		return &p
	}
	if class != "execute" || t.RunsPerDay <= 0 {
		return nil
	}
	now := s.now().UTC()
	day := now.Format(time.DateOnly)
	used, err := s.store.RunsStartedOn(ctx, orgID, day)
	if err != nil {
		return err
	}
	s.umu.Lock()
	if u := s.usage[usageKey{orgID, day, "execute"}]; u != nil {
		used += u.RunsStarted
	}
	s.umu.Unlock()
	if used >= t.RunsPerDay {
		midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
		return huma.ErrorWithHeaders(newProblem(http.StatusTooManyRequests, "quota_exceeded",
			"the organization has started its tier's runs for today ("+t.Name+"); the quota renews at 00:00 UTC"),
			http.Header{"Retry-After": []string{strconv.Itoa(int(midnight.Sub(now).Seconds()) + 1)}})
	}
	return nil
}
