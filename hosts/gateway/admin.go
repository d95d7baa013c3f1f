package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
	"github.com/svcflow/svcflow/hosts/license"
	"github.com/svcflow/svcflow/hosts/runtime"
)

// Platform operator administration, under /admin/: tiers (rate limits, a daily run quota,
// features), accounts (list, suspend, resume, put on a tier), licenses (issue, revoke) and
// usage across accounts. The operator token comes from the deployment
// (SVC_OPERATOR_TOKEN); without one the routes answer 404.

var (
	errNoOperator      = newProblem(http.StatusNotFound, "admin_not_configured", "this gateway has no operator token (SVC_OPERATOR_TOKEN)")
	errNotOperator     = newProblem(http.StatusUnauthorized, "unknown_operator_token", "send Authorization: Bearer <operator token>")
	errNoSigningKey    = newProblem(http.StatusConflict, "license_signing_not_configured", "this gateway cannot issue licenses (SVC_LICENSE_KEY)")
	errFeatureNotInTie = newProblem(http.StatusForbidden, "feature_not_in_tier", "the account's tier does not include this feature")
)

// OperatorHeader carries the operator token.
type OperatorHeader struct {
	Authorization string `header:"Authorization" doc:"Bearer <operator token> (SVC_OPERATOR_TOKEN)."`
}

func (s *Server) operator(h OperatorHeader) error {
	if s.operatorHash == "" {
		return errNoOperator
	}
	secret := bearerOf(h.Authorization)
	if secret == "" || subtle.ConstantTimeCompare([]byte(hashOf(secret)), []byte(s.operatorHash)) != 1 {
		return errNotOperator
	}
	return nil
}

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

// AccountPath names an account in an operator route.
type AccountPath struct {
	OperatorHeader
	AccountID string `path:"accountId" maxLength:"100"`
}

// LicenseRequest is what the operator asks a license for.
type LicenseRequest struct {
	AccountID string     `json:"account_id" maxLength:"100"`
	Licensee  string     `json:"licensee" maxLength:"200"`
	Seats     int        `json:"seats" minimum:"1"`
	Features  []string   `json:"features,omitempty" maxItems:"100"`
	NotBefore *time.Time `json:"not_before,omitempty" doc:"Default: now."`
	Days      int        `json:"days,omitempty" minimum:"1" maximum:"3660" doc:"Days from not_before to expiry (default 365)."`
}

