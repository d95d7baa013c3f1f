package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/engine"
)

// Problem is every error body the runtime writes: RFC 9457 problem details plus Code, a
// snake_case name for programs to switch on (DESIGN.md, "error body").
type Problem struct {
	Type     string           `json:"type,omitempty" format:"uri" default:"about:blank" doc:"A URI reference to documentation for the problem type."`
	Title    string           `json:"title" example:"Not Found" doc:"Short summary of the problem type (the status text)."`
	Status   int              `json:"status" example:"404" doc:"HTTP status code."`
	Code     string           `json:"code" example:"not_found" doc:"Machine-readable problem code: not_found, conflict, validation_failed, target_not_allowed, malformed_json, invalid_utf8, missing_org, invalid_org, invalid_cursor, method_not_allowed, unsupported_media_type, body_too_large, internal, ..."`
	Detail   string           `json:"detail,omitempty" example:"workflow not found" doc:"Explanation specific to this occurrence."`
	Instance string           `json:"instance,omitempty" format:"uri" doc:"A URI reference identifying this occurrence."`
	Errors   []*ProblemDetail `json:"errors,omitempty" nullable:"false" doc:"Individual problems, each located in the request."`
}

// ProblemDetail is one located problem of a request.
type ProblemDetail struct {
	// Location is where in the request: "body.definition.actions[2].properties",
	// "query.where", "header.X-Org-Id".
	Location string `json:"location,omitempty" doc:"Where in the request: body.<path>, query.<name>, header.<name>, path.<name>."`
	// Pointer is the RFC 6901 JSON pointer into the request body, set for body problems.
	Pointer string `json:"pointer,omitempty" doc:"JSON pointer (RFC 6901) into the request body, for body problems."`
	Message string `json:"message" doc:"What is wrong."`
	Value   any    `json:"value,omitempty" doc:"The offending value, when it is short."`
}

func (p *Problem) Error() string  { return p.Detail }
func (p *Problem) GetStatus() int { return p.Status }

// ContentType makes Huma write problems as application/problem+json.
func (p *Problem) ContentType(ct string) string {
	if ct == "application/json" {
		return "application/problem+json"
	}
	return ct
}

// Problem codes. The DESIGN.md list is the shared vocabulary; the ones below are those the
// runtime host can produce.
const (
	codeNotFound         = "not_found"
	codeConflict         = "conflict"
	codeValidation       = "validation_failed"
	codeMalformedJSON    = "malformed_json"
	codeMissingOrg       = "missing_org"
	codeInvalidOrg       = "invalid_org"
	codeMethodNotAllowed = "method_not_allowed"
	codeUnsupportedMedia = "unsupported_media_type"
	codeBodyTooLarge     = "body_too_large"
	codeInvalidCursor    = "invalid_cursor"
	codeMasterKeyMissing = "master_key_missing"
	codeInternal         = "internal"
)

func newProblem(status int, code, detail string, details ...*ProblemDetail) *Problem {
	return &Problem{Title: http.StatusText(status), Status: status, Code: code, Detail: detail, Errors: details}
}

// failure is what a route says about its errors that the errors do not say themselves:
// the words of its 404 and 409, and where a problem's pointer points. A route declares it
// once, where it is registered (register); problemFor reads it.
type failure struct {
	// notFound names the missing resource ("workflow not found").
	notFound string
	// noKey is the 404 of a resource that is there without the key asked for
	// (ErrNoContextKey: "the run has no context key \"x\""); notFound when empty.
	noKey string
	// conflict explains a 409 in the route's words ("a workflow with this name exists").
	conflict string
	// conflictSaid: a 409's detail is the engine's own words after "conflict: " (the
	// studio's, which name the process, table or action in the way) instead of conflict.
	conflictSaid bool
	// tooLarge is the 413 of a body past the route's limit (an *http.MaxBytesError).
	tooLarge string
	// in is where engine problem pointers point: "body" (default) or "query".
	in string
}

