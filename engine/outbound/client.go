// Package outbound is the one HTTP client through which svcflow calls out of its own
// process on a tenant's behalf: http actions, webhook deliveries, OAuth providers and the
// APIs the built-in OAuth tools call, and (through its dialer) dbquery's databases. It is a
// leaf beside the features, so none of them imports another for it. It owns what
// every such call must get right: the connect-time address guard (no loopback, private,
// link-local or metadata addresses unless the deployment allows private targets), retries
// with backoff and Retry-After (built on go-retryablehttp) that never repeat a POST or PATCH
// the caller did not say was safe to repeat, a timeout per attempt, the Idempotency-Key
// header, and a bounded response body.
//
// It logs nothing, and its errors name the method and the host only: never a path, a query,
// credentials, a header value or a body, since any of them may hold an org config secret.
// It knows nothing of steps, runs or the executor: callers turn a Response or an *Error into
// a step's output or failure. It reads Retry-After through internal/retryafter, the one
// parser of that header.
package outbound

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/svcflow/svcflow/internal/retryafter"
)

// Defaults of Options.
const (
	DefaultTimeout       = 30 * time.Second
	DefaultRetries       = 3
	DefaultRetryWaitMin  = 500 * time.Millisecond
	DefaultRetryWaitMax  = 10 * time.Second
	DefaultMaxRetryAfter = 30 * time.Second
	// MaxBodyBytes is the default response body limit: 10 MiB, the limit the API puts on
	// request bodies.
	MaxBodyBytes = 10 << 20

	dialTimeout    = 10 * time.Second
	excerptLen     = 256
	minSecretLen   = 6 // header values shorter than this, unless named in Request.Secrets, are not blanked
	defaultAgent   = "svcflow"
	jsonMediaType  = "application/json"
	idempotencyHdr = "Idempotency-Key"
)

// Options configure a Client. The zero value is a guarded client with the defaults above.
type Options struct {
	// AllowPrivateTargets lets calls reach loopback, private, link-local and other
	// non-public addresses (the binary's --allow-private-targets): for a deployment whose
	// actions call services on its own network, and for tests against httptest servers.
	AllowPrivateTargets bool
	// Timeout bounds one attempt, from dialling to the last byte of the body, unless the
	// Request sets its own. Default 30 s.
	Timeout time.Duration
	// Retries is how many times a failed attempt is repeated: 0 means DefaultRetries, a
	// negative number none.
	Retries int
	// RetryWaitMin and RetryWaitMax bound the exponential backoff between attempts
	// (defaults 500 ms and 10 s); each wait is jittered down by up to half.
	RetryWaitMin, RetryWaitMax time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits for; an answer asking for
	// more ends the call with that answer (its wait in Error.RetryAfter). Default 30 s. A
	// Retry-After is read capped at retryafter.Max (1 hour), so a limit above that never
	// ends a call.
	MaxRetryAfter time.Duration
	// MaxBodyBytes limits a response body; default MaxBodyBytes (10 MiB).
	MaxBodyBytes int64
	// UserAgent is sent when the request sets none; default "svcflow".
	UserAgent string
}

