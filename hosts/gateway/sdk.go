package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/mail"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"golang.org/x/time/rate"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
	"github.com/svcflow/svcflow/hosts/identity"
)

// SDK sign-in (spec section 5, rule 4): a person signs in to an organization with an email
// and a one-time code issued against the organization's publishable key, and gets a
// session; SDK and public routes take the session token as Authorization: Bearer.
const (
	PrefixSession = "svc_sess_"
	// CodeTTL is how long a one-time code works; CodeAttempts how many tries it takes.
	CodeTTL      = 10 * time.Minute
	CodeAttempts = 5
	// DefaultSessionTTL is how long a session lasts.
	DefaultSessionTTL = 12 * time.Hour
	// codeSends is how many codes one person may ask for in ten minutes.
	codeSends = 5
	// identityTTL is the life of the identity token minted per forwarded request.
	identityTTL = time.Minute
)

var (
	errSignInRequired = newProblem(http.StatusForbidden, "signin_required",
		"an anonymous (publishable-key) session may read but not act: sign in with POST /sdk/auth/start {email} and "+
			"POST /sdk/auth/verify {email, code}, then send the session token as Authorization: Bearer")
	errRuntimeKeyOnSDK = newProblem(http.StatusForbidden, "runtime_key_on_sdk_route",
		"a runtime key is for server-side calls: the SDK takes the publishable key (svc_pk_...) or a session token (svc_sess_...)")
	errMgmtOnSDK = newProblem(http.StatusForbidden, "management_token_on_sdk_route",
		"a management token manages the account: the SDK takes the publishable key or a session token")
	errNoSDKCredential = newProblem(http.StatusUnauthorized, "unauthorized",
		"send Authorization: Bearer <publishable key> or <session token>")
	errUnknownSession = newProblem(http.StatusUnauthorized, "unknown_session", "the session is not known (it may have been signed out)")
	errSessionExpired = newProblem(http.StatusUnauthorized, "session_expired", "the session has expired: sign in again")
	errCodeInvalid    = newProblem(http.StatusUnauthorized, "code_invalid",
		"the code is wrong, expired, used or out of tries: ask for a new one with POST /sdk/auth/start")
	errNotApprover = newProblem(http.StatusForbidden, "not_an_approver", "your approver_roles do not include this approval's role")
	errNotAMember  = newProblem(http.StatusForbidden, "not_a_member",
		"you signed in as a guest (the organization lets anyone sign in, but has not added you): guests work no tasks")
	errNotAssignee       = newProblem(http.StatusForbidden, "not_an_assignee", "this form is assigned to a role that is not among your roles")
	errMailNotConfigured = newProblem(http.StatusServiceUnavailable, "mail_not_configured",
		"this gateway has no mail server, so no sign-in code can reach anyone: start it with --smtp-addr host:port "+
			"(and --smtp-from), or, for local development only, --dev-show-codes to log the codes")
	errFormSessionOnSDK = newProblem(http.StatusForbidden, "form_session_on_sdk_route",
		"this session was opened on a public form's sign-in and works on that form only: sign in with the publishable key "+
			"(POST /sdk/auth/start, /sdk/auth/verify) for the SDK")
	errSessionOtherForm = newProblem(http.StatusForbidden, "session_for_another_form",
		"this session was opened on another form's sign-in and works on that form only: sign in on this form")
	errSessionEnded = newProblem(http.StatusUnauthorized, "session_ended",
		"the organization no longer lets this person sign in: the session has ended")
)

// sdkCaller is who calls an SDK route: an organization through its publishable key, and,
// signed in, the person.
type sdkCaller struct {
	OrgID, KeyID string
	// Email is the signed-in person ("" for an anonymous publishable-key session).
	Email   string
	Session *gwstore.Session
	// Person is who Email is in the organization (nil for an anonymous session).
	Person *person
}

