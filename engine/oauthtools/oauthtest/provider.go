// Package oauthtest is a stand-in for the OAuth providers (Google, Slack, Microsoft) and
// their APIs, on one httptest server: an authorization server whose token endpoint checks
// the client credentials, the code and its redirect URI, and rotates refresh tokens; and
// API endpoints that check the bearer token and record every request. Tests of the engine
// and of the runtime use it; nothing else may.
package oauthtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcflow/svcflow/engine/oauthtools"
)

// Request is one API request the server received.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	// Token is the bearer token it carried ("" without one).
	Token          string
	IdempotencyKey string
	Body           map[string]any
}

// Provider is the fake; its exported fields may be set before use.
type Provider struct {
	URL string
	// ExpiresIn is the lifetime the token endpoint gives access tokens (default 1 hour).
	ExpiresIn time.Duration
	// RefreshDelay makes each refresh take that long (to let concurrent callers meet).
	RefreshDelay time.Duration
	// BeforeRefresh, when set, is called by each refresh request before it is answered: a
	// test can hold the refresh there until it has done what it must meanwhile.
	BeforeRefresh func()

	srv *httptest.Server

	mu        sync.Mutex
	clients   map[string]string // client id -> secret
	codes     map[string]grant  // code -> grant, single use
	access    map[string]string // valid access token -> client id
	refresh   map[string]string // valid refresh token -> client id
	refreshes int
	exchanges int
	requests  []Request
	secrets   []string // every token and code issued, for leak checks
	// refreshAsks counts refresh requests, answered or refused.
	refreshAsks int
}

type grant struct{ clientID, redirect string }

// New starts the fake for the test.
func New(t testing.TB) *Provider {
	p := &Provider{
		ExpiresIn: time.Hour,
		clients:   map[string]string{}, codes: map[string]grant{}, access: map[string]string{}, refresh: map[string]string{},
	}
	mux := http.NewServeMux()
	for _, name := range []string{oauthtools.Google, oauthtools.Slack, oauthtools.Microsoft} {
		mux.HandleFunc("POST /"+name+"/token", p.token(name))
	}
	mux.HandleFunc("POST /gmail/v1/users/me/messages/send", p.api(func(r Request) (int, any) {
		return 200, map[string]any{"id": "msg-1", "threadId": "thread-1", "labelIds": []string{"SENT"}}
	}))
	mux.HandleFunc("POST /sheets/v4/spreadsheets/{id}/values/{rest}", p.api(func(r Request) (int, any) {
		id := strings.TrimPrefix(r.Path, "/sheets/v4/spreadsheets/")
		id, rng, _ := strings.Cut(id, "/values/")
		rng = strings.TrimSuffix(rng, ":append")
		return 200, map[string]any{"spreadsheetId": id, "tableRange": rng, "updates": map[string]any{
			"spreadsheetId": id, "updatedRange": rng, "updatedRows": 1, "updatedCells": 3,
		}}
	}))
	mux.HandleFunc("POST /slack/api/chat.postMessage", p.api(func(r Request) (int, any) {
		if r.Body["channel"] == "C_MISSING" {
			return 200, map[string]any{"ok": false, "error": "channel_not_found"}
		}
		return 200, map[string]any{"ok": true, "channel": r.Body["channel"], "ts": "1700000000.000100",
			"message": map[string]any{"text": r.Body["text"], "type": "message"}}
	}))
	mux.HandleFunc("POST /graph/v1.0/teams/{team}/channels/{channel}/messages", p.api(func(r Request) (int, any) {
		return 201, map[string]any{"id": "1700000000000", "messageType": "message", "body": r.Body["body"],
			"channelIdentity": map[string]any{"teamId": r.Path, "channelId": ""}}
	}))
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	p.URL = p.srv.URL
	return p
}

// AuthURL and TokenURL of provider.
func (p *Provider) AuthURL(provider string) string  { return p.URL + "/" + provider + "/auth" }
func (p *Provider) TokenURL(provider string) string { return p.URL + "/" + provider + "/token" }

// APIs points the tools at the fake.
func (p *Provider) APIs() oauthtools.APIs {
	return oauthtools.APIs{Gmail: p.URL + "/gmail/v1", Sheets: p.URL + "/sheets/v4", Slack: p.URL + "/slack/api", Graph: p.URL + "/graph/v1.0"}
}

// AddClient registers an app.
func (p *Provider) AddClient(id, secret string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clients[id] = secret
}