// Request is one outbound call.
type Request struct {
	// Method defaults to GET.
	Method string
	// URL must be absolute, http or https.
	URL     string
	Headers map[string]string
	// Body is sent as is when it is []byte, string or json.RawMessage, and encoded as JSON
	// otherwise (Content-Type application/json unless Headers set one); nil sends none.
	Body any
	// IdempotencyKey, when set, is sent as the Idempotency-Key header, the same on every
	// attempt, so a server that honours it does the work once.
	IdempotencyKey string
	// Timeout bounds each attempt; 0 takes the client's.
	Timeout time.Duration
	// RetryNonIdempotent lets a POST or PATCH (or any method other than GET, HEAD, OPTIONS,
	// TRACE, PUT, DELETE) be repeated after a 429, a 5xx or an error once the request may
	// have been sent: say so only when the target deduplicates (an idempotency key it
	// honours). A connection that was never made is retried for every method.
	RetryNonIdempotent bool
	// Secrets are the values the request carries that must never appear in an error: the
	// org config values resolved into its headers or its URL. Each is redacted from the
	// excerpt of an answer whatever its length (Redact). Header values, the URL's path,
	// password and query values of 6 bytes or more are redacted as well, in case a secret
	// was written into the action literally.
	Secrets []string
	// URLName, when set, says that the URL itself is a secret (an org config value) and is
	// what errors call the target instead of its host: "orgconfig:api:crm". Errors then
	// never quote the URL's scheme, host or an address it resolved to, and its host is
	// redacted from an answer's excerpt and a connection error's text.
	URLName string
}

// Response is the final answer of a call.
type Response struct {
	Status  int
	Headers http.Header
	// Body is the parsed JSON when the body is JSON (a JSON media type, or none declared
	// and the body parses), else the text; nil when the body is empty.
	Body any
	// Attempts is every attempt made, the last one included.
	Attempts []Attempt
}

// Client makes outbound calls. It is safe for concurrent use; make one per process (or per
// set of Options) and share it, so connections are pooled.
type Client struct {
	opts Options
	rc   *retryablehttp.Client
	now  func() time.Time
}

// NewClient returns a client with opts (zero fields take the defaults).
func NewClient(opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	switch {
	case opts.Retries == 0:
		opts.Retries = DefaultRetries
	case opts.Retries < 0:
		opts.Retries = 0
	}
	if opts.RetryWaitMin <= 0 {
		opts.RetryWaitMin = DefaultRetryWaitMin
	}
	if opts.RetryWaitMax <= 0 {
		opts.RetryWaitMax = DefaultRetryWaitMax
	}
	if opts.RetryWaitMax < opts.RetryWaitMin {
		opts.RetryWaitMax = opts.RetryWaitMin
	}
	if opts.MaxRetryAfter <= 0 {
		opts.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = MaxBodyBytes
	}
	if opts.UserAgent == "" {
		opts.UserAgent = defaultAgent
	}
	c := &Client{opts: opts, now: time.Now}

	transport := &http.Transport{
		// No proxy from the environment: a proxy would make the dial go to the proxy, and
		// the guard would judge the proxy's address instead of the target's.
		Proxy:                 nil,
		DialContext:           NewDialer(opts.AllowPrivateTargets).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   dialTimeout,
		ExpectContinueTimeout: time.Second,
	}
	hc := &http.Client{
		Transport: attemptTimeout{next: transport},
		// Redirects are not followed: the 3xx is the answer (docs/decisions.md). Following
		// one would send the action's headers, credentials among them, to wherever the
		// server points, and turn a POST into a GET.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c.rc = &retryablehttp.Client{
		HTTPClient:     hc,
		Logger:         nil, // nothing is logged: URLs and errors may carry secrets
		RetryWaitMin:   opts.RetryWaitMin,
		RetryWaitMax:   opts.RetryWaitMax,
		RetryMax:       opts.Retries,
		RequestLogHook: startAttempt,
		CheckRetry:     c.checkRetry,
		Backoff:        c.backoff,
		ErrorHandler:   retryablehttp.PassthroughErrorHandler,
	}
	return c
}