// sdkAuth authenticates an SDK credential and takes a token from its key's bucket.
func (s *Server) sdkAuth(ctx context.Context, header string) (*sdkCaller, error) {
	c, err := s.sdkCredential(ctx, bearerOf(header))
	if err != nil {
		return nil, err
	}
	bucket := c.KeyID
	if bucket == "" {
		bucket = "sessions\x00" + c.OrgID // sessions opened on a hosted form
	}
	ok, wait, err := s.allow(ctx, bucket, s.rate, s.burst)
	if err != nil {
		return nil, err
	}
	if !ok {
		s.count(c.OrgID, "sdk", 0, 1, 0)
		return nil, rateLimited(wait, "the key's rate limit is spent")
	}
	s.count(c.OrgID, "sdk", 1, 0, 0)
	return c, nil
}

func (s *Server) sdkCredential(ctx context.Context, secret string) (*sdkCaller, error) {
	switch {
	case secret == "":
		return nil, errNoSDKCredential
	case strings.HasPrefix(secret, PrefixManagement):
		return nil, errMgmtOnSDK
	case strings.HasPrefix(secret, PrefixRuntime):
		return nil, errRuntimeKeyOnSDK
	case strings.HasPrefix(secret, PrefixSession):
		c, err := s.session(ctx, secret)
		if err == nil && c.Session.FormID != "" {
			return nil, errFormSessionOnSDK
		}
		return c, err
	case strings.HasPrefix(secret, PrefixPublishable):
		k, err := s.lookupKey(ctx, secret)
		if err != nil {
			return nil, err
		}
		return &sdkCaller{OrgID: k.OrgID, KeyID: k.ID}, nil
	}
	return nil, errUnknownKey
}

// session authenticates a session token.
func (s *Server) session(ctx context.Context, secret string) (*sdkCaller, error) {
	ss, err := s.store.SessionByHash(ctx, hashOf(secret))
	if errors.Is(err, gwstore.ErrNotFound) {
		return nil, errUnknownSession
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	switch {
	case !now.Before(ss.ExpiresAt):
		return nil, errSessionExpired
	case ss.KeyEnded != nil && !now.Before(*ss.KeyEnded):
		return nil, errRevokedKey
	case ss.AccountStatus == gwstore.AccountSuspended:
		return nil, errSuspended
	}
	c := &sdkCaller{OrgID: ss.OrgID, KeyID: ss.KeyID, Email: ss.Email, Session: ss}
	if ss.FormID != "" {
		return c, nil // a form's session: anyone may sign in to a public form
	}
	// Who may sign in is read on every request: a person removed, or a policy narrowed,
	// ends their sessions at once.
	p, err := s.person(ctx, ss.OrgID, ss.Email)
	if err != nil {
		return nil, err
	}
	if !p.MaySignIn {
		return nil, errSessionEnded
	}
	c.Person = &p
	return c, nil
}

// rateLimited is a 429 with Retry-After.
func rateLimited(wait time.Duration, what string) error {
	secs := max(1, int((wait+time.Second-1)/time.Second))
	return huma.ErrorWithHeaders(newProblem(http.StatusTooManyRequests, "rate_limited", fmt.Sprintf("%s: retry in %d s", what, secs)),
		http.Header{"Retry-After": []string{fmt.Sprint(secs)}})
}

// SDKAuthHeader carries an SDK credential.
type SDKAuthHeader struct {
	Authorization string `header:"Authorization" doc:"Bearer <publishable key> (svc_pk_...) or <session token> (svc_sess_...)."`
}

// Permissions are what a signed-in person may do.
type Permissions struct {
	ApproverRoles []string `json:"approver_roles" doc:"The person's roles (set by the organization's backend: PUT /gateway/orgs/{orgId}/users/{email}): the approvals they may decide and the form pauses assigned to them."`
	Member        bool     `json:"member" doc:"True for a person of the organization (added by its backend, or of a domain it lists); false for an anonymous session or a guest (signed in only because the organization lets anyone): they work no tasks and read no submitted data."`
}

// SessionInfo is a session as the SDK sees it.
type SessionInfo struct {
	OrgID       string      `json:"org_id"`
	Email       string      `json:"email,omitempty"`
	Anonymous   bool        `json:"anonymous"`
	ExpiresAt   *time.Time  `json:"expires_at,omitempty"`
	Permissions Permissions `json:"permissions"`
}

// permissions are what the caller may do: nothing for an anonymous session.
func (c *sdkCaller) permissions() Permissions {
	if c.Person == nil {
		return Permissions{ApproverRoles: []string{}}
	}
	return Permissions{ApproverRoles: c.Person.Roles, Member: c.Person.Member}
}

func normalEmail(v string) (string, bool) {
	a, err := mail.ParseAddress(v)
	if err != nil || a.Address != strings.TrimSpace(v) || len(v) > 254 {
		return "", false
	}
	return strings.ToLower(a.Address), true
}

// newCode is six digits, uniform, from crypto/rand.
func newCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%06d", n.Int64()), nil
}

