package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strconv"
	"strings"
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
//
// Each route is a method; the token is checked once, by requireOperator, which every
// operator route has as its middleware (operatorRoute), before Huma reads the request: a
// request without the token is refused whatever its parameters or body.

var (
	errNoOperator   = newProblem(http.StatusNotFound, "admin_not_configured", "this gateway has no operator token (SVC_OPERATOR_TOKEN)").(*problem)
	errNotOperator  = newProblem(http.StatusUnauthorized, "unknown_operator_token", "send Authorization: Bearer <operator token>").(*problem)
	errNoSigningKey = newProblem(http.StatusConflict, "license_signing_not_configured", "this gateway cannot issue licenses (SVC_LICENSE_KEY)")
)

// operatorRoute is o as an operator route: tagged Operator, declaring the operator's
// bearer token, and behind requireOperator.
func (s *Server) operatorRoute(o huma.Operation) huma.Operation {
	o.Tags = []string{"Operator"}
	o.Security = byOperator
	o.Middlewares = append(o.Middlewares, s.requireOperator)
	return o
}

// requireOperator lets a request through only with the operator token: 404 when the
// deployment has none, 401 for any other credential or none.
func (s *Server) requireOperator(ctx huma.Context, next func(huma.Context)) {
	if err := s.operator(ctx.Header("Authorization")); err != nil {
		s.writeError(ctx, err)
		return
	}
	next(ctx)
}

func (s *Server) operator(authorization string) huma.StatusError {
	if s.operatorHash == "" {
		return errNoOperator
	}
	secret := bearerOf(authorization)
	if secret == "" || subtle.ConstantTimeCompare([]byte(hashOf(secret)), []byte(s.operatorHash)) != 1 {
		return errNotOperator
	}
	return nil
}

// writeError answers a request from a middleware with err, as Huma answers an error a
// handler returns (content negotiation, the API's transformers and format).
func (s *Server) writeError(ctx huma.Context, err huma.StatusError) {
	ct, nerr := s.api.Negotiate(ctx.Header("Accept"))
	if nerr != nil {
		ct = "application/json"
	}
	if f, ok := err.(huma.ContentTypeFilter); ok {
		ct = f.ContentType(ct)
	}
	ctx.SetHeader("Content-Type", ct)
	body, terr := s.api.Transform(ctx, strconv.Itoa(err.GetStatus()), err)
	if terr != nil {
		body = err
	}
	ctx.SetStatus(err.GetStatus())
	_ = s.api.Marshal(ctx.BodyWriter(), ct, body)
}

// statusError is err as an answer: err itself when it is one (every error fail returns),
// else a 500.
func statusError(err error) huma.StatusError {
	if se, ok := err.(huma.StatusError); ok {
		return se
	}
	return newProblem(http.StatusInternalServerError, "internal", "the gateway failed; the error is logged").(*problem)
}