// Do makes the call, retrying as Options and Request say, and returns the final answer.
// A 2xx answer is a Response and no error. Any other final answer (3xx included: redirects
// are not followed) is the Response and an *Error wrapping ErrStatus, with the status and an
// excerpt of the body. Without an answer, the Response is nil and the *Error says why:
// ErrTargetNotAllowed, ErrTimeout, ErrBodyTooLarge, the caller's context, or the network
// error of the last attempt. Errors carry every attempt.
func (c *Client) Do(ctx context.Context, r Request) (*Response, error) {
	method := strings.ToUpper(r.Method)
	if method == "" {
		method = http.MethodGet
	}
	fail := &Error{Method: method, Host: r.URLName}
	u, err := url.Parse(r.URL)
	if err != nil {
		// url.Parse quotes the URL, which may hold credentials: say what, not where.
		fail.Code, fail.Err = CodeInvalidRequest, fmt.Errorf("%w: malformed URL", ErrInvalidRequest)
		return nil, fail
	}
	st := &call{
		retryable: r.RetryNonIdempotent || idempotent(method),
		timeout:   r.Timeout,
	}
	if r.URLName == "" {
		fail.Host = u.Host
	} else {
		st.hide = []string{r.URL, u.Host, u.Hostname()}
	}
	if !validMethod(method) {
		fail.Code, fail.Err = CodeInvalidRequest, fmt.Errorf("%w: malformed method", ErrInvalidRequest)
		return nil, fail
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		fail.Code = CodeTargetNotAllowed
		fail.Err = &TargetError{Host: fail.Host, Reason: fmt.Sprintf("scheme %q (only http and https)", u.Scheme)}
		if r.URLName != "" {
			// The text before the first ':' of a value that is no URL is the value.
			fail.Err = &TargetError{Host: fail.Host, Reason: "not an http or https URL"}
		}
		return nil, fail
	}
	if u.Hostname() == "" {
		fail.Code, fail.Err = CodeInvalidRequest, fmt.Errorf("%w: URL has no host", ErrInvalidRequest)
		return nil, fail
	}
	if !c.opts.AllowPrivateTargets {
		// An address written in the URL is judged before anything is dialled; names are
		// judged by Control on the address they resolve to.
		if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
			if err := CheckAddr(ip); err != nil {
				te := err.(*TargetError)
				te.Host = fail.Host
				if r.URLName != "" {
					te.Addr = netip.Addr{}
				}
				fail.Code, fail.Err = CodeTargetNotAllowed, te
				return nil, fail
			}
		}
	}
	body, jsonBody, err := encodeBody(r.Body)
	if err != nil {
		fail.Code, fail.Err = CodeInvalidRequest, fmt.Errorf("%w: body: %v", ErrInvalidRequest, err)
		return nil, fail
	}

	if st.timeout <= 0 {
		st.timeout = c.opts.Timeout
	}
	var raw any // a nil []byte would still be a body to retryablehttp
	if body != nil {
		raw = body
	}
	req, err := retryablehttp.NewRequestWithContext(context.WithValue(ctx, callKey{}, st), method, u.String(), raw)
	if err != nil {
		fail.Code, fail.Err = CodeInvalidRequest, ErrInvalidRequest
		return nil, fail
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	if jsonBody && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", jsonMediaType)
	}
	if r.IdempotencyKey != "" {
		req.Header.Set(idempotencyHdr, r.IdempotencyKey)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", c.opts.UserAgent)
	}

	resp, err := c.rc.Do(req)
	fail.Attempts = st.attempts
	if err != nil {
		c.classify(ctx, st, fail, err)
		return nil, fail
	}
	defer resp.Body.Close()
	fail.Status = resp.StatusCode
	data, err := readLimited(resp, c.opts.MaxBodyBytes)
	if err != nil {
		if errors.Is(err, ErrBodyTooLarge) {
			fail.Code, fail.Err = CodeBodyTooLarge, fmt.Errorf("%w: over %d bytes", ErrBodyTooLarge, c.opts.MaxBodyBytes)
		} else {
			c.classify(ctx, st, fail, err)
		}
		return nil, fail
	}
	out := &Response{
		Status:   resp.StatusCode,
		Headers:  resp.Header,
		Body:     decodeBody(resp.Header.Get("Content-Type"), data),
		Attempts: st.attempts,
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return out, nil
	}
	fail.Code, fail.Err = CodeHTTPStatus, ErrStatus
	fail.Excerpt = excerpt(data, append(append(secretsOf(req.Request, u), r.Secrets...), st.hide...))
	if d, ok := retryAfter(resp.Header, c.now()); ok {
		fail.RetryAfter = d
	}
	return out, fail
}