// codeHash binds a code to its organization, its email and where it was asked for (a
// public form's id, or "" for the SDK), so that it opens a session there only.
func codeHash(salt, orgID, formID, email, code string) string {
	sum := sha256.Sum256([]byte("svcflow sign-in code\x00" + salt + "\x00" + orgID + "\x00" + formID + "\x00" + email + "\x00" + code))
	return hex.EncodeToString(sum[:])
}

func (s *Server) registerSDKAuth() {
	o := huma.Operation{OperationID: "sdk-auth-start", Method: http.MethodPost, Path: "/sdk/auth/start", Summary: "Send a one-time sign-in code",
		Tags: []string{"SDK"}, DefaultStatus: http.StatusAccepted, MaxBodyBytes: 1 << 12,
		Description: fmt.Sprintf("With the organization's publishable key: mails a %d-digit code to email, valid %d minutes, single use, "+
			"%d tries. A new code replaces the last. At most %d codes per person per ten minutes (429). The answer is the same "+
			"whoever the email belongs to: a person the organization does not let sign in (PUT /gateway/orgs/{orgId}/sign-in) "+
			"gets it too, and no mail. 503 mail_not_configured when the gateway has no mail server.", 6, int(CodeTTL.Minutes()), CodeAttempts, codeSends)}
	o = sdkOp(o, http.StatusUnprocessableEntity, http.StatusServiceUnavailable)
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		SDKAuthHeader
		Body struct {
			Email string `json:"email" maxLength:"254"`
		}
	}) (*struct{ Body CodeSent }, error) {
		c, err := s.sdkAuth(ctx, in.Authorization)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		if err := s.startSignIn(ctx, c.OrgID, c.KeyID, "", in.Body.Email); err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return codeSent(), nil
	})

	o = huma.Operation{OperationID: "sdk-auth-verify", Method: http.MethodPost, Path: "/sdk/auth/verify", Summary: "Sign in with the code",
		Tags: []string{"SDK"}, MaxBodyBytes: 1 << 12,
		Description: "With the publishable key: the email and the code mailed to it give a session (session_token, shown once; " +
			"send it as Authorization: Bearer on SDK and public routes). A wrong, expired, used or exhausted code is 401 code_invalid."}
	o = sdkOp(o, http.StatusUnprocessableEntity)
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		SDKAuthHeader
		Body struct {
			Email string `json:"email" maxLength:"254"`
			Code  string `json:"code" maxLength:"12"`
		}
	}) (*struct{ Body SignedIn }, error) {
		c, err := s.sdkAuth(ctx, in.Authorization)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		out, err := s.verifySignIn(ctx, c.OrgID, "", in.Body.Email, in.Body.Code)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return &struct{ Body SignedIn }{Body: *out}, nil
	})

	o = huma.Operation{OperationID: "sdk-session", Method: http.MethodGet, Path: "/sdk/session", Summary: "Who the SDK credential is",
		Tags: []string{"SDK"}, Description: "The organization, and for a session the person, its expiry and permissions (read now)."}
	o = sdkOp(o)
	huma.Register(s.api, o, func(ctx context.Context, in *SDKAuthHeader) (*struct{ Body SessionInfo }, error) {
		c, err := s.sdkAuth(ctx, in.Authorization)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		info := SessionInfo{OrgID: c.OrgID, Anonymous: c.Email == "", Permissions: c.permissions()}
		if c.Session != nil {
			info.Email, info.ExpiresAt = c.Email, &c.Session.ExpiresAt
		}
		return &struct{ Body SessionInfo }{Body: info}, nil
	})

	o = sdkOp(huma.Operation{OperationID: "sdk-signout", Method: http.MethodPost, Path: "/sdk/auth/signout", Summary: "End the session",
		Tags: []string{"SDK"}, DefaultStatus: http.StatusNoContent}, http.StatusNotFound)
	huma.Register(s.api, o, func(ctx context.Context, in *SDKAuthHeader) (*struct{}, error) {
		c, err := s.sdkAuth(ctx, in.Authorization)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		if c.Session == nil {
			return nil, errSignInRequired
		}
		if err := s.store.EndSession(ctx, c.OrgID, c.Session.Hash); err != nil {
			return nil, s.fail(ctx, err, "the session is not known")
		}
		return &struct{}{}, nil
	})
}