func (s *Server) registerAdmin() {

	huma.Register(s.api, s.operatorRoute(huma.Operation{OperationID: "admin-list-accounts", Method: http.MethodGet, Path: "/admin/accounts",
		Summary: "Every account"}), s.adminListAccounts)
	huma.Register(s.api, s.operatorRoute(huma.Operation{OperationID: "admin-suspend-account", Method: http.MethodPost, Path: "/admin/accounts/{accountId}/suspend",
		Summary: "Suspend an account: its management token, keys and sessions stop (within 5 s on other gateways)"}), s.adminSuspendAccount)
	huma.Register(s.api, s.operatorRoute(huma.Operation{OperationID: "admin-resume-account", Method: http.MethodPost, Path: "/admin/accounts/{accountId}/resume",
		Summary: "Resume a suspended account"}), s.adminResumeAccount)
	huma.Register(s.api, s.operatorRoute(huma.Operation{OperationID: "admin-set-account-tier", Method: http.MethodPut, Path: "/admin/accounts/{accountId}/tier",
		Summary: "Put an account on a tier", MaxBodyBytes: 1 << 12,
		Description: "tier names a tier of PUT /admin/tiers/{tierName}, or is empty for the deployment's defaults (--rate, --burst, no quota, every feature)."}),
		s.adminSetAccountTier)
	huma.Register(s.api, s.operatorRoute(huma.Operation{OperationID: "admin-list-tiers", Method: http.MethodGet, Path: "/admin/tiers",
		Summary: "The tiers"}), s.adminListTiers)
	huma.Register(s.api, s.operatorRoute(huma.Operation{OperationID: "admin-put-tier", Method: http.MethodPut, Path: "/admin/tiers/{tierName}",
		Summary: "Create or replace a tier", MaxBodyBytes: 1 << 14,
		Description: "rate and burst are each key's token bucket; runs_per_day caps the workflow executions each organization " +
			"of the account starts a day (UTC; 0: none); features open routes: agents (/agents/...), agent_forms (POST /forms/generate). " +
			"Changes reach every gateway within 5 s."}), s.adminPutTier)
	huma.Register(s.api, s.operatorRoute(huma.Operation{OperationID: "admin-issue-license", Method: http.MethodPost, Path: "/admin/licenses",
		Summary: "Issue an on-premises license to an account", DefaultStatus: http.StatusCreated, MaxBodyBytes: 1 << 14,
		Description: "Signs the license with the deployment's key (SVC_LICENSE_KEY) and keeps it: the account sees it in GET /gateway/licenses."}),
		s.adminIssueLicense)
	huma.Register(s.api, s.operatorRoute(huma.Operation{OperationID: "admin-list-licenses", Method: http.MethodGet, Path: "/admin/licenses",
		Summary: "Issued licenses"}), s.adminListLicenses)
	huma.Register(s.api, s.operatorRoute(huma.Operation{OperationID: "admin-revoke-license", Method: http.MethodPost, Path: "/admin/licenses/{licenseId}/revoke",
		Summary:     "Revoke a license",
		Description: "POST /licensing/validate answers valid false, reason revoked, from then on (a deployment checking offline keeps its copy: revocation needs it to ask)."}),
		s.adminRevokeLicense)
	huma.Register(s.api, s.operatorRoute(huma.Operation{OperationID: "admin-usage", Method: http.MethodGet, Path: "/admin/usage",
		Summary: "Usage across accounts", Description: "Requests, rate-limited requests and runs started of each account's organizations, days from..to (UTC, inclusive; default the last 30 days)."}),
		s.adminUsage)
}

