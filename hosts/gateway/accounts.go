package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
	"github.com/svcflow/svcflow/hosts/runtime"
)

// Management routes (/gateway/...) take the account's management token, checked once by
// requireAccount, which every such route has as its middleware (accountRoute), before
// Huma reads the request; a handler reads the account with accountIn.

// accountKey is the request context's key of the authenticated account.
type accountKey struct{}

// accountRoute is o as a management route: declaring the management token and behind
// requireAccount.
func (s *Server) accountRoute(o huma.Operation) huma.Operation {
	o.Security = byManagement
	o.Middlewares = append(o.Middlewares, s.requireAccount)
	return o
}

// requireAccount lets a request through only with an active account's management token,
// and hands the account to the handler (accountIn).
func (s *Server) requireAccount(ctx huma.Context, next func(huma.Context)) {
	a, err := s.account(ctx.Context(), ctx.Header("Authorization"))
	if err != nil {
		s.writeError(ctx, statusError(s.fail(ctx.Context(), err, "")))
		return
	}
	next(huma.WithValue(ctx, accountKey{}, a))
}

// accountIn is the account requireAccount authenticated for this request.
func accountIn(ctx context.Context) *gwstore.Account {
	return ctx.Value(accountKey{}).(*gwstore.Account)
}

// account authenticates a management token (an Authorization header's value).
func (s *Server) account(ctx context.Context, authorization string) (*gwstore.Account, error) {
	secret := bearerOf(authorization)
	switch {
	case secret == "":
		return nil, errNoCredential
	case strings.HasPrefix(secret, PrefixRuntime), strings.HasPrefix(secret, PrefixPublishable):
		return nil, errKeyOnMgmtRoute
	}
	a, err := s.store.AccountByToken(ctx, hashOf(secret))
	if errors.Is(err, gwstore.ErrNotFound) {
		return nil, errUnknownToken
	}
	if err != nil {
		return nil, err
	}
	if a.Status != gwstore.AccountActive {
		return nil, errSuspended
	}
	return a, nil
}

// fail turns an error into the route's answer.
func (s *Server) fail(ctx context.Context, err error, notFound string) error {
	var p *problem
	var he huma.HeadersError
	switch {
	case errors.As(err, &he):
		return err
	case errors.As(err, &p):
		return p
	case errors.Is(err, gwstore.ErrNotFound):
		return newProblem(http.StatusNotFound, "not_found", notFound)
	case errors.Is(err, gwstore.ErrConflict):
		return newProblem(http.StatusConflict, "conflict", "it exists already")
	case errors.Is(err, gwstore.ErrInvalidCursor):
		return newProblem(http.StatusBadRequest, "invalid_cursor", "the cursor was not issued by this listing")
	}
	s.log.ErrorContext(ctx, "gateway request failed", "err", err)
	return newProblem(http.StatusInternalServerError, "internal", "the gateway failed; the error is logged")
}

func invalid(pointer, msg string) error {
	// The detail names the field and why as well as errors does: a client that shows only
	// the detail (a sign-in box) says more than "validation failed".
	p := newProblem(http.StatusUnprocessableEntity, "validation_failed", "validation failed: "+strings.TrimPrefix(pointer, "/")+": "+msg).(*problem)
	p.Errors = []*runtime.ProblemDetail{{Location: "body" + strings.ReplaceAll(pointer, "/", "."), Pointer: pointer, Message: msg}}
	return p
}

var orgIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// Account is an account as the management routes show it (never its token).
type Account struct {
	ID          string        `json:"id"`
	Email       string        `json:"email"`
	Name        string        `json:"name"`
	Status      AccountStatus `json:"status"`
	Tier        string        `json:"tier,omitempty" doc:"The account's tier (operator administration); empty: the deployment's defaults."`
	TokenPrefix string        `json:"token_prefix" doc:"The management token's beginning, to tell tokens apart."`
	CreatedAt   time.Time     `json:"created_at"`
}

func accountOf(a *gwstore.Account) Account {
	return Account{ID: a.ID, Email: a.Email, Name: a.Name, Status: AccountStatus(a.Status), Tier: a.Tier, TokenPrefix: a.TokenPrefix, CreatedAt: a.CreatedAt}
}

// AccountStatus is an account's status: active, or suspended by the operator.
type AccountStatus string

// Schema is the $ref to the set's one declaration.
func (AccountStatus) Schema(r huma.Registry) *huma.Schema {
	return runtime.NamedEnum(r, "AccountStatus", "An account's status: active, or suspended by the operator (its keys and token are refused).",
		gwstore.AccountActive, gwstore.AccountSuspended)
}