// Consent is what the provider's consent page does when a person grants access: a code for
// the client, bound to the redirect URI of the authorization URL.
func (p *Provider) Consent(clientID, redirect string) string {
	code := "code-" + random()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.codes[code] = grant{clientID: clientID, redirect: redirect}
	p.secrets = append(p.secrets, code)
	return code
}

// AddTokens makes access (and refresh, when not "") valid for clientID, as if issued.
func (p *Provider) AddTokens(clientID, access, refresh string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.access[access] = clientID
	p.secrets = append(p.secrets, access)
	if refresh != "" {
		p.refresh[refresh] = clientID
		p.secrets = append(p.secrets, refresh)
	}
}

// Refreshes counts refresh grants served; Exchanges code grants.
func (p *Provider) Refreshes() int { p.mu.Lock(); defer p.mu.Unlock(); return p.refreshes }
func (p *Provider) Exchanges() int { p.mu.Lock(); defer p.mu.Unlock(); return p.exchanges }

// RefreshRequests is how many refresh requests from a known client the token endpoints
// received, including those whose refresh token was refused (Refreshes counts only the
// ones that issued a token).
func (p *Provider) RefreshRequests() int { p.mu.Lock(); defer p.mu.Unlock(); return p.refreshAsks }

// Requests returns the API requests received so far.
func (p *Provider) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

// Secrets returns every token and code the fake issued or was given.
func (p *Provider) Secrets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.secrets...)
}

// ValidAccess reports whether token is a current access token.
func (p *Provider) ValidAccess(token string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.access[token]
	return ok
}

func random() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// token is a token endpoint: client credentials in the form or in Basic auth.
func (p *Provider) token(provider string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			writeJSON(w, 400, map[string]string{"error": "invalid_request"})
			return
		}
		id, secret, basic := r.BasicAuth()
		if !basic {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		p.mu.Lock()
		want, known := p.clients[id]
		p.mu.Unlock()
		if !known || secret == "" || want != secret {
			writeJSON(w, 401, map[string]string{"error": "invalid_client", "error_description": "client authentication failed"})
			return
		}
		var issue bool
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			code := r.PostForm.Get("code")
			p.mu.Lock()
			g, ok := p.codes[code]
			delete(p.codes, code)
			p.mu.Unlock()
			if !ok || g.clientID != id || g.redirect != r.PostForm.Get("redirect_uri") {
				writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "bad code or redirect_uri"})
				return
			}
			p.mu.Lock()
			p.exchanges++
			p.mu.Unlock()
			issue = true
		case "refresh_token":
			p.mu.Lock()
			p.refreshAsks++
			p.mu.Unlock()
			if p.BeforeRefresh != nil {
				p.BeforeRefresh()
			}
			time.Sleep(p.RefreshDelay)
			rt := r.PostForm.Get("refresh_token")
			p.mu.Lock()
			owner, ok := p.refresh[rt]
			if ok && owner == id {
				delete(p.refresh, rt) // rotated: a refresh token works once
				p.refreshes++
			}
			p.mu.Unlock()
			if !ok || owner != id {
				writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "refresh token unknown or used"})
				return
			}
			issue = true
		}
		if !issue {
			writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		access, refresh := "at-"+provider+"-"+random(), "rt-"+provider+"-"+random()
		p.AddTokens(id, access, refresh)
		body := map[string]any{"access_token": access, "refresh_token": refresh, "token_type": "Bearer",
			"expires_in": int(p.ExpiresIn.Seconds()), "scope": "scope.a scope.b"}
		if provider == oauthtools.Slack {
			body["ok"], body["token_type"], body["scope"] = true, "bot", "chat:write,channels:read"
		}
		writeJSON(w, 200, body)
	}
}

// api checks the bearer token, records the request and answers with fn.
func (p *Provider) api(fn func(Request) (int, any)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), IdempotencyKey: r.Header.Get("Idempotency-Key")}
		req.Token, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		_ = json.Unmarshal(raw, &req.Body)
		p.mu.Lock()
		p.requests = append(p.requests, req)
		_, valid := p.access[req.Token]
		p.mu.Unlock()
		if !valid {
			// Some APIs echo what they were sent; the client must not let it through.
			writeJSON(w, 401, map[string]any{"error": map[string]any{"code": 401, "message": "invalid credentials: " + req.Token}})
			return
		}
		status, body := fn(req)
		writeJSON(w, status, body)
	}
}