// AccountPath names an account in an operator route.
type AccountPath struct {
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

type (
	listAccountsInput struct {
		Limit  int    `query:"limit" default:"50" minimum:"1" maximum:"500"`
		Cursor string `query:"cursor"`
	}
	accountOutput     struct{ Body Account }
	accountListOutput struct{ Body runtime.List[Account] }
	setTierInput      struct {
		AccountPath
		Body struct {
			Tier string `json:"tier" maxLength:"64"`
		}
	}
	tierListOutput struct {
		Body struct {
			Items []gwstore.Tier `json:"items"`
		}
	}
	putTierInput struct {
		Name string `path:"tierName" maxLength:"64" pattern:"^[a-z0-9][a-z0-9_-]*$"`
		Body struct {
			Rate        float64  `json:"rate" exclusiveMinimum:"0" maximum:"100000"`
			Burst       int      `json:"burst" minimum:"1" maximum:"1000000"`
			RunsPerDay  int64    `json:"runs_per_day,omitempty" minimum:"0"`
			Features    []string `json:"features,omitempty" maxItems:"50"`
			Description string   `json:"description,omitempty" maxLength:"500"`
		}
	}
	tierOutput          struct{ Body gwstore.Tier }
	issueLicenseInput   struct{ Body LicenseRequest }
	issuedLicenseOutput struct{ Body gwstore.IssuedLicense }
	listLicensesInput   struct {
		AccountID string `query:"account_id" maxLength:"100" doc:"Only this account's."`
	}
	licenseListOutput struct {
		Body struct {
			Items []gwstore.IssuedLicense `json:"items"`
		}
	}
	licensePath struct {
		LicenseID string `path:"licenseId" maxLength:"100"`
	}
	usageInput struct {
		From string `query:"from" pattern:"^\\d{4}-\\d{2}-\\d{2}$"`
		To   string `query:"to" pattern:"^\\d{4}-\\d{2}-\\d{2}$"`
	}
	usageOutput struct {
		Body struct {
			From  string                 `json:"from"`
			To    string                 `json:"to"`
			Items []gwstore.AccountUsage `json:"items"`
		}
	}
)

func (s *Server) adminListAccounts(ctx context.Context, in *listAccountsInput) (*accountListOutput, error) {
	page, err := s.store.ListAccounts(ctx, svctype.ListOptions{Limit: in.Limit, Cursor: in.Cursor})
	if err != nil {
		return nil, s.fail(ctx, err, "")
	}
	items := make([]Account, 0, len(page.Items))
	for i := range page.Items {
		items = append(items, accountOf(&page.Items[i]))
	}
	return &accountListOutput{Body: runtime.List[Account]{Items: items, NextCursor: page.NextCursor}}, nil
}

func (s *Server) adminSuspendAccount(ctx context.Context, in *AccountPath) (*accountOutput, error) {
	return s.setAccountStatus(ctx, in.AccountID, gwstore.AccountSuspended)
}

func (s *Server) adminResumeAccount(ctx context.Context, in *AccountPath) (*accountOutput, error) {
	return s.setAccountStatus(ctx, in.AccountID, gwstore.AccountActive)
}

func (s *Server) setAccountStatus(ctx context.Context, accountID, status string) (*accountOutput, error) {
	if err := s.store.SetAccountStatus(ctx, accountID, status, s.now().UTC()); err != nil {
		return nil, s.fail(ctx, err, "account not found")
	}
	s.forgetAllKeys()
	return s.adminAccount(ctx, accountID)
}

func (s *Server) adminSetAccountTier(ctx context.Context, in *setTierInput) (*accountOutput, error) {
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
}

func (s *Server) adminListTiers(ctx context.Context, _ *struct{}) (*tierListOutput, error) {
	ts, err := s.store.ListTiers(ctx)
	if err != nil {
		return nil, s.fail(ctx, err, "")
	}
	out := &tierListOutput{}
	out.Body.Items = ts
	return out, nil
}

func (s *Server) adminPutTier(ctx context.Context, in *putTierInput) (*tierOutput, error) {
	t := &gwstore.Tier{Name: in.Name, Rate: in.Body.Rate, Burst: in.Body.Burst, RunsPerDay: in.Body.RunsPerDay,
		Features: in.Body.Features, Description: in.Body.Description, UpdatedAt: s.now().UTC()}
	if err := s.store.PutTier(ctx, t); err != nil {
		return nil, s.fail(ctx, err, "")
	}
	s.tiers.mu.Lock()
	delete(s.tiers.m, t.Name)
	s.tiers.mu.Unlock()
	return &tierOutput{Body: *t}, nil
}

func (s *Server) adminIssueLicense(ctx context.Context, in *issueLicenseInput) (*issuedLicenseOutput, error) {
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
		Features: in.Body.Features, NotBefore: nb, ExpiresAt: nb.AddDate(0, 0, days), IssuedAt: s.now()}
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
	return &issuedLicenseOutput{Body: *il}, nil
}

func (s *Server) adminListLicenses(ctx context.Context, in *listLicensesInput) (*licenseListOutput, error) {
	return s.licenses(ctx, in.AccountID)
}

func (s *Server) adminRevokeLicense(ctx context.Context, in *licensePath) (*issuedLicenseOutput, error) {
	if err := s.store.RevokeLicense(ctx, in.LicenseID, s.now().UTC()); err != nil {
		return nil, s.fail(ctx, err, "license not found")
	}
	l, err := s.store.GetLicense(ctx, in.LicenseID)
	if err != nil {
		return nil, s.fail(ctx, err, "license not found")
	}
	return &issuedLicenseOutput{Body: *l}, nil
}

func (s *Server) adminUsage(ctx context.Context, in *usageInput) (*usageOutput, error) {
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
	out := &usageOutput{}
	out.Body.From, out.Body.To, out.Body.Items = from, to, items
	return out, nil
}

// licenses are the licenses issued to accountID (every account's when empty).
func (s *Server) licenses(ctx context.Context, accountID string) (*licenseListOutput, error) {
	ls, err := s.store.ListLicenses(ctx, accountID)
	if err != nil {
		return nil, s.fail(ctx, err, "")
	}
	out := &licenseListOutput{}
	out.Body.Items = ls
	return out, nil
}

func (s *Server) adminAccount(ctx context.Context, id string) (*accountOutput, error) {
	a, err := s.store.GetAccount(ctx, id)
	if err != nil {
		return nil, s.fail(ctx, err, "account not found")
	}
	return &accountOutput{Body: accountOf(a)}, nil
}

// forgetAllKeys drops every cached key (an account's status or tier changed here).
func (s *Server) forgetAllKeys() {
	s.mu.Lock()
	s.keys = map[string]cachedKey{}
	s.mu.Unlock()
}