// Key is a key as the management routes show it; Secret only in the answer that made it.
type Key struct {
	gwstore.APIKey
	Secret string `json:"secret,omitempty" doc:"The key itself: shown once, in this answer only."`
}

func (s *Server) registerAccounts() {
	o := publicOp(huma.Operation{OperationID: "signup", Method: http.MethodPost, Path: "/gateway/signup", Summary: "Create an account",
		Tags: []string{"Accounts"}, DefaultStatus: http.StatusCreated, MaxBodyBytes: 1 << 16,
		Description: "Self-serve signup: the account and its management token (svc_mgmt_...), shown once."},
		http.StatusConflict, http.StatusUnprocessableEntity)
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		Body struct {
			Email string `json:"email" maxLength:"254"`
			Name  string `json:"name" maxLength:"200"`
		}
	}) (*struct {
		Body struct {
			Account         Account `json:"account"`
			ManagementToken string  `json:"management_token" doc:"Shown once."`
		}
	}, error) {
		addr, err := mail.ParseAddress(in.Body.Email)
		if err != nil || addr.Address != strings.TrimSpace(in.Body.Email) {
			return nil, invalid("/email", "an email address")
		}
		if strings.TrimSpace(in.Body.Name) == "" {
			return nil, invalid("/name", "required")
		}
		secret, shown, hash, err := newSecret(PrefixManagement)
		if err != nil {
			return nil, err
		}
		now := s.now().UTC()
		a := &gwstore.Account{ID: "acct_" + uuid.NewString(), Email: strings.ToLower(addr.Address), Name: strings.TrimSpace(in.Body.Name),
			Status: gwstore.AccountActive, TokenPrefix: shown, TokenHash: hash, CreatedAt: now, UpdatedAt: now}
		if err := s.store.CreateAccount(ctx, a); err != nil {
			if errors.Is(err, gwstore.ErrConflict) {
				return nil, newProblem(http.StatusConflict, "conflict", "an account with this email exists")
			}
			return nil, s.fail(ctx, err, "")
		}
		out := &struct {
			Body struct {
				Account         Account `json:"account"`
				ManagementToken string  `json:"management_token" doc:"Shown once."`
			}
		}{}
		out.Body.Account, out.Body.ManagementToken = accountOf(a), secret
		return out, nil
	})

	o = huma.Operation{OperationID: "get-account", Method: http.MethodGet, Path: "/gateway/account", Summary: "The account", Tags: []string{"Accounts"}}
	huma.Register(s.api, s.accountRoute(managementOp(o)), func(ctx context.Context, _ *struct{}) (*struct{ Body Account }, error) {
		a := accountIn(ctx)
		return &struct{ Body Account }{Body: accountOf(a)}, nil
	})

	o = huma.Operation{OperationID: "regenerate-token", Method: http.MethodPost, Path: "/gateway/account/regenerate-token",
		Summary: "Replace the management token", Tags: []string{"Accounts"},
		Description: "The new token is shown once; the old one stops working at once."}
	huma.Register(s.api, s.accountRoute(managementOp(o)), func(ctx context.Context, _ *struct{}) (*struct {
		Body struct {
			ManagementToken string `json:"management_token"`
		}
	}, error) {
		a := accountIn(ctx)
		secret, shown, hash, err := newSecret(PrefixManagement)
		if err != nil {
			return nil, err
		}
		if err := s.store.SetAccountToken(ctx, a.ID, shown, hash, s.now().UTC()); err != nil {
			return nil, s.fail(ctx, err, "")
		}
		out := &struct {
			Body struct {
				ManagementToken string `json:"management_token"`
			}
		}{}
		out.Body.ManagementToken = secret
		return out, nil
	})

	s.registerOrgs()
	s.registerKeys()
}

type orgBody struct {
	ID   string `json:"id,omitempty" maxLength:"128" doc:"The organization id (X-Org-Id upstream); generated when absent."`
	Name string `json:"name" maxLength:"200"`
}

