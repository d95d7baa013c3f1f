package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/svcflow/svcflow/hosts/identity"
)

// The console (/console): a page and its native ES modules (web/console/*.js), no build step, that read an organization's
// runs, tasks and webhook deliveries through public routes only. Signed in with a
// management token it reads any organization of the account through
// /console/api/orgs/{orgId}/..., a read-mostly window onto the runtime routes listed in
// consoleRoutes; signed in with an SDK session it shows the person's task inbox
// (/sdk/tasks).

// consoleRoutes are the runtime routes the console may reach for an organization.
var consoleRoutes = []struct {
	method string
	path   *regexp.Regexp
}{
	{http.MethodGet, regexp.MustCompile(`^/runs$`)},
	{http.MethodGet, regexp.MustCompile(`^/runs/[^/]+/(status|evidence|events|retry-plan)$`)},
	{http.MethodGet, regexp.MustCompile(`^/runs/[^/]+/context/[^/]+$`)}, // a large value paged
	{http.MethodPost, regexp.MustCompile(`^/runs/[^/]+/(cancel|retry)$`)},
	{http.MethodGet, regexp.MustCompile(`^/agents/[^/]+/trace$`)}, // an agent step's reasoning
	{http.MethodGet, regexp.MustCompile(`^/workflows$`)},
	{http.MethodGet, regexp.MustCompile(`^/webhooks$`)},
	{http.MethodGet, regexp.MustCompile(`^/webhooks/[^/]+/deliveries$`)},
	{http.MethodGet, regexp.MustCompile(`^/deliveries/[^/]+$`)},
	{http.MethodGet, regexp.MustCompile(`^/approvals$`)},
	{http.MethodGet, regexp.MustCompile(`^/approvals/[^/]+$`)}, // a run's pending approval
	{http.MethodGet, regexp.MustCompile(`^/forms/pending$`)},
	{http.MethodGet, regexp.MustCompile(`^/forms/[^/]+/[0-9]+$`)},
	{http.MethodPost, regexp.MustCompile(`^/approvals/[^/]+/[0-9]+$`)},
	{http.MethodPost, regexp.MustCompile(`^/forms/[^/]+/[0-9]+/submit$`)},
	// Operations on many runs (issue 34).
	{http.MethodGet, regexp.MustCompile(`^/run-operations$`)},
	{http.MethodPost, regexp.MustCompile(`^/run-operations$`)},
	{http.MethodGet, regexp.MustCompile(`^/run-operations/[^/]+$`)},
	// The workflows, tables, documents, webhooks, agents and forms pages.
	{http.MethodGet, regexp.MustCompile(`^/workflows/[^/]+$`)}, // ?version=N: an earlier version, to compare
	{http.MethodGet, regexp.MustCompile(`^/custom-tables$`)},
	{http.MethodGet, regexp.MustCompile(`^/custom-tables/[^/]+/rows$`)},
	{http.MethodGet, regexp.MustCompile(`^/documents$`)},
	{http.MethodGet, regexp.MustCompile(`^/documents/[^/]+(/content)?$`)},
	{http.MethodGet, regexp.MustCompile(`^/webhooks/[^/]+$`)},
	{http.MethodPost, regexp.MustCompile(`^/deliveries/[^/]+/redeliver$`)},
	{http.MethodGet, regexp.MustCompile(`^/agents$`)},
	{http.MethodGet, regexp.MustCompile(`^/agents/[^/]+/status$`)},
	{http.MethodGet, regexp.MustCompile(`^/external-forms$`)},
	{http.MethodGet, regexp.MustCompile(`^/external-forms/[^/]+(/submissions)?$`)},
}

func consoleAllows(method, path string) bool {
	for _, r := range consoleRoutes {
		if r.method == method && r.path.MatchString(path) {
			return true
		}
	}
	return false
}

// consoleModule is the name of one of the console's scripts (web/console/<name>.js).
var consoleModule = regexp.MustCompile(`^/console/([a-z][a-z0-9-]*)\.js$`)

// registerConsole serves the console's page, its scripts and its window onto the runtime.
// The console's URLs are real paths (/console/runs/<id>, /console/tasks?...): every GET
// under /console that is not one of its scripts answers the page, so a reload or a link
// shared lands where it points.
func (s *Server) registerConsole() {
	page := func(w http.ResponseWriter, r *http.Request) {
		if m := consoleModule.FindStringSubmatch(r.URL.Path); m != nil {
			b, err := webFS.ReadFile("web/console/" + m[1] + ".js")
			if err != nil {
				writeProblem(w, http.StatusNotFound, "not_found", "the console has no script "+m[1]+".js")
				return
			}
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			_, _ = w.Write(b)
			return
		}
		if strings.HasSuffix(r.URL.Path, ".js") {
			writeProblem(w, http.StatusNotFound, "not_found", "the console has no script "+r.URL.Path)
			return
		}
		b, _ := webFS.ReadFile("web/console.html")
		pageHeaders(w, nil) // decides approvals: framed by no page, this origin's neither
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(b)
	}
	s.router.Get("/console", page)
	s.router.Get("/console/*", page)
	s.router.HandleFunc("/console/api/orgs/{orgId}/*", s.consoleAPI)
}

// consoleAPI forwards an allowed runtime route for an organization of the management
// token's account. A decision, a form submit, a cancel or a retry is the account holder's:
// the runtime records their email.
func (s *Server) consoleAPI(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a, err := s.account(ctx, r.Header.Get("Authorization"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	orgID := chi.URLParam(r, "orgId")
	if _, err := s.store.GetGatewayOrg(ctx, a.ID, orgID); err != nil {
		s.writeErr(w, r, s.fail(ctx, err, "organization not found"))
		return
	}
	rest := "/" + chi.URLParam(r, "*")
	if strings.Contains(rest, "..") || strings.Contains(rest, "//") || !consoleAllows(r.Method, rest) {
		writeProblem(w, http.StatusNotFound, "not_found", fmt.Sprintf("the console does not reach %s %s", r.Method, rest))
		return
	}
	if s.proxy == nil {
		writeProblem(w, http.StatusBadGateway, "runtime_unreachable", "this gateway has no runtime")
		return
	}
	var body io.Reader = http.NoBody
	if r.Method == http.MethodPost {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			writeProblem(w, http.StatusRequestEntityTooLarge, "body_too_large", "the body is over 1 MB")
			return
		}
		body = bytes.NewReader(b) // a known length, which a reverse proxy keeps
	}
	u := &url.URL{Path: rest, RawQuery: r.URL.RawQuery}
	req, err := http.NewRequestWithContext(runtimeContext(ctx), r.Method, u.String(), body)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Org-Id", orgID)
	if r.Method == http.MethodPost {
		tok, err := s.mint(orgID, a.Email)
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		if tok != "" {
			req.Header.Set(identity.Header, tok)
		}
		req.Header.Set("X-Actor-Id", a.Email) // a cancel or a retry names who did it
	}
	s.proxy.ServeHTTP(w, req)
}