// classify fills fail's code and error for a call that got no usable answer.
func (c *Client) classify(ctx context.Context, st *call, fail *Error, err error) {
	var te *TargetError
	switch {
	case ctx.Err() != nil:
		fail.Code, fail.Err = CodeCanceled, ctx.Err()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			fail.Code = CodeTimeout
		}
	case errors.As(err, &te):
		addr := te.Addr
		if len(st.hide) > 0 {
			addr = netip.Addr{} // what a secret name resolved to is not for an error either
		}
		fail.Code, fail.Err = CodeTargetNotAllowed, &TargetError{Host: fail.Host, Addr: addr, Reason: te.Reason}
	case isTimeout(err):
		fail.Code, fail.Err = CodeTimeout, ErrTimeout
	default:
		fail.Code, fail.Err = CodeConnection, errors.New(st.causeText(err))
	}
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// call is one Do's state, carried to the hooks in the request's context.
type call struct {
	retryable bool
	timeout   time.Duration
	started   time.Time
	attempts  []Attempt
	// hide is what an error must not quote when the URL is a secret (Request.URLName):
	// the URL, its host and its host name.
	hide []string
}

// causeText is the package's causeText with the addresses and names a secret URL led to
// left out (HiddenCause).
func (st *call) causeText(err error) string {
	if st == nil {
		return causeText(err)
	}
	return HiddenCause(err, st.hide)
}

// HiddenCause is why a request got no answer, for a request whose URL is a secret: without
// the URL (net/http's url.Error quotes it), the address dialled or the name looked up, and
// with each of hide (the URL, its host, its host name) redacted from what is left. With
// hide empty it is the cause with the URL left out only.
func HiddenCause(err error, hide []string) string {
	if len(hide) == 0 {
		return causeText(err)
	}
	var dns *net.DNSError
	var op *net.OpError
	var te *TargetError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return causeText(err)
	case errors.As(err, &te):
		return (&TargetError{Reason: te.Reason}).Error()
	case errors.As(err, &dns):
		return Redact("lookup: "+dns.Err, hide)
	case errors.As(err, &op) && op.Err != nil:
		return Redact(op.Op+": "+op.Err.Error(), hide)
	}
	return Redact(causeText(err), hide)
}

type callKey struct{}

func callOf(ctx context.Context) *call {
	st, _ := ctx.Value(callKey{}).(*call)
	return st
}

func startAttempt(_ retryablehttp.Logger, req *http.Request, _ int) {
	if st := callOf(req.Context()); st != nil {
		st.started = time.Now()
	}
}

// checkRetry records the attempt and says whether to make another: after a connection that
// was never made (any method); after a 429, a 5xx other than 501, or an error once the
// request may have been sent (idempotent methods, or when the call opted in); never after a
// refused target or a Retry-After longer than the client waits for.
func (c *Client) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	st := callOf(ctx)
	if st != nil {
		a := Attempt{Duration: time.Since(st.started)}
		if err != nil {
			a.Error = st.causeText(err)
		} else {
			a.Status = resp.StatusCode
		}
		st.attempts = append(st.attempts, a)
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	retryable := st == nil || st.retryable
	if err != nil {
		if errors.Is(err, ErrTargetNotAllowed) {
			return false, nil
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return true, nil // nothing was sent
		}
		var ue *url.Error
		if errors.As(err, &ue) && strings.HasPrefix(ue.Err.Error(), "net/http: invalid header") {
			return false, nil
		}
		return retryable, nil
	}
	if resp.StatusCode == http.StatusTooManyRequests ||
		(resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented) {
		if !retryable {
			return false, nil
		}
		if d, ok := retryAfter(resp.Header, c.now()); ok && d > c.opts.MaxRetryAfter {
			return false, nil
		}
		return true, nil
	}
	return false, nil
}

