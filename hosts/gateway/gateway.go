// Package gateway is svcflow's public face: integrators' accounts, the organizations they
// own and the keys to them (management routes under /gateway/), and the proxy that forwards
// any runtime route called with a runtime key to the runtime, with X-Org-Id set from the key
// (a client's own X-Org-Id is always removed first) and a rate limit per key. Keys and
// tokens are shown once and stored as a prefix and a SHA-256 hash; nothing in a log or an
// error carries one.
package gateway

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
	"github.com/svcflow/svcflow/hosts/identity"
	"github.com/svcflow/svcflow/hosts/runtime"
)

// Credential prefixes (DESIGN.md, "keys").
const (
	PrefixRuntime     = "svc_live_"
	PrefixPublishable = "svc_pk_"
	PrefixManagement  = "svc_mgmt_"
)

// Default rate limit of a key: a token bucket refilled at DefaultRate requests a second,
// holding DefaultBurst.
const (
	DefaultRate  = 50
	DefaultBurst = 100
	// keyCacheTTL is how long a process uses a key it read: a key revoked or rotated through
	// this process stops at once, through another within this.
	keyCacheTTL = 5 * time.Second
)

// Options configure a gateway.
type Options struct {
	Store Store
	// Runtime is where runtime routes go: the runtime's base URL (another process) ...
	RuntimeURL *url.URL
	// ... or its handler, in the same process (svcflow serve).
	Runtime http.Handler
	Logger  *slog.Logger
	// Rate and Burst are each key's token bucket (DefaultRate, DefaultBurst when 0).
	Rate  float64
	Burst int
	// Shared keeps each key's bucket in the store, so that the limit holds across every
	// gateway process on one database (PostgreSQL); each process leases tokens from it a
	// few at a time. Off: each process has its own bucket.
	Shared bool
	// Now is the clock (time.Now when nil).
	Now     func() time.Time
	Version string
	// LicenseKey verifies on-premises licenses (/licensing/); nil: licensing is off.
	LicenseKey ed25519.PublicKey
	// LicensePreviousKeys verify licenses signed before LicenseKey (a rotation): a license's
	// kid picks its key.
	LicensePreviousKeys []ed25519.PublicKey
	// LicenseSigningKey issues licenses (POST /admin/licenses); nil: the operator cannot issue.
	LicenseSigningKey ed25519.PrivateKey
	// IdentityKey signs the identity of a signed-in person for the runtime (hosts/identity);
	// the runtime must have the same key. Without it no signed-in person reaches the runtime.
	IdentityKey []byte
	// Mailer sends sign-in codes (a LogMailer that never shows a code when nil).
	Mailer Mailer
	// SessionTTL is how long an SDK session lasts (DefaultSessionTTL when 0).
	SessionTTL time.Duration
	// OperatorToken opens /admin/ (the platform operator); empty: no operator routes.
	OperatorToken string
	// Meter records the gateway's metrics (Metrics lists them); nil records nothing.
	Meter svctype.Meter
	// Limiters bounds the rate-limit buckets this process keeps (DefaultLimiters when 0):
	// past it, the bucket used least recently is dropped first.
	Limiters int
}

// Bounds of the in-memory rate limiting.
const (
	// DefaultLimiters is how many buckets (a key's, a visitor's for a form, a sign-in
	// address's) a process keeps: a bucket dropped for room was idle longer than every
	// bucket kept, and a bucket comes back full.
	DefaultLimiters = 100_000
	// shownForms is how many public form ids the process remembers the runtime showing,
	// and shownFormTTL for how long, after which the next request asks again.
	shownForms   = 20_000
	shownFormTTL = 10 * time.Minute
)

// MetricRateLimited counts requests the gateway answered 429: a key's rate, a tier's
// quota, a visitor's form limit, an SDK sign-in limit.
var MetricRateLimited = &svctype.MetricDesc{Name: "svcflow_gateway_rate_limited_total", Kind: svctype.Counter,
	Help: "Requests the gateway answered 429 (a key's rate limit, a tier's quota, a form visitor's or an SDK sign-in limit)."}

// Metrics lists the gateway's metric declarations.
func Metrics() []*svctype.MetricDesc { return []*svctype.MetricDesc{MetricRateLimited} }

