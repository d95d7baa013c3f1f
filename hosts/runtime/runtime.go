// Package runtime is the Huma API over the engine: every runtime route of the spec
// (workflows, runs, custom tables), its OpenAPI 3.1 document, and the one mapping of engine
// errors to problem+json answers. HTTP exists only in hosts: this package owns routing,
// request decoding and the X-Org-Id tenancy check, and must hold no business logic: every
// decision about workflows, runs and tables is the engine's.
package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/danielgtaylor/huma/v2/yaml"
	"github.com/go-chi/chi/v5"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/hosts/identity"
)

// OrgHeader is the header that names the organization of every tenant route.
const OrgHeader = "X-Org-Id"

// maxBodyBytes caps every request body at 10 MiB (Huma's MaxBodyBytes; larger bodies are
// answered 413 body_too_large). The spec leaves request size open; 10 MiB holds any
// workflow definition and any execute input a person would send inline, while documents
// have their own upload route.
const maxBodyBytes = 10 << 20

// Options tunes a Server.
type Options struct {
	// Logger receives request failures (the real error behind every 500). Default
	// slog.Default().
	Logger *slog.Logger
	// Version is the OpenAPI info.version: the release. Default "dev".
	Version string
	// IdentityKey is the key the gateway signs a signed-in person's identity token with
	// (hosts/identity, header X-Svc-Identity), at least 32 bytes. Without it no identity
	// is believed, so a form that requires sign-in takes no submission through this runtime.
	IdentityKey []byte
	// IdentityPreviousKeys are keys the gateway signed with before IdentityKey: tokens they
	// signed are still believed (a rotation, SVC_IDENTITY_KEY=new,old). The token's kid
	// picks the key.
	IdentityPreviousKeys [][]byte
	// LegacyCreateFromAI keeps POST /workflows/create-from-ai working (a draft published at
	// once as a process of the project "Legacy create-from-ai"); off, it answers 410.
	LegacyCreateFromAI bool
}

// Server is the runtime HTTP API over one engine.
type Server struct {
	eng    *engine.Engine
	log    *slog.Logger
	router chi.Router
	api    huma.API
	// identity verifies identity tokens from the gateway (Options.IdentityKey and
	// IdentityPreviousKeys); nil without a key, or with one too short to verify with.
	identity *identity.Keyring
	// legacyCreateFromAI: Options.LegacyCreateFromAI.
	legacyCreateFromAI bool
}

// New builds the runtime API over eng. Registration never touches eng, so New(nil, ...)
// yields a server whose OpenAPI document is complete (OpenAPIYAML does that).
func New(eng *engine.Engine, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{eng: eng, log: opts.Logger, legacyCreateFromAI: opts.LegacyCreateFromAI}
	if len(opts.IdentityKey) > 0 {
		s.identity, _ = identity.NewKeyring(opts.IdentityKey, opts.IdentityPreviousKeys...)
	}

	r := chi.NewRouter()
	r.Use(s.withLogger, s.recoverer, s.serveOpenAPI30)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, newProblem(http.StatusNotFound, codeNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if r.Match(chi.NewRouteContext(), m, req.URL.Path) {
				w.Header().Add("Allow", m)
			}
		}
		writeProblem(w, newProblem(http.StatusMethodNotAllowed, codeMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s", req.Method, req.URL.Path)))
	})

	cfg := huma.DefaultConfig("svcflow runtime", opts.Version)
	// No $schema links in bodies: the wire shape is exactly the documented one.
	cfg.CreateHooks = nil
	cfg.Formats = JSONFormats()
	cfg.Components.Schemas = NewRegistry()
	cfg.Info.Description = "The tenant-scoped runtime of svcflow: workflows, runs, registered actions, custom tables and webhook registrations. " +
		"Every route but /health, /healthz, /readyz, /oauth/callback (whose state names the organization) and the public form routes under /forms/public/ " +
		"(whose form id names it) takes the organization in the X-Org-Id header. " +
		"Errors are RFC 9457 problem+json bodies with a snake_case `code`."
	// Huma reads a definition as any object; the engine validates it (definitionRegistry).
	cfg.Components.Schemas = definitionRegistry{cfg.Components.Schemas}
	s.api = humachi.New(r, cfg)
	s.api.UseMiddleware(s.requireOrg)
	s.router = r

	s.registerHealth()
	RegisterProbes(s.api, "", s.log, func(ctx context.Context) error { return s.eng.Ready(ctx) })
	s.registerWorkflows()
	RegisterDefinitionSchema(s.api, "")
	s.registerRuns()
	s.registerRunOps()
	s.registerRunContext()
	s.registerTables()
	s.registerActions()
	s.registerDocuments()
	s.registerOrgConfig()
	s.registerOAuth()
	s.registerWebhooks()
	s.registerDeliveries()
	s.registerApprovals()
	s.registerForms()
	s.registerFeatures()
	s.registerExternalForms()
	s.registerAgents()
	s.registerStudio()
	declareBodyRefusals(s.api.OpenAPI())
	declareWebhookEvents(s.api.OpenAPI())
	TypeFormDocuments(s.api.OpenAPI(), formAnswers...)
	typeBundleDSL(s.api.OpenAPI())
	return s
}