// backoff waits what Retry-After asks (checkRetry has refused waits over MaxRetryAfter),
// else min·2^n capped at max, less a random part of up to half, so many clients failing
// together do not come back together.
func (c *Client) backoff(lo, hi time.Duration, n int, resp *http.Response) time.Duration {
	if resp != nil {
		if d, ok := retryAfter(resp.Header, c.now()); ok {
			return d
		}
	}
	d := hi
	if n < 32 {
		if e := lo << n; e > 0 && e < hi {
			d = e
		}
	}
	return d - rand.N(d/2+1)
}

// retryAfter reads an answer's Retry-After by the one rule (internal/retryafter): seconds or
// an HTTP-date, a date in the past no wait, capped at retryafter.Max.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	return retryafter.Parse(h.Get("Retry-After"), now)
}

// attemptTimeout gives each attempt its own deadline, which covers reading the body too:
// the deadline ends when the body is closed.
type attemptTimeout struct{ next http.RoundTripper }

func (t attemptTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	st := callOf(req.Context())
	if st == nil || st.timeout <= 0 {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), st.timeout)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

func validMethod(m string) bool {
	if m == "" || len(m) > 32 {
		return false
	}
	for _, r := range m {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

// encodeBody returns the bytes to send and whether they are JSON this package encoded.
func encodeBody(body any) ([]byte, bool, error) {
	switch b := body.(type) {
	case nil:
		return nil, false, nil
	case []byte:
		return b, false, nil
	case string:
		return []byte(b), false, nil
	case json.RawMessage:
		return b, true, nil
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// readLimited reads the whole body, or fails with ErrBodyTooLarge past limit bytes.
func readLimited(resp *http.Response, limit int64) ([]byte, error) {
	if resp.ContentLength > limit {
		return nil, ErrBodyTooLarge
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	n, err := io.Copy(&buf, io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, ErrBodyTooLarge
	}
	return buf.Bytes(), nil
}

// decodeBody is the parsed JSON of a JSON body (declared so, or undeclared and parsing),
// else the text.
func decodeBody(contentType string, data []byte) any {
	if len(data) == 0 {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	if contentType == "" || mt == jsonMediaType || strings.HasSuffix(mt, "+json") {
		var v any
		if err := json.Unmarshal(data, &v); err == nil {
			return v
		}
	}
	return string(data)
}

// secretsOf lists what must not appear in an error: the request's header values, the URL's
// path, password and query values (those long enough to be secrets rather than words).
func secretsOf(req *http.Request, u *url.URL) []string {
	var out []string
	add := func(s string) {
		if len(s) >= minSecretLen {
			out = append(out, s)
		}
	}
	for name, vs := range req.Header {
		if notSecret[name] {
			continue
		}
		for _, v := range vs {
			add(v)
			// "Bearer <token>": the token alone too, in case the server echoes only it.
			if _, tok, ok := strings.Cut(v, " "); ok {
				add(tok)
			}
		}
	}
	// The path too: some (webhook URLs) are secrets whole.
	if u.Path != "/" {
		add(u.Path)
		add(u.EscapedPath())
	}
	if p, ok := u.User.Password(); ok {
		add(p)
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			add(v)
		}
	}
	return out
}

// notSecret lists the headers this package sets or that describe the body: blanking their
// values would only blank words such as "application/json" in an excerpt.
var notSecret = map[string]bool{"Content-Type": true, "Accept": true, "User-Agent": true, idempotencyHdr: true}

// excerpt is the start of a body on one line, with secrets blanked (Redact).
func excerpt(data []byte, secrets []string) string {
	s := Redact(string(data), secrets)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > excerptLen {
		cut := excerptLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