func (s *Server) registerOrgs() {
	o := huma.Operation{OperationID: "list-gateway-orgs", Method: http.MethodGet, Path: "/gateway/orgs", Summary: "The account's organizations", Tags: []string{"Organizations"}}
	huma.Register(s.api, s.accountRoute(managementOp(o, http.StatusBadRequest, http.StatusUnprocessableEntity)), func(ctx context.Context, in *struct {
		Limit  int    `query:"limit" default:"50" minimum:"1" maximum:"500"`
		Cursor string `query:"cursor"`
	}) (*struct {
		Body runtime.List[gwstore.GatewayOrg]
	}, error) {
		a := accountIn(ctx)
		page, err := s.store.ListGatewayOrgs(ctx, a.ID, svctype.ListOptions{Limit: in.Limit, Cursor: in.Cursor})
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		items := page.Items
		if items == nil {
			items = []gwstore.GatewayOrg{}
		}
		return &struct {
			Body runtime.List[gwstore.GatewayOrg]
		}{Body: runtime.List[gwstore.GatewayOrg]{Items: items, NextCursor: page.NextCursor}}, nil
	})

	o = huma.Operation{OperationID: "create-gateway-org", Method: http.MethodPost, Path: "/gateway/orgs", Summary: "Create an organization",
		Tags: []string{"Organizations"}, DefaultStatus: http.StatusCreated, MaxBodyBytes: 1 << 16,
		Description: "Each customer of an embedding platform is one organization. Its id is global: 409 when any account has it."}
	huma.Register(s.api, s.accountRoute(managementOp(o, http.StatusConflict, http.StatusUnprocessableEntity)), func(ctx context.Context, in *struct {
		Body orgBody
	}) (*struct{ Body *gwstore.GatewayOrg }, error) {
		a := accountIn(ctx)
		id := in.Body.ID
		if id == "" {
			id = "org_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		}
		if !orgIDPattern.MatchString(id) {
			return nil, invalid("/id", "1-128 letters, digits and _ . : -")
		}
		if strings.TrimSpace(in.Body.Name) == "" {
			return nil, invalid("/name", "required")
		}
		org := &gwstore.GatewayOrg{ID: id, AccountID: a.ID, Name: strings.TrimSpace(in.Body.Name), CreatedAt: s.now().UTC()}
		if err := s.store.CreateGatewayOrg(ctx, org); err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return &struct{ Body *gwstore.GatewayOrg }{Body: org}, nil
	})

	o = huma.Operation{OperationID: "update-gateway-org", Method: http.MethodPut, Path: "/gateway/orgs/{orgId}", Summary: "Rename an organization",
		Tags: []string{"Organizations"}, MaxBodyBytes: 1 << 16}
	huma.Register(s.api, s.accountRoute(managementOp(o, http.StatusNotFound, http.StatusUnprocessableEntity)), func(ctx context.Context, in *struct {
		OrgID string `path:"orgId"`
		Body  struct {
			Name string `json:"name" maxLength:"200"`
		}
	}) (*struct{ Body *gwstore.GatewayOrg }, error) {
		a := accountIn(ctx)
		if strings.TrimSpace(in.Body.Name) == "" {
			return nil, invalid("/name", "required")
		}
		org := &gwstore.GatewayOrg{ID: in.OrgID, AccountID: a.ID, Name: strings.TrimSpace(in.Body.Name), UpdatedAt: s.now().UTC()}
		if err := s.store.UpdateGatewayOrg(ctx, org); err != nil {
			return nil, s.fail(ctx, err, "organization not found")
		}
		got, err := s.store.GetGatewayOrg(ctx, a.ID, in.OrgID)
		if err != nil {
			return nil, s.fail(ctx, err, "organization not found")
		}
		return &struct{ Body *gwstore.GatewayOrg }{Body: got}, nil
	})
}

// OrgPath names one of the account's organizations.
type OrgPath struct {
	OrgID string `path:"orgId"`
}

// ownOrg is the request's account when the organization is one of its own.
func (s *Server) ownOrg(ctx context.Context, in OrgPath) (*gwstore.Account, error) {
	a := accountIn(ctx)
	if _, err := s.store.GetGatewayOrg(ctx, a.ID, in.OrgID); err != nil {
		return nil, err
	}
	return a, nil
}

func (s *Server) registerKeys() {
	own := s.ownOrg
	mint := func(ctx context.Context, a *gwstore.Account, orgID, kind string) (*Key, error) {
		prefix := PrefixRuntime
		if kind == gwstore.KeyPublishable {
			prefix = PrefixPublishable
		}
		secret, shown, hash, err := newSecret(prefix)
		if err != nil {
			return nil, err
		}
		k := &gwstore.APIKey{ID: "key_" + strings.ReplaceAll(uuid.NewString(), "-", ""), AccountID: a.ID, OrgID: orgID, Kind: kind,
			Prefix: shown, Hash: hash, CreatedAt: s.now().UTC()}
		if err := s.store.CreateAPIKey(ctx, k); err != nil {
			return nil, err
		}
		return &Key{APIKey: *k, Secret: secret}, nil
	}

	o := huma.Operation{OperationID: "list-keys", Method: http.MethodGet, Path: "/gateway/orgs/{orgId}/keys", Summary: "An organization's keys", Tags: []string{"Keys"}}
	huma.Register(s.api, s.accountRoute(managementOp(o, http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity)), func(ctx context.Context, in *struct {
		OrgPath
		Limit  int    `query:"limit" default:"50" minimum:"1" maximum:"500"`
		Cursor string `query:"cursor"`
	}) (*struct{ Body runtime.List[Key] }, error) {
		a, err := own(ctx, in.OrgPath)
		if err != nil {
			return nil, s.fail(ctx, err, "organization not found")
		}
		page, err := s.store.ListAPIKeys(ctx, a.ID, in.OrgID, svctype.ListOptions{Limit: in.Limit, Cursor: in.Cursor})
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		items := make([]Key, 0, len(page.Items))
		for _, k := range page.Items {
			items = append(items, Key{APIKey: k})
		}
		return &struct{ Body runtime.List[Key] }{Body: runtime.List[Key]{Items: items, NextCursor: page.NextCursor}}, nil
	})

	o = huma.Operation{OperationID: "create-key", Method: http.MethodPost, Path: "/gateway/orgs/{orgId}/keys", Summary: "Create a key",
		Tags: []string{"Keys"}, DefaultStatus: http.StatusCreated, MaxBodyBytes: 1 << 16,
		Description: "kind runtime (svc_live_..., server-side calls to the runtime) or publishable (svc_pk_..., the browser SDK). The key is shown once."}
	huma.Register(s.api, s.accountRoute(managementOp(o, http.StatusNotFound, http.StatusUnprocessableEntity)), func(ctx context.Context, in *struct {
		OrgPath
		Body struct {
			Kind string `json:"kind" enum:"runtime,publishable"`
		}
	}) (*struct{ Body *Key }, error) {
		a, err := own(ctx, in.OrgPath)
		if err != nil {
			return nil, s.fail(ctx, err, "organization not found")
		}
		k, err := mint(ctx, a, in.OrgID, in.Body.Kind)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return &struct{ Body *Key }{Body: k}, nil
	})

	o = huma.Operation{OperationID: "delete-key", Method: http.MethodDelete, Path: "/gateway/orgs/{orgId}/keys/{keyId}", Summary: "Revoke a key",
		Tags: []string{"Keys"}, DefaultStatus: http.StatusNoContent, Description: "The key stops working at once (401 key_revoked)."}
	huma.Register(s.api, s.accountRoute(managementOp(o, http.StatusNotFound)), func(ctx context.Context, in *struct {
		OrgPath
		KeyID string `path:"keyId"`
	}) (*struct{}, error) {
		a, err := own(ctx, in.OrgPath)
		if err != nil {
			return nil, s.fail(ctx, err, "organization not found")
		}
		if err := s.store.EndAPIKey(ctx, a.ID, in.OrgID, in.KeyID, s.now().UTC(), true); err != nil {
			return nil, s.fail(ctx, err, "key not found")
		}
		s.forgetKeys(in.OrgID)
		return nil, nil
	})

	o = huma.Operation{OperationID: "rotate-key", Method: http.MethodPost, Path: "/gateway/orgs/{orgId}/keys/{keyId}/rotate", Summary: "Rotate a key",
		Tags: []string{"Keys"}, DefaultStatus: http.StatusCreated, MaxBodyBytes: 1 << 16,
		Description: "A new key of the same kind, shown once; the old one keeps working for grace_seconds (default 0: it stops at once)."}
	huma.Register(s.api, s.accountRoute(managementOp(o, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity)), func(ctx context.Context, in *struct {
		OrgPath
		KeyID string `path:"keyId"`
		Body  struct {
			GraceSeconds int `json:"grace_seconds,omitempty" minimum:"0" maximum:"2592000" doc:"How long the old key keeps working (at most 30 days)."`
		}
	}) (*struct{ Body *Key }, error) {
		a, err := own(ctx, in.OrgPath)
		if err != nil {
			return nil, s.fail(ctx, err, "organization not found")
		}
		old, err := s.store.GetAPIKey(ctx, a.ID, in.OrgID, in.KeyID)
		if err != nil {
			return nil, s.fail(ctx, err, "key not found")
		}
		if old.RevokedAt != nil || (old.ExpiresAt != nil && !s.now().Before(*old.ExpiresAt)) {
			return nil, newProblem(http.StatusConflict, "conflict", "the key no longer works: create a new one")
		}
		k, err := mint(ctx, a, in.OrgID, old.Kind)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		until := s.now().UTC().Add(time.Duration(in.Body.GraceSeconds) * time.Second)
		if err := s.store.EndAPIKey(ctx, a.ID, in.OrgID, old.ID, until, false); err != nil {
			return nil, s.fail(ctx, err, "key not found")
		}
		s.forgetKeys(in.OrgID)
		return &struct{ Body *Key }{Body: k}, nil
	})
}