// register registers h as the operation o, its errors answered through problemFor in the
// route's words f: a handler returns what the engine returned, and problemFor is the one
// place it becomes a status and a code. A handler that has more specific words for one of
// its calls maps that error itself (s.fail); a *Problem goes through as it is.
func register[I, O any](s *Server, o huma.Operation, f failure, h func(context.Context, *I) (*O, error)) {
	huma.Register(s.api, o, func(ctx context.Context, in *I) (*O, error) {
		out, err := h(ctx, in)
		if err != nil {
			return nil, s.fail(ctx, err, f)
		}
		return out, nil
	})
}

// fail maps err in the words f (see problemFor).
func (s *Server) fail(ctx context.Context, err error, f failure) error {
	return s.problem(ctx, err, f)
}

// problem is fail for code that writes the answer itself (a middleware).
func (s *Server) problem(ctx context.Context, err error, f failure) *Problem {
	return problemFor(ctx, loggerFrom(ctx, s.log), err, f)
}

// problemFor is the one place an engine or store error becomes an HTTP answer: the
// engine's sentinels and typed errors get their status and code (knownProblem); anything
// else is a 500 whose real cause is logged and never returned.
func problemFor(ctx context.Context, log *slog.Logger, err error, f failure) *Problem {
	if p := knownProblem(err, f); p != nil {
		return p
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// The client went away; the answer will not be read, but there is nothing to alarm about.
		log.InfoContext(ctx, "request cancelled", "err", err)
	} else {
		log.ErrorContext(ctx, "request failed", "err", err)
	}
	return newProblem(http.StatusInternalServerError, codeInternal, "internal error")
}