// startSignIn mails a new code to email for orgID (keyID: the publishable key asked with,
// "" on a hosted form; formID: the public form whose sign-in asks, "" for the SDK). A
// person the organization does not let sign in to its SDK gets the same answer, and no
// code is kept or mailed. The mail goes out after the answer, so that answer takes as
// long whoever asks, and no request waits on the mail server.
func (s *Server) startSignIn(ctx context.Context, orgID, keyID, formID, rawEmail string) error {
	if strings.TrimSpace(rawEmail) == "" {
		return invalid("/email", "required, the address the sign-in code is sent to")
	}
	email, ok := normalEmail(rawEmail)
	if !ok {
		return invalid("/email", "not an email address")
	}
	if !mailConfigured(s.mailer) {
		return errMailNotConfigured
	}
	if ok, wait := s.allowLocalKey("code\x00"+orgID+"\x00"+email, rate.Limit(float64(codeSends)/600), codeSends); !ok {
		return rateLimited(wait, "too many codes asked for this email")
	}
	if formID == "" {
		p, err := s.person(ctx, orgID, email)
		if err != nil {
			return err
		}
		if !p.MaySignIn {
			return nil
		}
	}
	code, err := newCode()
	if err != nil {
		return err
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return err
	}
	now := s.now().UTC()
	sc := &gwstore.SignInCode{ID: "code_" + uuid.NewString(), OrgID: orgID, KeyID: keyID, Email: email, Salt: hex.EncodeToString(salt),
		ExpiresAt: now.Add(CodeTTL), CreatedAt: now}
	sc.Hash = codeHash(sc.Salt, orgID, formID, email, code)
	if err := s.store.PutSignInCode(ctx, sc); err != nil {
		return err
	}
	// The store is done with: the mail goes out with nothing held, and the request does
	// not wait for it.
	s.mails.Add(1)
	go func() {
		defer s.mails.Done()
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mailTimeout)
		defer cancel()
		if err := s.mailer.SendCode(mctx, email, orgID, code, CodeTTL); err != nil {
			s.log.WarnContext(mctx, "sign-in code not sent", "org_id", orgID, "err", err)
		}
	}()
	return nil
}

// WaitMails waits for the sign-in codes being mailed (each bounded by mailTimeout): a
// gateway on its way out lets them go.
func (s *Server) WaitMails() { s.mails.Wait() }