// Server is the gateway's HTTP server.
type Server struct {
	store  Store
	log    *slog.Logger
	meter  svctype.Meter
	now    func() time.Time
	proxy  http.Handler
	router chi.Router
	api    huma.API
	rate   rate.Limit
	burst  int
	shared bool
	leased map[string]float64 // Shared: tokens taken from the store, not spent yet, by key

	mu       sync.Mutex
	keys     map[string]cachedKey // by hash
	limiters *lru.Cache[string, *rate.Limiter]
	// forms are the public form ids the runtime showed (GET answered 200) and when: only
	// those get a visitor bucket of their own (allowVisitor).
	forms *lru.Cache[string, time.Time]

	umu   sync.Mutex
	usage map[usageKey]*gwstore.Usage

	identity     *identity.Keyring // nil: no identity key
	identityErr  error             // the identity key is not one (too short): minting fails
	mailer       Mailer
	mails        sync.WaitGroup // codes being mailed
	sessionTTL   time.Duration
	operatorHash string
	signingKey   ed25519.PrivateKey
	tiers        tierCache
	sdk          sdkAsset
}

type cachedKey struct {
	key  *gwstore.APIKey
	read time.Time
}

// New builds the gateway.
func New(o Options) *Server {
	s := &Server{store: o.Store, log: o.Logger, now: o.Now, rate: rate.Limit(o.Rate), burst: o.Burst, shared: o.Shared, leased: map[string]float64{},
		keys: map[string]cachedKey{}, usage: map[usageKey]*gwstore.Usage{}}
	// golang-lru's Cache: a map bounded by dropping the least recently used entry, behind
	// its own lock (its expirable variant ages entries on the wall clock, which tests cannot
	// move, from a goroutine that never ends; an idle bucket needs no expiry, it refills).
	s.limiters, _ = lru.New[string, *rate.Limiter](cmp.Or(max(o.Limiters, 0), DefaultLimiters))
	s.forms, _ = lru.New[string, time.Time](shownForms)
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.meter = o.Meter; s.meter == nil {
		s.meter = svctype.NopMeter{}
	}
	s.mailer, s.sessionTTL, s.signingKey = o.Mailer, o.SessionTTL, o.LicenseSigningKey
	if len(o.IdentityKey) > 0 {
		s.identity, s.identityErr = identity.NewKeyring(o.IdentityKey)
	}
	s.sdk = loadSDK()
	if s.mailer == nil {
		s.mailer = LogMailer{Log: s.log}
	}
	if s.sessionTTL <= 0 {
		s.sessionTTL = DefaultSessionTTL
	}
	if o.OperatorToken != "" {
		s.operatorHash = hashOf(o.OperatorToken)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.rate <= 0 {
		s.rate = DefaultRate
	}
	if s.burst <= 0 {
		s.burst = DefaultBurst
	}
	switch {
	case o.Runtime != nil:
		s.proxy = o.Runtime
	case o.RuntimeURL != nil:
		rp := httputil.NewSingleHostReverseProxy(o.RuntimeURL)
		rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.WarnContext(r.Context(), "runtime unreachable", "err", err)
			writeProblem(w, http.StatusBadGateway, "runtime_unreachable", "the runtime did not answer")
		}
		s.proxy = rp
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if browserRoute(req.URL.Path) {
				// The SDK runs on the embedding site's pages: any origin may call the SDK and
				// public form routes, with a bearer credential, never with cookies.
				h := w.Header()
				h.Set("Access-Control-Allow-Origin", "*")
				h.Set("Access-Control-Expose-Headers", "Retry-After")
				if req.Method == http.MethodOptions && req.Header.Get("Access-Control-Request-Method") != "" {
					h.Set("Access-Control-Allow-Methods", "GET, POST")
					h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
					h.Set("Access-Control-Max-Age", "600")
					w.WriteHeader(http.StatusNoContent)
					return
				}
			}
			next.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), requestKey{}, req)))
		})
	})
	cfg := huma.DefaultConfig("svcflow gateway", o.Version)
	cfg.CreateHooks = nil
	cfg.Formats = runtime.JSONFormats()            // a body that is not UTF-8: 400 invalid_utf8, as on the runtime
	cfg.Components.Schemas = runtime.NewRegistry() // the contract's names and status sets, as the runtime's
	cfg.Info.Description = "Accounts, organizations and keys (management token), and the proxy of every runtime route (runtime key)."
	s.api = humachi.New(r, cfg)
	s.api.OpenAPI().Components.SecuritySchemes = securitySchemes()
	s.router = r
	s.registerAccounts()
	s.registerUsage()
	s.registerLicensing(o.LicenseKey, o.LicensePreviousKeys)
	s.registerHealth(o)
	runtime.RegisterProbes(s.api, "gateway-", s.log, s.ready)
	runtime.RegisterDefinitionSchema(s.api, "gateway-")
	for _, probe := range []string{"/healthz", "/readyz", runtime.DefinitionSchemaPath} {
		s.api.OpenAPI().Paths[probe].Get.Security = byNobody
	}
	s.registerSDKAuth()
	s.registerSDKTasks()
	s.registerPeople()
	s.registerAdmin()
	s.registerAccountLicenses()
	s.registerWeb()
	s.registerConsole()
	s.registerFront()
	declareAnswers(s.api.OpenAPI())
	// A task's form and a form pause's (the SDK relays the runtime's) are stored form_schema_v1
	// documents, declared as the runtime's answers declare theirs.
	runtime.TypeFormDocuments(s.api.OpenAPI(), "Task", "FormPause")
	r.NotFound(s.forward)
	r.MethodNotAllowed(s.forward)
	return s
}

