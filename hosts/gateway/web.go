package gateway

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"

	"github.com/svcflow/svcflow/engine"
)

// The browser half: the SDK script (/sdk/v1.js), the hosted form page (/forms/{formId})
// and sign-in on a hosted form. Everything is served from this origin: the page fetches
// nothing from another (but the form's own https logo, which it does without).

//go:embed web/sdk.js web/page.html web/console.html web/console
var webFS embed.FS

// sdkAsset is the SDK script with its content hash, gzipped once.
type sdkAsset struct {
	body, gz []byte
	hash     string
}

func loadSDK() sdkAsset {
	b, err := webFS.ReadFile("web/sdk.js")
	if err != nil {
		panic(err) // embedded at build time
	}
	sum := sha256.Sum256(b)
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	return sdkAsset{body: b, gz: gz.Bytes(), hash: hex.EncodeToString(sum[:])[:16]}
}

var pageTmpl = template.Must(template.ParseFS(webFS, "web/page.html"))

// SDKPath is the content-addressed path of the SDK script (cached for a year).
func (s *Server) SDKPath() string { return "/sdk/v1." + s.sdk.hash + ".js" }

// serveSDK answers the SDK script: at /sdk/v1.js with a short cache and its ETag, at its
// content-hashed path for a year, immutable; gzipped when the client takes it.
func (s *Server) serveSDK(w http.ResponseWriter, r *http.Request, immutable bool) {
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	gz := acceptsGzip(r.Header.Get("Accept-Encoding"))
	etag := `"` + s.sdk.hash + `"`
	if gz {
		etag = `"` + s.sdk.hash + `-gzip"` // each encoding its own tag
	}
	h.Set("ETag", etag)
	h.Set("Vary", "Accept-Encoding")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Access-Control-Allow-Origin", "*")
	if immutable {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "public, max-age=300")
	}
	if noneMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := s.sdk.body
	if gz {
		h.Set("Content-Encoding", "gzip")
		body = s.sdk.gz
	}
	h.Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// acceptsGzip reads Accept-Encoding: gzip (or *) with a q above 0.
func acceptsGzip(v string) bool {
	for _, part := range strings.Split(v, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "gzip" && name != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.ToLower(params), " ", "")
		if strings.HasPrefix(q, "q=0") && strings.Trim(strings.TrimPrefix(q, "q="), "0.") == "" {
			return false
		}
		return true
	}
	return false
}

// noneMatch reports whether If-None-Match names etag (weakly compared, lists and * too).
func noneMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

var hexColour = regexp.MustCompile(`^#(?:[0-9a-fA-F]{3}){1,2}$`)

// hostedForm is what the page template shows.
type hostedForm struct {
	Title, Description, Brand, Logo, Footer, Accent, Theme string
	HidePoweredBy                                          bool
	FormID, Base, SDK                                      string
	FormJSON                                               template.JS
}