// mailTimeout bounds the sending of one code.
const mailTimeout = 30 * time.Second

// verifySignIn checks a code and opens a session: for the SDK (formID ""), or for the one
// public form formID whose sign-in mailed the code. A code works only where it was asked
// for, and an SDK code only while the organization still lets the person sign in.
func (s *Server) verifySignIn(ctx context.Context, orgID, formID, rawEmail, code string) (*SignedIn, error) {
	email, ok := normalEmail(rawEmail)
	if !ok {
		return nil, invalid("/email", "an email address")
	}
	now := s.now().UTC()
	sc, err := s.store.TrySignInCode(ctx, orgID, email, CodeAttempts, now)
	if errors.Is(err, gwstore.ErrNotFound) {
		return nil, errCodeInvalid
	}
	if err != nil {
		return nil, err
	}
	want := codeHash(sc.Salt, orgID, formID, email, strings.TrimSpace(code))
	if subtle.ConstantTimeCompare([]byte(want), []byte(sc.Hash)) != 1 {
		return nil, errCodeInvalid
	}
	c := &sdkCaller{OrgID: orgID, Email: email}
	if formID == "" {
		p, err := s.person(ctx, orgID, email)
		if err != nil {
			return nil, err
		}
		if !p.MaySignIn {
			return nil, errCodeInvalid
		}
		c.Person = &p
	}
	if err := s.store.UseSignInCode(ctx, orgID, sc.ID, now); err != nil {
		if errors.Is(err, gwstore.ErrConflict) {
			return nil, errCodeInvalid
		}
		return nil, err
	}
	secret, shown, hash, err := newSecret(PrefixSession)
	if err != nil {
		return nil, err
	}
	ss := &gwstore.Session{Hash: hash, Prefix: shown, OrgID: orgID, KeyID: sc.KeyID, Email: email, FormID: formID,
		CreatedAt: now, ExpiresAt: now.Add(s.sessionTTL)}
	if err := s.store.CreateSession(ctx, ss); err != nil {
		return nil, err
	}
	return &SignedIn{SessionToken: secret, ExpiresAt: ss.ExpiresAt, Email: email, FormID: formID, Permissions: c.permissions()}, nil
}

// CodeSent is the answer of a sign-in start.
type CodeSent struct {
	Status           string `json:"status" enum:"sent"`
	ExpiresInSeconds int    `json:"expires_in_seconds"`
}

func codeSent() *struct{ Body CodeSent } {
	return &struct{ Body CodeSent }{Body: CodeSent{Status: "sent", ExpiresInSeconds: int(CodeTTL.Seconds())}}
}

// SignedIn is the answer of a sign-in.
type SignedIn struct {
	SessionToken string      `json:"session_token" doc:"Shown once. Send as Authorization: Bearer on SDK and public routes."`
	ExpiresAt    time.Time   `json:"expires_at"`
	Email        string      `json:"email"`
	FormID       string      `json:"form_id,omitempty" doc:"For a session opened on a public form's sign-in: the form, the one place the session works."`
	Permissions  Permissions `json:"permissions"`
}

// runtimeCall calls the runtime for orgID (and, signed in, the person), through the same
// handler the proxy uses; a runtime answer of 400 or more comes back as its problem.
func (s *Server) runtimeCall(ctx context.Context, c *sdkCaller, method, path string, query url.Values, body any) (json.RawMessage, error) {
	if s.proxy == nil {
		return nil, newProblem(http.StatusBadGateway, "runtime_unreachable", "this gateway has no runtime")
	}
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u := &url.URL{Path: path, RawQuery: query.Encode()}
	req, err := http.NewRequestWithContext(runtimeContext(ctx), method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Org-Id", c.OrgID)
	if c.Email != "" {
		tok, err := s.mint(c.OrgID, c.Email)
		if err != nil {
			return nil, err
		}
		req.Header.Set(identity.Header, tok)
	}
	w := &bufferWriter{header: http.Header{}}
	s.proxy.ServeHTTP(w, req)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status >= 400 {
		var p problem
		if json.Unmarshal(w.body.Bytes(), &p) != nil || p.Status == 0 {
			p = problem{Title: http.StatusText(w.status), Status: w.status, Code: "runtime_error", Detail: "the runtime refused the request"}
		}
		return nil, &p
	}
	return json.RawMessage(w.body.Bytes()), nil
}

// runtimeContext is ctx for a request to the runtime's handler: without this router's
// routing state, which an in-process runtime router would otherwise take as its own.
func runtimeContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, chi.RouteCtxKey, nil)
}