// knownProblem is the answer to an error the engine names, nil for any other. The order
// matters where one error is several: the studio's and the forms' named conflicts are
// ErrConflicts, a missing context key or org config key an ErrNotFound.
func knownProblem(err error, f failure) *Problem {
	var (
		p         *Problem
		ve        *engine.ValidationError
		owned     *engine.WorkflowOwnedError
		drafted   *engine.DraftFailedError
		tooLarge  *http.MaxBytesError
		multipart *multipartError
	)
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &tooLarge):
		return newProblem(http.StatusRequestEntityTooLarge, codeBodyTooLarge, orDefault(f.tooLarge, "the request body is too large"))
	case errors.Is(err, http.ErrNotMultipart), errors.Is(err, http.ErrMissingBoundary):
		return newProblem(http.StatusUnsupportedMediaType, codeUnsupportedMedia, "uploads must be multipart/form-data")
	case errors.As(err, &multipart):
		return newProblem(http.StatusBadRequest, codeMalformedMultipart, "the request body is not a readable multipart form",
			&ProblemDetail{Location: "body", Message: multipart.err.Error()})
	case errors.As(err, &drafted):
		details := make([]*ProblemDetail, 0, len(drafted.Problems))
		for _, pr := range drafted.Problems {
			ptr, msg, _ := strings.Cut(pr, ": ")
			details = append(details, &ProblemDetail{Location: "model.bundle", Pointer: ptr, Message: msg})
		}
		return newProblem(http.StatusUnprocessableEntity, "generation_failed", "the model's bundle did not validate, twice: nothing was created", details...)
	case errors.Is(err, engine.ErrOAuthState):
		return newProblem(http.StatusBadRequest, codeOAuthState, err.Error())
	case errors.Is(err, engine.ErrOAuthDenied):
		return newProblem(http.StatusBadRequest, codeOAuthDenied, err.Error())
	case errors.Is(err, engine.ErrOAuthProvider):
		// The provider's error code and description only: the engine's message has no
		// secrets, and it is what the person connecting needs to read.
		return newProblem(http.StatusBadGateway, codeOAuthProvider, err.Error())
	case errors.Is(err, engine.ErrOAuthApp):
		return newProblem(http.StatusUnprocessableEntity, codeOAuthApp, err.Error())
	case errors.Is(err, engine.ErrNoDraftingModelKey):
		return newProblem(http.StatusConflict, "model_not_configured", "the organization has no model key: set org config "+engine.LLMAPIKey+" (POST /org-config)")
	case errors.Is(err, engine.ErrBundlePublished):
		return newProblem(http.StatusConflict, "bundle_published", "the bundle was published already: compose a new one to publish a change")
	case errors.Is(err, engine.ErrProcessNotPublished):
		return newProblem(http.StatusConflict, "process_not_published", "the process has no published bundle: publish one first")
	case errors.Is(err, engine.ErrIdempotencyKeyReused):
		return newProblem(http.StatusUnprocessableEntity, "idempotency_key_reused",
			"the Idempotency-Key was used in the last 24 hours with another request (another workflow or input): use a new key for a new request",
			&ProblemDetail{Location: "header.Idempotency-Key", Message: "already used with another request"})
	case errors.As(err, &owned):
		return newProblem(http.StatusConflict, "workflow_owned_by_process",
			fmt.Sprintf("process %q (%s) publishes this workflow: it is changed by publishing a bundle of the process, and is not deleted on its own",
				owned.ProcessName, owned.ProcessID))
	case errors.As(err, &ve):
		details := make([]*ProblemDetail, 0, len(ve.Problems))
		for _, pr := range ve.Problems {
			details = append(details, locate(f.in, pr.Pointer, pr.Message))
		}
		if ve.Code != "" {
			// A problem with a name of its own (target_not_allowed): the same 422, its code.
			return newProblem(http.StatusUnprocessableEntity, ve.Code, strings.ReplaceAll(ve.Code, "_", " "), details...)
		}
		return newProblem(http.StatusUnprocessableEntity, codeValidation, "validation failed", details...)
	case errors.Is(err, engine.ErrNoOrgConfigKey):
		// Only an OAuth app is read from org config while a request waits: its message names
		// the key and what to store there, never a value.
		return newProblem(http.StatusNotFound, codeNotFound, err.Error())
	case errors.Is(err, engine.ErrNoContextKey) && f.noKey != "":
		return newProblem(http.StatusNotFound, codeNotFound, f.noKey)
	case errors.Is(err, engine.ErrNotFound):
		return newProblem(http.StatusNotFound, codeNotFound, orDefault(f.notFound, "resource not found"))
	case errors.Is(err, engine.ErrFormTriggerMissing):
		return newProblem(http.StatusConflict, "form_trigger_missing",
			"the form cannot take submissions: the workflow it starts no longer exists")
	case errors.Is(err, engine.ErrConflict) && f.conflictSaid:
		_, detail, _ := strings.Cut(err.Error(), ": ")
		return newProblem(http.StatusConflict, codeConflict, orDefault(detail, "conflict"))
	case errors.Is(err, engine.ErrConflict):
		return newProblem(http.StatusConflict, codeConflict, orDefault(f.conflict, "the request conflicts with the resource's current state"))
	case errors.Is(err, engine.ErrInvalidCursor):
		// Not a 422: a cursor is a token handed back, not a field the caller can correct.
		return newProblem(http.StatusBadRequest, codeInvalidCursor, "the cursor was not issued by this listing: start again without one",
			&ProblemDetail{Location: "query.cursor", Message: "not a cursor this listing issued"})
	case errors.Is(err, engine.ErrInvalidOrg):
		return newProblem(http.StatusBadRequest, codeInvalidOrg, "X-Org-Id is not a valid organization id")
	case errors.Is(err, engine.ErrApprovalExpired):
		return newProblem(http.StatusGone, "approval_expired", "the approval expired: it takes no decision after its expires_at")
	case errors.Is(err, engine.ErrFormPauseExpired):
		return newProblem(http.StatusGone, "form_expired", "the form expired: it takes no submission after its expires_at")
	case errors.Is(err, engine.ErrFormExpired):
		return newProblem(http.StatusGone, "form_expired", "the form no longer accepts submissions: it expired")
	case errors.Is(err, engine.ErrFormSigninRequired):
		return newProblem(http.StatusUnauthorized, "form_signin_required", "sign in before submitting this form")
	case errors.Is(err, engine.ErrAgentFormsDisabled):
		return newProblem(http.StatusForbidden, "agent_forms_disabled",
			"the organization does not have the agent_forms feature (PUT /org-features {\"agent_forms\": true})")
	case errors.Is(err, engine.ErrNoMasterKey):
		return newProblem(http.StatusServiceUnavailable, codeMasterKeyMissing,
			"org config is unavailable: the service has no master key (set SVC_MASTER_KEY)")
	case errors.Is(err, engine.ErrSchemaBehind):
		return newProblem(http.StatusServiceUnavailable, codeMigrationsPending,
			"the database lacks migrations of this build: run svcflow migrate (or start a process, which migrates)")
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// locate turns an engine problem's pointer into a detail. Body pointers keep their pointer
// and get a Huma-style location (body.definition.actions[2]); query pointers ("/where/x")
// name the parameter (query.where).
func locate(in, pointer, message string) *ProblemDetail {
	if in == "query" {
		name, _, _ := strings.Cut(strings.TrimPrefix(pointer, "/"), "/")
		loc := "query"
		if name != "" {
			loc += "." + name
		}
		return &ProblemDetail{Location: loc, Message: message}
	}
	return &ProblemDetail{Location: pointerToLocation(pointer), Pointer: pointer, Message: message}
}