// browserRoute reports whether a path is one the browser SDK calls from other origins.
func browserRoute(path string) bool {
	return strings.HasPrefix(path, "/sdk/") || strings.HasPrefix(path, "/forms/public/")
}

// Handler is the gateway's http.Handler.
func (s *Server) Handler() http.Handler {
	if _, nop := s.meter.(svctype.NopMeter); nop {
		return s.router
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusRecorder{ResponseWriter: w}
		s.router.ServeHTTP(sw, r)
		if sw.status == http.StatusTooManyRequests {
			s.meter.Record(MetricRateLimited, 1)
		}
	})
}

// API is the Huma API of the management routes.
func (s *Server) API() huma.API { return s.api }

// newSecret returns a new credential of prefix, the prefix it is shown by, and its hash.
func newSecret(prefix string) (secret, shown, hash string, err error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", "", "", err
	}
	secret = prefix + hex.EncodeToString(b)
	return secret, secret[:len(prefix)+6], hashOf(secret), nil
}

func hashOf(secret string) string {
	sum := sha256.Sum256([]byte("svcflow credential\x00" + secret))
	return hex.EncodeToString(sum[:])
}

// bearer returns the request's bearer credential ("" without one).
func bearer(r *http.Request) string { return bearerOf(r.Header.Get("Authorization")) }

// bearerOf reads the credential of an Authorization header value ("" without one).
func bearerOf(v string) string {
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return ""
}

// problem is a gateway error answer (RFC 9457, with a code), as the runtime's.
type problem = runtime.Problem