// servePage renders the hosted page of a public form.
func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	formID := chi.URLParam(r, "formId")
	if _, ok := engine.ExternalFormOrg(formID); !ok {
		// /forms/pending and the like are runtime routes.
		s.forward(w, r)
		return
	}
	if ok, wait := s.allowVisitor(r, formID, "read"); !ok {
		s.pageError(w, http.StatusTooManyRequests, "Too many requests", fmt.Sprintf("This form was opened too often from your address. Try again in %d s.", secondsOf(wait)), wait)
		return
	}
	bw := &bufferWriter{header: http.Header{}}
	req, err := http.NewRequestWithContext(runtimeContext(r.Context()), http.MethodGet, "/forms/public/"+url.PathEscape(formID), nil)
	if err != nil || s.proxy == nil {
		s.pageError(w, http.StatusBadGateway, "Unavailable", "The form cannot be shown right now.", 0)
		return
	}
	s.proxy.ServeHTTP(bw, req)
	if bw.status == 0 {
		bw.status = http.StatusOK
	}
	if bw.status != http.StatusOK {
		if bw.status == http.StatusNotFound {
			s.pageError(w, http.StatusNotFound, "Form not found", "This form does not exist, or it is not public.", 0)
			return
		}
		s.pageError(w, http.StatusBadGateway, "Unavailable", "The form cannot be shown right now.", 0)
		return
	}
	s.formShown(r, formID, "read")
	var f struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		Description string `json:"description"`
		Settings    struct {
			FrameAncestors []string `json:"frameAncestors"`
			Branding       struct {
				Name          string `json:"name"`
				LogoURL       string `json:"logoUrl"`
				Accent        string `json:"accent"`
				Footer        string `json:"footer"`
				HidePoweredBy bool   `json:"hidePoweredBy"`
			} `json:"branding"`
		} `json:"settings"`
	}
	if err := json.Unmarshal(bw.body.Bytes(), &f); err != nil {
		s.pageError(w, http.StatusBadGateway, "Unavailable", "The form cannot be shown right now.", 0)
		return
	}
	// The form goes into the page as JSON (json.Marshal escapes <, > and &, so it cannot
	// end the script element), sparing the page a second request.
	compact := &bytes.Buffer{}
	if err := json.Compact(compact, bw.body.Bytes()); err != nil {
		s.pageError(w, http.StatusBadGateway, "Unavailable", "The form cannot be shown right now.", 0)
		return
	}
	var raw json.RawMessage = compact.Bytes()
	formJSON, _ := json.Marshal(raw)
	b := f.Settings.Branding
	p := hostedForm{Title: f.Name, Description: f.Description, Brand: b.Name, Footer: b.Footer, HidePoweredBy: b.HidePoweredBy,
		Accent: "#2457c5", Theme: "auto", FormID: f.ID, SDK: s.SDKPath(), FormJSON: template.JS(formJSON)}
	if u, err := url.Parse(b.LogoURL); err == nil && u.Scheme == "https" && u.Host != "" {
		p.Logo = u.String()
	}
	if hexColour.MatchString(b.Accent) {
		p.Accent = b.Accent
	}
	switch r.URL.Query().Get("theme") {
	case "dark", "light":
		p.Theme = r.URL.Query().Get("theme")
	}
	var out bytes.Buffer
	if err := pageTmpl.Execute(&out, p); err != nil {
		s.log.ErrorContext(r.Context(), "hosted page failed", "err", err)
		s.pageError(w, http.StatusInternalServerError, "Error", "The form cannot be shown right now.", 0)
		return
	}
	pageHeaders(w, f.Settings.FrameAncestors)
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(out.Bytes())
}

// pageHeaders: the page loads scripts and data from this origin only; styles are its own
// and the SDK's (inline); images from this origin or https (the form's logo). Only the
// pages of frameAncestors may show it in a frame (engine.FrameAncestor reads each; one it
// does not read is left out); none may without one: a page that takes a person's input or
// decision cannot be laid under another site's clicks.
func pageHeaders(w http.ResponseWriter, frameAncestors []string) {
	var origins []string
	for _, raw := range frameAncestors {
		if o, ok := engine.FrameAncestor(raw); ok {
			origins = append(origins, o)
		}
	}
	h := w.Header()
	frame := "'none'"
	if len(origins) > 0 {
		// X-Frame-Options cannot name origins (ALLOW-FROM is gone from browsers): the CSP,
		// which every browser that frames honours, is the rule then.
		frame = strings.Join(origins, " ")
	} else {
		h.Set("X-Frame-Options", "DENY") // for browsers that predate frame-ancestors
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' https: data:; "+
		"connect-src 'self'; frame-ancestors "+frame+"; base-uri 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

var errorPage = template.Must(template.New("error").Parse(`<!doctype html><html lang="en"><head><meta charset="utf-8">` +
	`<meta name="viewport" content="width=device-width, initial-scale=1"><title>{{.Title}}</title>` +
	`<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem}</style></head>` +
	`<body><main><h1>{{.Title}}</h1><p role="alert">{{.Text}}</p></main></body></html>`))

// pageError answers a hosted page's failure with a page that nothing may frame: it shows
// no form, so the form's frameAncestors do not apply (an embedding site's frame shows the
// browser's refusal instead).
func (s *Server) pageError(w http.ResponseWriter, status int, title, text string, retry time.Duration) {
	pageHeaders(w, nil)
	if retry > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(secondsOf(retry)))
	}
	w.WriteHeader(status)
	_ = errorPage.Execute(w, struct{ Title, Text string }{title, text})
}