// mint is the identity token the runtime believes for a signed-in person, for one request.
func (s *Server) mint(orgID, email string) (string, error) {
	if s.identityErr != nil || s.identity == nil {
		return "", s.identityErr
	}
	now := s.now()
	return s.identity.Sign(identity.Identity{Subject: email, OrgID: orgID, IssuedAt: now, Expires: now.Add(identityTTL)})
}

// bufferWriter is an in-memory http.ResponseWriter for calls to the runtime's handler.
type bufferWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferWriter) Header() http.Header { return w.header }
func (w *bufferWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}
func (w *bufferWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

// RunStep names a run's step in an SDK path.
type RunStep struct {
	RunID  string `path:"runId" maxLength:"100"`
	StepID int    `path:"stepId" minimum:"0"`
}

// Task is a pending approval or form pause a signed-in person may act on.
type Task struct {
	TaskID       string          `json:"task_id" doc:"The approval_id or form_pause_id."`
	Kind         string          `json:"kind" enum:"approval,form"`
	RunID        string          `json:"run_id"`
	StepID       int             `json:"step_id"`
	WorkflowID   string          `json:"workflow_id"`
	ApproverRole string          `json:"approver_role,omitempty"`
	AssigneeRole string          `json:"assignee_role,omitempty" doc:"A form's: the role it is assigned to (none: any person of the organization)."`
	Comment      string          `json:"comment,omitempty"`
	Payload      json.RawMessage `json:"request_payload,omitempty"`
	Schema       json.RawMessage `json:"schema,omitempty"`
	ExpiresAt    *time.Time      `json:"expires_at"`
	CreatedAt    time.Time       `json:"created_at"`
}

// tasksCap is the most of each kind GET /sdk/tasks lists.
const tasksCap = 500

// relayed is the runtime's answer passed on as its bytes, declared as T's schema: the
// SDK routes that relay a runtime route's answer have its type in the document, and the
// contract test checks what they relay against it.
type relayed[T any] json.RawMessage

// MarshalJSON writes the bytes as they are (null when empty).
func (b relayed[T]) MarshalJSON() ([]byte, error) {
	if len(b) == 0 {
		return []byte("null"), nil
	}
	return b, nil
}

// Schema is T's, as the runtime's document declares it.
func (relayed[T]) Schema(r huma.Registry) *huma.Schema {
	return r.Schema(reflect.TypeFor[T](), true, "")
}

func (s *Server) registerSDKTasks() {
	o := huma.Operation{OperationID: "sdk-get-form-pause", Method: http.MethodGet, Path: "/sdk/forms/run/{runId}/{stepId}",
		Summary: "A run's form pause, for the SDK", Tags: []string{"SDK"},
		Description: "The runtime's GET /forms/{runId}/{stepId} for the credential's organization. An anonymous publishable-key " +
			"session, or a guest, may read the form but not what was submitted: submission and claimed_by are left out."}
	o = sdkOp(o, http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusBadGateway)
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		SDKAuthHeader
		RunStep
	}) (*struct{ Body relayed[svctype.FormPause] }, error) {
		c, err := s.sdkAuth(ctx, in.Authorization)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		b, err := s.runtimeCall(ctx, c, http.MethodGet, fmt.Sprintf("/forms/%s/%d", url.PathEscape(in.RunID), in.StepID), nil, nil)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		if !c.permissions().Member {
			if b, err = withoutSubmission(b); err != nil {
				return nil, s.fail(ctx, err, "")
			}
		}
		return &struct{ Body relayed[svctype.FormPause] }{Body: relayed[svctype.FormPause](b)}, nil
	})

	o = huma.Operation{OperationID: "sdk-submit-form-pause", Method: http.MethodPost, Path: "/sdk/forms/run/{runId}/{stepId}/submit",
		Summary: "Submit a run's form pause as the signed-in person", Tags: []string{"SDK"}, MaxBodyBytes: 1 << 20,
		Description: "Needs a signed-in person of the organization (an anonymous publishable-key session gets 403 signin_required " +
			"with a hint, a guest 403 not_a_member) and, when the pause names an assignee_role, that role among the person's " +
			"roles (403 not_an_assignee); nothing changes in the run otherwise. The pause records claimed_by: the person's email. " +
			"Otherwise as POST /forms/{runId}/{stepId}/submit."}
	o = sdkOp(o, http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusGone, http.StatusUnprocessableEntity, http.StatusBadGateway)
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		SDKAuthHeader
		RunStep
		Body struct {
			Data map[string]any `json:"data"`
		}
	}) (*struct{ Body relayed[svctype.FormPause] }, error) {
		c, err := s.sdkAuth(ctx, in.Authorization)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		if err := c.mayWork(); err != nil {
			return nil, err
		}
		path := fmt.Sprintf("/forms/%s/%d", url.PathEscape(in.RunID), in.StepID)
		b, err := s.runtimeCall(ctx, c, http.MethodGet, path, nil, nil)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		var p svctype.FormPause
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, s.fail(ctx, err, "")
		}
		if !c.mayTake(p.AssigneeRole) {
			return nil, errNotAssignee
		}
		b, err = s.runtimeCall(ctx, c, http.MethodPost, path+"/submit", nil, in.Body)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return &struct{ Body relayed[svctype.FormPause] }{Body: relayed[svctype.FormPause](b)}, nil
	})

	o = huma.Operation{OperationID: "sdk-list-tasks", Method: http.MethodGet, Path: "/sdk/tasks", Summary: "The signed-in person's tasks",
		Tags: []string{"SDK"},
		Description: fmt.Sprintf("The pending approvals whose approver_role is among the person's roles, and the open form "+
			"pauses they may take (no assignee_role, or one among their roles), newest first (at most %d of each). Needs a "+
			"signed-in session; a guest has none.", tasksCap)}
	o = sdkOp(o, http.StatusBadGateway)
	huma.Register(s.api, o, func(ctx context.Context, in *SDKAuthHeader) (*struct {
		Body struct {
			Items []Task `json:"items"`
		}
	}, error) {
		c, err := s.sdkAuth(ctx, in.Authorization)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		if c.Email == "" {
			return nil, errSignInRequired
		}
		items, err := s.tasks(ctx, c)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		out := &struct {
			Body struct {
				Items []Task `json:"items"`
			}
		}{}
		out.Body.Items = items
		return out, nil
	})

	o = huma.Operation{OperationID: "sdk-decide-task", Method: http.MethodPost, Path: "/sdk/tasks/{taskId}/decide",
		Summary: "Decide an approval as the signed-in person", Tags: []string{"SDK"}, MaxBodyBytes: 1 << 16,
		Description: "taskId is the approval_id. A signed-in person whose approver_roles include the approval's role decides it " +
			"(decided_by {type: user, id: email}); anyone else 403 not_an_approver. 409 when it was decided already."}
	o = sdkOp(o, http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusGone, http.StatusUnprocessableEntity, http.StatusBadGateway)
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		SDKAuthHeader
		TaskID string `path:"taskId" maxLength:"100"`
		Body   struct {
			Approved bool   `json:"approved"`
			Comment  string `json:"comment,omitempty" maxLength:"4000"`
		}
	}) (*struct{ Body relayed[svctype.Approval] }, error) {
		c, err := s.sdkAuth(ctx, in.Authorization)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		if err := c.mayWork(); err != nil {
			return nil, err
		}
		b, err := s.runtimeCall(ctx, c, http.MethodGet, "/approvals/by-id/"+url.PathEscape(in.TaskID), nil, nil)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		var a svctype.Approval
		if err := json.Unmarshal(b, &a); err != nil {
			return nil, s.fail(ctx, err, "")
		}
		if !slices.Contains(c.permissions().ApproverRoles, a.ApproverRole) {
			return nil, errNotApprover
		}
		b, err = s.runtimeCall(ctx, c, http.MethodPost, fmt.Sprintf("/approvals/%s/%d", url.PathEscape(a.RunID), a.StepIndex), nil, in.Body)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return &struct{ Body relayed[svctype.Approval] }{Body: relayed[svctype.Approval](b)}, nil
	})
}