func writeProblem(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="svcflow"`)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(&problem{Title: http.StatusText(status), Status: status, Code: code, Detail: detail})
}

func newProblem(status int, code, detail string) error {
	return &problem{Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
}

// Errors of credentials, each its own code.
var (
	errNoCredential = newProblem(http.StatusUnauthorized, "unauthorized",
		"send Authorization: Bearer <runtime key> (runtime routes) or <management token> (/gateway/ routes)")
	errUnknownKey     = newProblem(http.StatusUnauthorized, "unknown_key", "the key is not known")
	errRevokedKey     = newProblem(http.StatusUnauthorized, "key_revoked", "the key was revoked")
	errExpiredKey     = newProblem(http.StatusUnauthorized, "key_expired", "the key was rotated and its grace period is over: use its successor")
	errUnknownToken   = newProblem(http.StatusUnauthorized, "unknown_token", "the management token is not known (it may have been regenerated)")
	errSuspended      = newProblem(http.StatusForbidden, "account_suspended", "the account is suspended")
	errPublishable    = newProblem(http.StatusForbidden, "publishable_key", "a publishable key opens the SDK and public routes only: use a runtime key on runtime routes")
	errMgmtOnRuntime  = newProblem(http.StatusForbidden, "management_token_on_runtime_route", "a management token manages the account: use a runtime key on runtime routes")
	errKeyOnMgmtRoute = newProblem(http.StatusForbidden, "key_on_management_route", "an organization's key cannot manage the account: use the management token")
)

// runtimeKey authenticates a runtime key: the organization it opens.
func (s *Server) runtimeKey(ctx context.Context, secret string) (*gwstore.APIKey, error) {
	switch {
	case secret == "":
		return nil, errNoCredential
	case strings.HasPrefix(secret, PrefixManagement):
		return nil, errMgmtOnRuntime
	case strings.HasPrefix(secret, PrefixPublishable):
		if _, err := s.lookupKey(ctx, secret); err != nil {
			return nil, err
		}
		return nil, errPublishable
	}
	return s.lookupKey(ctx, secret)
}

// lookupKey finds a key by its secret (cached for keyCacheTTL) and checks it is current.
func (s *Server) lookupKey(ctx context.Context, secret string) (*gwstore.APIKey, error) {
	h := hashOf(secret)
	now := s.now()
	s.mu.Lock()
	c, ok := s.keys[h]
	s.mu.Unlock()
	if !ok || now.Sub(c.read) >= keyCacheTTL {
		k, err := s.store.APIKeyByHash(ctx, h)
		if errors.Is(err, gwstore.ErrNotFound) {
			return nil, errUnknownKey
		}
		if err != nil {
			return nil, err
		}
		c = cachedKey{key: k, read: now}
		s.mu.Lock()
		if len(s.keys) > 10_000 {
			s.keys = map[string]cachedKey{}
		}
		s.keys[h] = c
		s.mu.Unlock()
	}
	switch k := c.key; {
	case k.RevokedAt != nil && !now.Before(*k.RevokedAt):
		return nil, errRevokedKey
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return nil, errExpiredKey
	case k.AccountStatus == gwstore.AccountSuspended:
		return nil, errSuspended
	}
	return c.key, nil
}

// forgetKeys drops the cached keys of an organization (after a revocation or rotation here).
func (s *Server) forgetKeys(orgID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for h, c := range s.keys {
		if c.key.OrgID == orgID {
			delete(s.keys, h)
		}
	}
}

// allow takes a token from the key's bucket (refilled at limit a second, holding burst), or
// says how long until there is one.
func (s *Server) allow(ctx context.Context, keyID string, limit rate.Limit, burst int) (bool, time.Duration, error) {
	if s.shared {
		return s.allowShared(ctx, keyID, limit, burst)
	}
	ok, wait := s.allowLocalKey(keyID, limit, burst)
	return ok, wait, nil
}

// allowShared spends a token leased from the key's bucket in the store, leasing a tenth of
// the burst (at least one) when none is left: the store hands out no more than the bucket
// holds, so the limit holds across processes; a process's leftover lease is at most a
// tenth of the burst.
func (s *Server) allowShared(ctx context.Context, keyID string, limit rate.Limit, burst int) (bool, time.Duration, error) {
	s.mu.Lock()
	if s.leased[keyID] >= 1 {
		s.leased[keyID]--
		s.mu.Unlock()
		return true, 0, nil
	}
	s.mu.Unlock()
	// The lease is a transaction: no lock of this process is held meanwhile.
	chunk := max(1, float64(burst)/10)
	got, err := s.store.TakeTokens(ctx, keyID, chunk, float64(limit), float64(burst), s.now())
	if err != nil {
		return false, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.leased) > 100_000 {
		s.leased = map[string]float64{}
	}
	s.leased[keyID] += got
	if s.leased[keyID] >= 1 {
		s.leased[keyID]--
		return true, 0, nil
	}
	return false, time.Duration((1 - s.leased[keyID]) / float64(limit) * float64(time.Second)), nil
}

// allowLocalKey takes a token from the in-memory bucket of key (made with r and burst).
func (s *Server) allowLocalKey(keyID string, limit rate.Limit, burst int) (bool, time.Duration) {
	s.mu.Lock()
	l, ok := s.limiters.Get(keyID)
	if !ok {
		l = rate.NewLimiter(limit, burst)
		s.limiters.Add(keyID, l)
	} else if l.Limit() != limit || l.Burst() != burst {
		// The key's tier changed.
		l.SetLimitAt(s.now(), limit)
		l.SetBurstAt(s.now(), burst)
	}
	s.mu.Unlock()
	r := l.ReserveN(s.now(), 1)
	if d := r.DelayFrom(s.now()); d > 0 {
		r.CancelAt(s.now())
		return false, d
	}
	return true, 0
}

// Limits of the public form routes, per visitor address and form (spec section 8).
const (
	PublicReads   = 60
	PublicSubmits = 10
)

// allowVisitor takes a token from the visitor's bucket for the form: reads, submits and
// sign-ins counted apart, a minute's worth each. A form id the runtime has not shown (a
// form that may not exist: the id comes from the URL) has no bucket of its own: every such
// id a visitor sends shares one, so made-up ids neither grow the table nor get a fresh
// allowance each.
func (s *Server) allowVisitor(r *http.Request, formID, kind string) (bool, time.Duration) {
	n := PublicReads
	if kind != "read" {
		n = PublicSubmits
	}
	key := "visitor\x00" + visitorOf(r) + "\x00" + kind
	if s.formKnown(formID) {
		key += "\x00" + formID
	}
	return s.allowLocalKey(key, rate.Limit(float64(n)/60), n)
}

// formShown records that the runtime showed the public form formID to r, a request of kind
// counted by allowVisitor: from now on the form's visitors count in buckets of its own, and
// r is counted in its visitor's at once (it was counted before as a request to an unknown id).
func (s *Server) formShown(r *http.Request, formID, kind string) {
	known := s.formKnown(formID)
	s.forms.Add(formID, s.now())
	if !known {
		s.allowVisitor(r, formID, kind)
	}
}

// formKnown reports whether the runtime showed formID within shownFormTTL.
func (s *Server) formKnown(formID string) bool {
	at, ok := s.forms.Get(formID)
	return ok && s.now().Sub(at) < shownFormTTL
}

// visitorOf is who a public request comes from: its address, an IPv6 address by its /64
// (what one subscriber is given), so that one visitor cannot be many.
func visitorOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if ip = ip.Unmap(); ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().String()
	}
	return ip.String()
}

// forward proxies a runtime route: the key's organization as X-Org-Id, the client's own
// removed first, always.
func (s *Server) forward(w http.ResponseWriter, r *http.Request) {
	r.Header.Del("X-Org-Id")
	r.Header.Del(identity.Header) // only this gateway vouches for a person
	if strings.HasPrefix(r.URL.Path, "/gateway/") {
		writeProblem(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
		return
	}
	if s.proxy == nil {
		writeProblem(w, http.StatusBadGateway, "runtime_unreachable", "this gateway has no runtime")
		return
	}
	if strings.HasPrefix(r.URL.Path, "/forms/public/") {
		// Public forms need no key: the form id names its organization. Each visitor may
		// read a form PublicReads times and submit it PublicSubmits times a minute.
		kind := "read"
		if r.Method == http.MethodPost {
			kind = "submit"
		}
		formID, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/forms/public/"), "/")
		if ok, wait := s.allowVisitor(r, formID, kind); !ok {
			secs := max(1, int(math.Ceil(wait.Seconds())))
			w.Header().Set("Retry-After", fmt.Sprint(secs))
			writeProblem(w, http.StatusTooManyRequests, "rate_limited", fmt.Sprintf("too many requests for this form from this address: retry in %d s", secs))
			return
		}
		// A signed-in person (a session token) is vouched for: a form with requireAuth
		// takes the submission and records who submitted.
		if secret := bearer(r); strings.HasPrefix(secret, PrefixSession) {
			c, err := s.session(r.Context(), secret)
			if err == nil && c.Session.FormID != "" && c.Session.FormID != formID {
				err = errSessionOtherForm
			}
			if err != nil {
				s.writeErr(w, r, err)
				return
			}
			tok, err := s.mint(c.OrgID, c.Email)
			if err != nil {
				s.writeErr(w, r, err)
				return
			}
			if tok != "" {
				r.Header.Set(identity.Header, tok)
			}
		}
		r.Header.Del("Authorization")
		rec := &statusRecorder{ResponseWriter: w}
		s.proxy.ServeHTTP(rec, r)
		shown := rec.status == http.StatusOK && r.Method == http.MethodGet && r.URL.Path == "/forms/public/"+formID
		taken := kind == "submit" && rec.status >= 200 && rec.status < 300
		if shown || taken {
			s.formShown(r, formID, kind)
		}
		return
	}
	k, err := s.runtimeKey(r.Context(), bearer(r))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	class := routeClass(r.Method, r.URL.Path)
	limit, burst := s.rate, s.burst
	if k.Tier != "" {
		t, err := s.tier(r.Context(), k.Tier)
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		if t != nil {
			if err := s.tierAllows(r.Context(), t, k.OrgID, r.Method, r.URL.Path, class); err != nil {
				if p := (*problem)(nil); errors.As(err, &p) && p.Status == http.StatusTooManyRequests {
					s.count(k.OrgID, class, 0, 1, 0)
				}
				s.writeErr(w, r, err)
				return
			}
			limit, burst = rate.Limit(t.Rate), t.Burst
		}
	}
	ok, wait, err := s.allow(r.Context(), k.ID, limit, burst)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	if !ok {
		s.count(k.OrgID, class, 0, 1, 0)
		secs := max(1, int(math.Ceil(wait.Seconds())))
		w.Header().Set("Retry-After", fmt.Sprint(secs))
		writeProblem(w, http.StatusTooManyRequests, "rate_limited", fmt.Sprintf("the key's rate limit is spent: retry in %d s", secs))
		return
	}
	r.Header.Del("Authorization")
	r.Header.Set("X-Org-Id", k.OrgID)
	rec := &statusRecorder{ResponseWriter: w}
	s.proxy.ServeHTTP(rec, r)
	runs := int64(0)
	if class == "execute" && rec.status >= 200 && rec.status < 300 {
		runs = 1
	}
	s.count(k.OrgID, class, 1, 0, runs)
}

func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var p *problem
	var he huma.HeadersError
	if errors.As(err, &he) {
		for k, v := range he.GetHeaders() {
			w.Header()[k] = v
		}
	}
	if errors.As(err, &p) {
		writeProblem(w, p.Status, p.Code, p.Detail)
		return
	}
	s.log.ErrorContext(r.Context(), "gateway request failed", "err", err)
	writeProblem(w, http.StatusInternalServerError, "internal", "the gateway failed; the error is logged")
}

// GatewayHealth is the answer of GET /health.
type GatewayHealth struct {
	Status  string `json:"status" enum:"ok,degraded"`
	Runtime string `json:"runtime" enum:"ok,unreachable"`
	Store   string `json:"store" enum:"ok,unreachable"`
}

// registerHealth serves GET /health: the gateway, the runtime's reachability and the store.
func (s *Server) registerHealth(o Options) {
	op := publicOp(huma.Operation{OperationID: "gateway-health", Method: http.MethodGet, Path: "/health", Summary: "Health", Tags: []string{"Health"},
		Description: "status ok when the runtime answers and the store reads; degraded (503) otherwise, saying which."})
	health := s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[GatewayHealth](), true, "")
	op.Responses = map[string]*huma.Response{strconv.Itoa(http.StatusServiceUnavailable): {Description: "Degraded: the runtime or the store does not answer.",
		Content: map[string]*huma.MediaType{"application/json": {Schema: health}}}}
	client := &http.Client{Timeout: 2 * time.Second}
	huma.Register(s.api, op, func(ctx context.Context, _ *struct{}) (*struct {
		Status int
		Body   GatewayHealth
	}, error) {
		out := &struct {
			Status int
			Body   GatewayHealth
		}{Status: http.StatusOK}
		out.Body.Status, out.Body.Runtime, out.Body.Store = "ok", "ok", "ok"
		if o.Runtime == nil {
			out.Body.Runtime = "unreachable"
			if o.RuntimeURL != nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, o.RuntimeURL.JoinPath("health").String(), nil)
				if resp, err := client.Do(req); err == nil {
					_ = resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						out.Body.Runtime = "ok"
					}
				}
			}
		}
		if _, err := s.store.AccountByToken(ctx, hashOf("health")); err != nil && !errors.Is(err, gwstore.ErrNotFound) {
			out.Body.Store = "unreachable"
		}
		if out.Body.Runtime != "ok" || out.Body.Store != "ok" {
			out.Status, out.Body.Status = http.StatusServiceUnavailable, "degraded"
		}
		return out, nil
	})
}