// registerWeb serves the SDK, the hosted page and sign-in on a hosted form.
func (s *Server) registerWeb() {
	stable := func(w http.ResponseWriter, r *http.Request) { s.serveSDK(w, r, false) }
	hashed := func(w http.ResponseWriter, r *http.Request) {
		if chi.URLParam(r, "hash") != s.sdk.hash {
			writeProblem(w, http.StatusNotFound, "not_found", "no such SDK version: use /sdk/v1.js")
			return
		}
		s.serveSDK(w, r, true)
	}
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		s.router.MethodFunc(m, "/sdk/v1.js", stable)
		s.router.MethodFunc(m, "/sdk/v1.{hash}.js", hashed)
		s.router.MethodFunc(m, "/forms/{formId}", s.servePage)
	}

	o := huma.Operation{OperationID: "form-auth-start", Method: http.MethodPost, Path: "/forms/public/{formId}/auth/start",
		Summary: "Send a sign-in code for a form that requires sign-in", Tags: []string{"Forms"}, DefaultStatus: http.StatusAccepted, MaxBodyBytes: 1 << 12,
		Description: "For a public form: mails a one-time code (as POST /sdk/auth/start) for the form's organization, with no key. " +
			"The session POST .../auth/verify gives is sent as Authorization: Bearer on the form's submit."}
	o = publicOp(o, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusServiceUnavailable)
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		PublicFormPath
		Body struct {
			Email string `json:"email" maxLength:"254"`
		}
	}) (*struct{ Body CodeSent }, error) {
		org, err := s.publicFormOrg(ctx, in.FormID)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		if err := s.startSignIn(ctx, org, "", in.FormID, in.Body.Email); err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return codeSent(), nil
	})

	o = huma.Operation{OperationID: "form-auth-verify", Method: http.MethodPost, Path: "/forms/public/{formId}/auth/verify",
		Summary: "Sign in to a form with the code", Tags: []string{"Forms"}, MaxBodyBytes: 1 << 12}
	o = publicOp(o, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusTooManyRequests)
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		PublicFormPath
		Body struct {
			Email string `json:"email" maxLength:"254"`
			Code  string `json:"code" maxLength:"12"`
		}
	}) (*struct{ Body SignedIn }, error) {
		org, err := s.publicFormOrg(ctx, in.FormID)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		out, err := s.verifySignIn(ctx, org, in.FormID, in.Body.Email, in.Body.Code)
		if err != nil {
			return nil, s.fail(ctx, err, "")
		}
		return &struct{ Body SignedIn }{Body: *out}, nil
	})
}

// publicFormOrg is the organization of a public form that exists (404 otherwise), and
// takes a token of the visitor's sign-in bucket.
func (s *Server) publicFormOrg(ctx context.Context, formID string) (string, error) {
	org, ok := engine.ExternalFormOrg(formID)
	notFound := newProblem(http.StatusNotFound, "not_found", "no public form with this id")
	if !ok || s.proxy == nil {
		return "", notFound
	}
	if r, ok := ctx.Value(requestKey{}).(*http.Request); ok {
		if allowed, wait := s.allowVisitor(r, formID, "auth"); !allowed {
			return "", rateLimited(wait, "too many sign-in requests for this form from this address")
		}
	}
	bw := &bufferWriter{header: http.Header{}}
	req, err := http.NewRequestWithContext(runtimeContext(ctx), http.MethodGet, "/forms/public/"+url.PathEscape(formID), nil)
	if err != nil {
		return "", err
	}
	s.proxy.ServeHTTP(bw, req)
	if bw.status != 0 && bw.status != http.StatusOK {
		return "", notFound
	}
	if r, ok := ctx.Value(requestKey{}).(*http.Request); ok {
		s.formShown(r, formID, "auth")
	}
	var f struct {
		Settings struct {
			RequireAuth bool `json:"requireAuth"`
		} `json:"settings"`
	}
	if err := json.Unmarshal(bw.body.Bytes(), &f); err != nil {
		return "", err
	}
	if !f.Settings.RequireAuth {
		return "", newProblem(http.StatusConflict, "signin_not_required", "this form takes submissions without sign-in: no code is sent for it")
	}
	return org, nil
}

func secondsOf(d time.Duration) int { return int(d.Seconds()) + 1 }

// PublicFormPath names a public form.
type PublicFormPath struct {
	FormID string `path:"formId" maxLength:"256"`
}

// requestKey carries the *http.Request in a Huma handler's context (visitor limits).
type requestKey struct{}