func pointerToLocation(pointer string) string {
	var b strings.Builder
	b.WriteString("body")
	if pointer == "" {
		return b.String()
	}
	for _, seg := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		if isIndex(seg) {
			b.WriteString("[" + seg + "]")
			continue
		}
		b.WriteString("." + seg)
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// locationSegment matches one segment of a Huma location ("body.items[3].tags").
var locationSegment = regexp.MustCompile(`\.([^.\[\]]+)|\[(\d+)\]`)

// locationToPointer turns a Huma body location into a JSON pointer: body.items[3].tags ->
// /items/3/tags. Other locations have no pointer.
func locationToPointer(loc string) string {
	if loc != "body" && !strings.HasPrefix(loc, "body.") && !strings.HasPrefix(loc, "body[") {
		return ""
	}
	var b strings.Builder
	for _, m := range locationSegment.FindAllStringSubmatch(strings.TrimPrefix(loc, "body"), -1) {
		seg := m[1] + m[2]
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(seg, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func init() {
	// Huma builds its own errors (schema-invalid bodies, unparsable JSON, oversized bodies,
	// bad parameters) through these two package variables; replacing them is how Huma lets a
	// program choose its error type. Done once at package init so the OpenAPI document
	// describes Problem on every operation. It is process-wide: any other Huma API in the
	// same binary writes Problems too, which is what the gateway wants as well.
	huma.NewError = humaError
	huma.NewErrorWithContext = func(ctx huma.Context, status int, msg string, errs ...error) huma.StatusError {
		p := humaError(status, msg, errs...)
		secret := ctx != nil && carriesSecrets(ctx.Operation())
		if secret {
			withoutValues(p)
		}
		if status >= 500 {
			log := slog.Default()
			var c context.Context = context.Background()
			if ctx != nil {
				c = ctx.Context()
				log = loggerFrom(c, log)
			}
			if secret {
				// Huma's own errors may quote what it was decoding or encoding.
				log.ErrorContext(c, "request failed", "status", status, "msg", msg, "errs", len(errs))
			} else {
				log.ErrorContext(c, "request failed", "status", status, "msg", msg, "errs", errs)
			}
		}
		return p
	}
}

// secretsMetadata marks an operation whose request carries secrets (Operation.Metadata):
// Huma's errors for it never echo an offending value.
const secretsMetadata = "svcflow-carries-secrets"

func carriesSecrets(o *huma.Operation) bool {
	return o != nil && o.Metadata[secretsMetadata] == true
}

// withoutValues drops every offending value from p: what Huma reports for a body field
// that fails the schema is the field's value.
func withoutValues(p huma.StatusError) {
	if pr, ok := p.(*Problem); ok {
		for _, d := range pr.Errors {
			d.Value = nil
		}
	}
}

// humaError converts an error Huma produced into a Problem with a code.
func humaError(status int, msg string, errs ...error) huma.StatusError {
	if status >= 500 {
		// Never echo internals: the cause is logged by NewErrorWithContext.
		return newProblem(status, codeInternal, "internal error")
	}
	details := make([]*ProblemDetail, 0, len(errs))
	bodyUnparsable, notUTF8 := false, false
	for _, err := range errs {
		if err == nil {
			continue
		}
		var hd huma.ErrorDetailer
		if !errors.As(err, &hd) {
			details = append(details, &ProblemDetail{Message: err.Error()})
			continue
		}
		d := hd.ErrorDetail()
		loc := d.Location
		if m := missingProperty.FindStringSubmatch(d.Message); m != nil && loc != "" {
			// Locate a missing property at the property itself, as the engine does.
			loc += "." + m[1]
		}
		pd := &ProblemDetail{Location: loc, Pointer: locationToPointer(loc), Message: d.Message, Value: shortValue(d.Value)}
		if d.Location == "body" {
			// Huma's value here is the whole body: never echoed.
			pd.Value = nil
			switch {
			case isInvalidUTF8(d.Message):
				// Found while validating (a 400) or, on a route that skips it, decoding.
				status, notUTF8 = http.StatusBadRequest, true
			case status != http.StatusUnprocessableEntity:
			case jsonSyntax.MatchString(d.Message):
				// A body that is not JSON, found while decoding it (a route that skips
				// Huma's schema check, which would have found it first): a 400, as there.
				status = http.StatusBadRequest
			case strings.HasPrefix(d.Message, huma.ErrUnknownContentType.Error()):
				status = http.StatusUnsupportedMediaType // likewise: a 415, as there
			}
			bodyUnparsable = status == http.StatusBadRequest
		}
		details = append(details, pd)
	}
	code := codeFor(status)
	if status == http.StatusUnsupportedMediaType {
		msg = "request bodies must be application/json"
	}
	if status == http.StatusBadRequest {
		// Huma's only 400s are about the body: not JSON, or absent when required.
		code = codeMalformedJSON
		if bodyUnparsable {
			msg = "request body is not valid JSON"
		}
		if notUTF8 {
			code, msg = codeInvalidUTF8, invalidUTF8+": JSON text must be UTF-8"
		}
	}
	return newProblem(status, code, msg, details...)
}

// jsonSyntax matches encoding/json's messages for bytes that are not JSON.
var jsonSyntax = regexp.MustCompile(`^(invalid character |unexpected end of JSON input)`)

var missingProperty = regexp.MustCompile(`^expected required property (\S+) to be present$`)

// shortValue keeps an offending value worth echoing: a scalar or a short string. Huma
// reports the enclosing object for a missing or unexpected property, and the whole body for
// an unparsable one; those may be megabytes and the client has them already.
func shortValue(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) > 200 {
			return nil
		}
		return x
	case bool, float64, float32, int, int64, int32, json.Number:
		return x
	}
	return nil
}

// codeFor names the problem of a status that carries no more specific code.
func codeFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "bad_request"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return codeNotFound
	case http.StatusMethodNotAllowed:
		return codeMethodNotAllowed
	case http.StatusConflict:
		return codeConflict
	case http.StatusRequestEntityTooLarge:
		return codeBodyTooLarge
	case http.StatusUnsupportedMediaType:
		return codeUnsupportedMedia
	case http.StatusUnprocessableEntity:
		return codeValidation
	case http.StatusTooManyRequests:
		return "rate_limited"
	}
	if status >= 500 {
		return codeInternal
	}
	return strings.ReplaceAll(strings.ToLower(http.StatusText(status)), " ", "_")
}

// writeProblem writes p outside Huma (router fallbacks, panics).
func writeProblem(w http.ResponseWriter, p *Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}