// declareBodyRefusals declares, on every operation that takes a body, the two answers any
// body can get before its route sees it: 413 body_too_large (past the operation's limit)
// and 415 unsupported_media_type (not the content type it reads). Each is a problem like
// the operation's 400.
func declareBodyRefusals(o *huma.OpenAPI) {
	for _, item := range o.Paths {
		for _, op := range []*huma.Operation{item.Post, item.Put, item.Patch} {
			if op == nil || op.RequestBody == nil || op.Responses["400"] == nil {
				continue
			}
			for status, text := range map[int]string{
				http.StatusRequestEntityTooLarge: "Request Entity Too Large",
				http.StatusUnsupportedMediaType:  "Unsupported Media Type",
			} {
				code := strconv.Itoa(status)
				if op.Responses[code] == nil {
					op.Responses[code] = &huma.Response{Description: text, Content: op.Responses["400"].Content}
				}
			}
		}
	}
}

// NewRegistry is the schema registry of the runtime's and the gateway's documents: the
// contract's names (SchemaName) and its status sets (RegisterStatusSchemas).
func NewRegistry() huma.Registry {
	r := huma.NewMapRegistry("#/components/schemas/", SchemaName)
	RegisterStatusSchemas(r)
	return r
}

// Handler is the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.router }

// API is the Huma API, for its OpenAPI document and for tests that walk the routes.
func (s *Server) API() huma.API { return s.api }

// OpenAPIYAML returns the runtime's OpenAPI 3.1 document as YAML, with info.version set to
// version. It needs no engine: `svcflow openapi` and the drift test call it.
func OpenAPIYAML(version string) ([]byte, error) {
	return New(nil, Options{Version: version}).API().OpenAPI().YAML()
}

// OpenAPI30YAML returns the same document downgraded by Huma to OpenAPI 3.0.3 (type arrays
// with "null" become nullable, numeric exclusive bounds become boolean ones), for tools that
// read 3.0 only, such as client generators. finishDowngrade does what Huma's downgrade
// leaves out.
func OpenAPI30YAML(version string) ([]byte, error) {
	_, doc, err := downgrade(New(nil, Options{Version: version}).API().OpenAPI())
	return doc, err
}

// DowngradeYAML returns o as OpenAPI 3.0.3 in YAML, finished as the runtime's own 3.0
// document is: the gateway's integrator document is downgraded by it too.
func DowngradeYAML(o *huma.OpenAPI) ([]byte, error) {
	_, doc, err := downgrade(o)
	return doc, err
}

// downgrade returns o as OpenAPI 3.0.3, in JSON and in YAML.
func downgrade(o *huma.OpenAPI) (jsonDoc, yamlDoc []byte, err error) {
	b, err := o.Downgrade()
	if err != nil {
		return nil, nil, err
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, err
	}
	finishDowngrade(doc, false)
	// 3.0 has no webhooks: the payloads' schemas stay in components.
	if m, ok := doc.(map[string]any); ok {
		delete(m, "webhooks")
	}
	if jsonDoc, err = json.Marshal(doc); err != nil {
		return nil, nil, err
	}
	var out bytes.Buffer
	if err := yaml.Convert(&out, bytes.NewReader(jsonDoc)); err != nil {
		return nil, nil, err
	}
	return jsonDoc, out.Bytes(), nil
}

// serveOpenAPI30 answers GET /openapi-3.0.json and /openapi-3.0.yaml with downgrade's
// document, before Huma's own routes for them, which serve its downgrade unfinished: a
// client that reads the 3.0 document from a runtime gets what openapi/openapi-3.0.yaml holds.
func (s *Server) serveOpenAPI30(next http.Handler) http.Handler {
	var (
		once             sync.Once
		jsonDoc, yamlDoc []byte
		err              error
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || (r.URL.Path != "/openapi-3.0.json" && r.URL.Path != "/openapi-3.0.yaml") {
			next.ServeHTTP(w, r)
			return
		}
		once.Do(func() { jsonDoc, yamlDoc, err = downgrade(s.api.OpenAPI()) })
		if err != nil {
			writeProblem(w, newProblem(http.StatusInternalServerError, codeInternal, "the OpenAPI 3.0 document could not be made"))
			return
		}
		if r.URL.Path == "/openapi-3.0.json" {
			w.Header().Set("Content-Type", "application/openapi+json")
			_, _ = w.Write(jsonDoc)
			return
		}
		w.Header().Set("Content-Type", "application/openapi+yaml")
		_, _ = w.Write(yamlDoc)
	})
}

// finishDowngrade rewrites what OpenAPI 3.0 does not have, which validators (kin-openapi,
// Redocly) refuse: a $ref stands alone in 3.0, so {$ref, description} becomes
// {allOf: [{$ref}], description}; contentMediaType and contentEncoding are JSON Schema
// keywords of 3.1 (Huma puts them beside format: binary on a file, which is all 3.0 says).
// names is true for a properties map, whose keys are property names, not keywords.
func finishDowngrade(v any, names bool) {
	switch v := v.(type) {
	case map[string]any:
		if !names {
			if ref, isRef := v["$ref"]; isRef && len(v) > 1 {
				delete(v, "$ref")
				v["allOf"] = []any{map[string]any{"$ref": ref}}
			}
			delete(v, "contentMediaType")
			delete(v, "contentEncoding")
		}
		for k, e := range v {
			finishDowngrade(e, !names && k == "properties")
		}
	case []any:
		for _, e := range v {
			finishDowngrade(e, false)
		}
	}
}