// tasks lists what a signed-in person may act on: nothing for a guest.
func (s *Server) tasks(ctx context.Context, c *sdkCaller) ([]Task, error) {
	items := []Task{}
	perms := c.permissions()
	if !perms.Member {
		return items, nil
	}
	if len(perms.ApproverRoles) > 0 {
		b, err := s.runtimeCall(ctx, c, http.MethodGet, "/approvals", url.Values{"status": {"pending"}, "limit": {fmt.Sprint(tasksCap)}}, nil)
		if err != nil {
			return nil, err
		}
		var page struct{ Items []svctype.Approval }
		if err := json.Unmarshal(b, &page); err != nil {
			return nil, err
		}
		for _, a := range page.Items {
			if slices.Contains(perms.ApproverRoles, a.ApproverRole) {
				items = append(items, Task{TaskID: a.ID, Kind: "approval", RunID: a.RunID, StepID: a.StepIndex, WorkflowID: a.WorkflowID,
					ApproverRole: a.ApproverRole, Comment: a.Comment, Payload: a.RequestPayload, ExpiresAt: a.ExpiresAt, CreatedAt: a.CreatedAt})
			}
		}
	}
	b, err := s.runtimeCall(ctx, c, http.MethodGet, "/forms/pending", url.Values{"limit": {fmt.Sprint(tasksCap)}}, nil)
	if err != nil {
		return nil, err
	}
	var forms struct{ Items []svctype.FormPause }
	if err := json.Unmarshal(b, &forms); err != nil {
		return nil, err
	}
	for _, p := range forms.Items {
		if c.mayTake(p.AssigneeRole) {
			items = append(items, Task{TaskID: p.ID, Kind: "form", RunID: p.RunID, StepID: p.StepIndex, WorkflowID: p.WorkflowID,
				AssigneeRole: p.AssigneeRole, Schema: p.Schema, ExpiresAt: p.ExpiresAt, CreatedAt: p.CreatedAt})
		}
	}
	slices.SortStableFunc(items, func(a, b Task) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return items, nil
}

// mayWork: only a signed-in person of the organization works its tasks.
func (c *sdkCaller) mayWork() error {
	switch {
	case c.Email == "":
		return errSignInRequired
	case !c.permissions().Member:
		return errNotAMember
	}
	return nil
}

// mayTake reports whether the caller may take a form pause assigned to role ("": any
// person of the organization).
func (c *sdkCaller) mayTake(role string) bool {
	p := c.permissions()
	return p.Member && (role == "" || slices.Contains(p.ApproverRoles, role))
}

// withoutSubmission is a form pause's JSON without what was submitted and who submitted
// it, for a caller who may read the form but not its answers.
func withoutSubmission(b json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "submission")
	delete(m, "claimed_by")
	return json.Marshal(m)
}