func (s *Server) registerAdmin() {
	tags := []string{"Operator"}
	huma.Register(s.api, huma.Operation{OperationID: "admin-list-accounts", Method: http.MethodGet, Path: "/admin/accounts",
		Summary: "Every account", Tags: tags}, func(ctx context.Context, in *struct {
		OperatorHeader
		Limit  int    `query:"limit" default:"50" minimum:"1" maximum:"500"`
		Cursor string `query:"cursor"`
	}) (*struct{ Body runtime.List[Account] }, error) {
		if err := s.operator(in.OperatorHeader); err != nil {
			return nil, err
		}
		page, err := s.store.ListAccounts(ctx, svctype.ListOptions{Limit: in.Limit, Cursor: in.Cursor})
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		items := make([]Account, 0, len(page.Items))
		for i := range page.Items {
			items = append(items, accountOf(&page.Items[i]))
		}
		return &struct{ Body runtime.List[Account] }{Body: runtime.List[Account]{Items: items, NextCursor: page.NextCursor}}, nil
	})

	for _, st := range []struct{ verb, status, summary string }{
		{"suspend", gwstore.AccountSuspended, "Suspend an account: its management token, keys and sessions stop (within 5 s on other gateways)"},
		{"resume", gwstore.AccountActive, "Resume a suspended account"},
	} {
		huma.Register(s.api, huma.Operation{OperationID: "admin-" + st.verb + "-account", Method: http.MethodPost,
			Path: "/admin/accounts/{accountId}/" + st.verb, Summary: st.summary, Tags: tags}, func(ctx context.Context, in *AccountPath) (*struct{ Body Account }, error) {
			if err := s.operator(in.OperatorHeader); err != nil {
				return nil, err
			}
			if err := s.store.SetAccountStatus(ctx, in.AccountID, st.status, s.now().UTC()); err != nil {
				return nil, s.fail(ctx, err, "account not found")
			}
			s.forgetAllKeys()
			return s.adminAccount(ctx, in.AccountID)
		})
	}

	huma.Register(s.api, huma.Operation{OperationID: "admin-set-account-tier", Method: http.MethodPut, Path: "/admin/accounts/{accountId}/tier",
		Summary: "Put an account on a tier", Tags: tags, MaxBodyBytes: 1 << 12,
		Description: "tier names a tier of PUT /admin/tiers/{name}, or is empty for the deployment's defaults (--rate, --burst, no quota, every feature)."},
		func(ctx context.Context, in *struct {
			AccountPath
			Body struct {
				Tier string `json:"tier" maxLength:"64"`
			}
		}) (*struct{ Body Account }, error) {
			if err := s.operator(in.OperatorHeader); err != nil {
				return nil, err
			}
			if in.Body.Tier != "" {
				if _, err := s.store.GetTier(ctx, in.Body.Tier); err != nil {
					if errors.Is(err, gwstore.ErrNotFound) {
						return nil, invalid("/tier", "no such tier")
					}
					return nil, s.fail(ctx, err, "")
				}
			}
			if err := s.store.SetAccountTier(ctx, in.AccountID, in.Body.Tier, s.now().UTC()); err != nil {
				return nil, s.fail(ctx, err, "account not found")
			}
			s.forgetAllKeys()
			return s.adminAccount(ctx, in.AccountID)
		})

	huma.Register(s.api, huma.Operation{OperationID: "admin-list-tiers", Method: http.MethodGet, Path: "/admin/tiers", Summary: "The tiers", Tags: tags},
		func(ctx context.Context, in *OperatorHeader) (*struct {
			Body struct {
				Items []gwstore.Tier `json:"items"`
			}
		}, error) {
			if err := s.operator(*in); err != nil {
				return nil, err
			}
			ts, err := s.store.ListTiers(ctx)
			if err != nil {
				return nil, s.fail(ctx, err, "")
			}
			out := &struct {
				Body struct {
					Items []gwstore.Tier `json:"items"`
				}
			}{}
			out.Body.Items = ts
			return out, nil
		})

	huma.Register(s.api, huma.Operation{OperationID: "admin-put-tier", Method: http.MethodPut, Path: "/admin/tiers/{name}",
		Summary: "Create or replace a tier", Tags: tags, MaxBodyBytes: 1 << 14,
		Description: "rate and burst are each key's token bucket; runs_per_day caps the workflow executions each organization " +
			"of the account starts a day (UTC; 0: none); features open routes: agents (/agents/...), agent_forms (POST /forms/generate). " +
			"Changes reach every gateway within 5 s."},
		func(ctx context.Context, in *struct {
			OperatorHeader
			Name string `path:"name" maxLength:"64" pattern:"^[a-z0-9][a-z0-9_-]*$"`
			Body struct {
				Rate        float64  `json:"rate" exclusiveMinimum:"0" maximum:"100000"`
				Burst       int      `json:"burst" minimum:"1" maximum:"1000000"`
				RunsPerDay  int64    `json:"runs_per_day,omitempty" minimum:"0"`
				Features    []string `json:"features,omitempty" maxItems:"50"`
				Description string   `json:"description,omitempty" maxLength:"500"`
			}
		}) (*struct{ Body gwstore.Tier }, error) {
			if err := s.operator(in.OperatorHeader); err != nil {
				return nil, err
			}
			t := &gwstore.Tier{Name: in.Name, Rate: in.Body.Rate, Burst: in.Body.Burst, RunsPerDay: in.Body.RunsPerDay,
				Features: in.Body.Features, Description: in.Body.Description, UpdatedAt: s.now().UTC()}
			if err := s.store.PutTier(ctx, t); err != nil {
				return nil, s.fail(ctx, err, "")
			}
			s.tiers.mu.Lock()
			delete(s.tiers.m, t.Name)
			s.tiers.mu.Unlock()
			return &struct{ Body gwstore.Tier }{Body: *t}, nil
		})

	huma.Register(s.api, huma.Operation{OperationID: "admin-issue-license", Method: http.MethodPost, Path: "/admin/licenses",
		Summary: "Issue an on-premises license to an account", Tags: tags, DefaultStatus: http.StatusCreated, MaxBodyBytes: 1 << 14,
		Description: "Signs the license with the deployment's key (SVC_LICENSE_KEY) and keeps it: the account sees it in GET /gateway/licenses."},
		func(ctx context.Context, in *struct {
			OperatorHeader
			Body LicenseRequest
		}) (*struct{ Body gwstore.IssuedLicense }, error) {
			if err := s.operator(in.OperatorHeader); err != nil {
				return nil, err
			}
			if s.signingKey == nil {
				return nil, errNoSigningKey
			}
			if _, err := s.store.GetAccount(ctx, in.Body.AccountID); err != nil {
				if errors.Is(err, gwstore.ErrNotFound) {
					return nil, invalid("/account_id", "no such account")
				}
				return nil, s.fail(ctx, err, "")
			}
			if strings.TrimSpace(in.Body.Licensee) == "" {
				return nil, invalid("/licensee", "required")
			}
			nb := s.now().UTC()
			if in.Body.NotBefore != nil {
				nb = in.Body.NotBefore.UTC()
			}
			days := in.Body.Days
			if days == 0 {
				days = 365
			}
			l := license.License{ID: "lic_" + uuid.NewString(), Licensee: strings.TrimSpace(in.Body.Licensee), Seats: in.Body.Seats,
				Features: in.Body.Features, NotBefore: nb, ExpiresAt: nb.AddDate(0, 0, days)}
			signed, err := license.Sign(l, s.signingKey)
			if err != nil {
				return nil, newProblem(http.StatusUnprocessableEntity, "validation_failed", err.Error())
			}
			if l.Features == nil {
				l.Features = []string{}
			}
			il := &gwstore.IssuedLicense{ID: l.ID, AccountID: in.Body.AccountID, Licensee: l.Licensee, Seats: l.Seats, Features: l.Features,
				NotBefore: l.NotBefore.Truncate(time.Second), ExpiresAt: l.ExpiresAt.Truncate(time.Second), License: signed, CreatedAt: s.now().UTC()}
			if err := s.store.CreateLicense(ctx, il); err != nil {
				return nil, s.fail(ctx, err, "")
			}
			return &struct{ Body gwstore.IssuedLicense }{Body: *il}, nil
		})

	huma.Register(s.api, huma.Operation{OperationID: "admin-list-licenses", Method: http.MethodGet, Path: "/admin/licenses",
		Summary: "Issued licenses", Tags: tags}, func(ctx context.Context, in *struct {
		OperatorHeader
		AccountID string `query:"account_id" maxLength:"100" doc:"Only this account's."`
	}) (*struct {
		Body struct {
			Items []gwstore.IssuedLicense `json:"items"`
		}
	}, error) {
		if err := s.operator(in.OperatorHeader); err != nil {
			return nil, err
		}
		return s.licenses(ctx, in.AccountID)
	})

	huma.Register(s.api, huma.Operation{OperationID: "admin-revoke-license", Method: http.MethodPost, Path: "/admin/licenses/{licenseId}/revoke",
		Summary: "Revoke a license", Tags: tags,
		Description: "POST /licensing/validate answers valid false, reason revoked, from then on (a deployment checking offline keeps its copy: revocation needs it to ask)."},
		func(ctx context.Context, in *struct {
			OperatorHeader
			LicenseID string `path:"licenseId" maxLength:"100"`
		}) (*struct{ Body gwstore.IssuedLicense }, error) {
			if err := s.operator(in.OperatorHeader); err != nil {
				return nil, err
			}
			if err := s.store.RevokeLicense(ctx, in.LicenseID, s.now().UTC()); err != nil {
				return nil, s.fail(ctx, err, "license not found")
			}
			l, err := s.store.GetLicense(ctx, in.LicenseID)
			if err != nil {
				return nil, s.fail(ctx, err, "license not found")
			}
			return &struct{ Body gwstore.IssuedLicense }{Body: *l}, nil
		})

	huma.Register(s.api, huma.Operation{OperationID: "admin-usage", Method: http.MethodGet, Path: "/admin/usage",
		Summary: "Usage across accounts", Tags: tags, Description: "Requests, rate-limited requests and runs started of each account's organizations, days from..to (UTC, inclusive; default the last 30 days)."},
		func(ctx context.Context, in *struct {
			OperatorHeader
			From string `query:"from" pattern:"^\\d{4}-\\d{2}-\\d{2}$"`
			To   string `query:"to" pattern:"^\\d{4}-\\d{2}-\\d{2}$"`
		}) (*struct {
			Body struct {
				From  string                 `json:"from"`
				To    string                 `json:"to"`
				Items []gwstore.AccountUsage `json:"items"`
			}
		}, error) {
			if err := s.operator(in.OperatorHeader); err != nil {
				return nil, err
			}
			from, to := in.From, in.To
			if to == "" {
				to = s.now().UTC().Format(time.DateOnly)
			}
			if from == "" {
				from = s.now().UTC().AddDate(0, 0, -29).Format(time.DateOnly)
			}
			if err := s.Flush(ctx); err != nil {
				return nil, s.fail(ctx, err, "")
			}
			items, err := s.store.UsageByAccount(ctx, from, to)
			if err != nil {
				return nil, s.fail(ctx, err, "")
			}
			out := &struct {
				Body struct {
					From  string                 `json:"from"`
					To    string                 `json:"to"`
					Items []gwstore.AccountUsage `json:"items"`
				}
			}{}
			out.Body.From, out.Body.To, out.Body.Items = from, to, items
			return out, nil
		})

	huma.Register(s.api, huma.Operation{OperationID: "list-licenses", Method: http.MethodGet, Path: "/gateway/licenses",
		Summary: "The account's on-premises licenses", Tags: []string{"Licensing"}},
		func(ctx context.Context, in *AuthHeader) (*struct {
			Body struct {
				Items []gwstore.IssuedLicense `json:"items"`
			}
		}, error) {
			a, err := s.account(ctx, *in)
			if err != nil {
				return nil, s.fail(ctx, err, "")
			}
			return s.licenses(ctx, a.ID)
		})
}

func (s *Server) licenses(ctx context.Context, accountID string) (*struct {
	Body struct {
		Items []gwstore.IssuedLicense `json:"items"`
	}
}, error) {
	ls, err := s.store.ListLicenses(ctx, accountID)
	if err != nil {
		return nil, s.fail(ctx, err, "")
	}
	out := &struct {
		Body struct {
			Items []gwstore.IssuedLicense `json:"items"`
		}
	}{}
	out.Body.Items = ls
	return out, nil
}

func (s *Server) adminAccount(ctx context.Context, id string) (*struct{ Body Account }, error) {
	a, err := s.store.GetAccount(ctx, id)
	if err != nil {
		return nil, s.fail(ctx, err, "account not found")
	}
	return &struct{ Body Account }{Body: accountOf(a)}, nil
}

// forgetAllKeys drops every cached key (an account's status or tier changed here).
func (s *Server) forgetAllKeys() {
	s.mu.Lock()
	s.keys = map[string]cachedKey{}
	s.mu.Unlock()
}