// op fills what every operation shares.
func op(id, method, path, summary string, tags ...string) huma.Operation {
	return huma.Operation{
		OperationID:  id,
		Method:       method,
		Path:         path,
		Summary:      summary,
		Tags:         tags,
		MaxBodyBytes: maxBodyBytes,
	}
}

// OrgParam is embedded in every tenant input: it documents X-Org-Id on the operation.
// requireOrg has checked it before any parsing, so handlers trust it.
type OrgParam struct {
	OrgID string `header:"X-Org-Id" required:"true" minLength:"1" maxLength:"128" pattern:"^[A-Za-z0-9_.:-]+$" doc:"Organization id: 1-128 characters of [A-Za-z0-9_.:-]."`
}

// requireOrg answers 401 missing_org / 400 invalid_org before Huma reads a parameter or a
// body, for every operation that declares X-Org-Id (every one but the health routes and
// the public ones).
func (s *Server) requireOrg(ctx huma.Context, next func(huma.Context)) {
	if !declaresOrg(ctx.Operation()) {
		next(ctx)
		return
	}
	var p *Problem
	r, _ := humachi.Unwrap(ctx)
	switch org := ctx.Header(OrgHeader); {
	case r != nil && len(r.Header.Values(OrgHeader)) > 1:
		// Two organizations named: which one a proxy or the route would read is anyone's
		// guess, so none is.
		p = newProblem(http.StatusBadRequest, codeInvalidOrg, "exactly one X-Org-Id header is allowed",
			&ProblemDetail{Location: "header." + OrgHeader, Message: "more than one organization id"})
	case org == "":
		p = newProblem(http.StatusUnauthorized, codeMissingOrg, "the X-Org-Id header is required")
	case !engine.ValidOrgID(org):
		p = newProblem(http.StatusBadRequest, codeInvalidOrg, "X-Org-Id must be 1-128 characters of [A-Za-z0-9_.:-]",
			&ProblemDetail{Location: "header." + OrgHeader, Message: "invalid organization id"})
	}
	if p == nil {
		next(ctx)
		return
	}
	ctx.SetHeader("Content-Type", "application/problem+json")
	ctx.SetStatus(p.Status)
	_ = huma.DefaultJSONFormat.Marshal(ctx.BodyWriter(), p)
}

func declaresOrg(o *huma.Operation) bool {
	for _, p := range o.Parameters {
		if p.In == "header" && http.CanonicalHeaderKey(p.Name) == OrgHeader {
			return true
		}
	}
	return false
}

type loggerKey struct{}

// requestLog is the request's logger, made the first time a line is logged: most requests
// log nothing, and slog's With renders its attributes at once (a buffer a request).
type requestLog struct {
	base                *slog.Logger
	method, path, orgID string
	once                sync.Once
	l                   *slog.Logger
}

func (rl *requestLog) logger() *slog.Logger {
	rl.once.Do(func() {
		rl.l = rl.base.With("method", rl.method, "path", rl.path)
		if rl.orgID != "" {
			rl.l = rl.l.With("org_id", rl.orgID)
		}
	})
	return rl.l
}

// withLogger hands the server's logger to code that only sees the request context (Huma's
// error constructor): its lines name the request (method, path) and the organization it
// claims (X-Org-Id, cut to the header's longest valid value).
func (s *Server) withLogger(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rl := &requestLog{base: s.log, method: r.Method, path: r.URL.Path}
		if org := r.Header.Get(OrgHeader); org != "" {
			rl.orgID = org[:min(len(org), 128)]
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), loggerKey{}, rl)))
	})
}

// loggerFrom is the request's logger (withLogger), or fallback outside a request.
func loggerFrom(ctx context.Context, fallback *slog.Logger) *slog.Logger {
	if rl, ok := ctx.Value(loggerKey{}).(*requestLog); ok {
		return rl.logger()
	}
	return fallback
}

// recoverer turns a panic into a logged 500 problem instead of a dropped connection.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				loggerFrom(r.Context(), s.log).ErrorContext(r.Context(), "panic serving request", "panic", v)
				writeProblem(w, newProblem(http.StatusInternalServerError, codeInternal, "internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// Health is the answer of GET /health.
type Health struct {
	Status string `json:"status" enum:"ok" example:"ok" doc:"Always ok when the process serves requests."`
}

func (s *Server) registerHealth() {
	register(s, op("health", http.MethodGet, "/health", "Liveness check (no X-Org-Id)", "Health"), failure{}, s.health)
}

func (s *Server) health(context.Context, *struct{}) (*answer[Health], error) {
	return &answer[Health]{Body: Health{Status: "ok"}}, nil
}
