package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/hosts/runtime"
)

// The integrator's document (openapi/integrator.yaml, its 3.0 downgrade
// openapi/integrator-3.0.yaml): every route an integrator calls at the gateway's address.
// It is the gateway's own document (its routes, each saying which credential it takes)
// with the runtime's routes added as the gateway serves them: the runtime key as their
// security, no X-Org-Id parameter (the gateway sets it from the key), and the answers the
// gateway gives before the runtime sees a request. Nothing is written by hand: both halves
// come from the routes' registrations, and the drift test compares the committed files.

// IntegratorOpenAPI builds the integrator's document, OpenAPI 3.1, with info.version set
// to version. It needs no store and no runtime.
func IntegratorOpenAPI(version string) (*huma.OpenAPI, error) {
	doc := New(Options{Version: version}).API().OpenAPI()
	rt := runtime.New(nil, runtime.Options{Version: version}).API().OpenAPI()
	doc.Info = &huma.Info{Title: "svcflow integrator API", Version: version, Description: integratorDescription}

	if err := mergeSchemas(doc, rt); err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for path, item := range doc.Paths {
		for _, op := range operations(item) {
			ids[op.OperationID] = path
		}
	}
	for path, item := range rt.Paths {
		for method, op := range operationsByMethod(item) {
			if mine := doc.Paths[path]; mine != nil && operationsByMethod(mine)[method] != nil {
				continue // the gateway answers it itself (/health, /healthz, /readyz)
			}
			if other, taken := ids[op.OperationID]; taken {
				return nil, fmt.Errorf("integrator document: operation id %q is the gateway's (%s) and the runtime's (%s)", op.OperationID, other, path)
			}
			throughGateway(op, path)
			if doc.Paths[path] == nil {
				doc.Paths[path] = &huma.PathItem{}
			}
			setOperation(doc.Paths[path], method, op)
		}
	}
	for _, t := range rt.Tags {
		if !slices.ContainsFunc(doc.Tags, func(d *huma.Tag) bool { return d.Name == t.Name }) {
			doc.Tags = append(doc.Tags, t)
		}
	}
	if len(rt.Webhooks) > 0 {
		doc.Webhooks = rt.Webhooks
	}
	if err := dropUnused(doc); err != nil {
		return nil, err
	}
	// An Authorization header parameter says less than the operation's security, and
	// OpenAPI has tools ignore it: the schemes are the one place a credential is named.
	for _, item := range doc.Paths {
		for _, op := range operations(item) {
			op.Parameters = slices.DeleteFunc(op.Parameters, func(p *huma.Param) bool {
				return p.In == "header" && http.CanonicalHeaderKey(p.Name) == "Authorization"
			})
		}
	}
	return doc, nil
}

const integratorDescription = "Every route an integrator calls at the gateway's address. " +
	"The account (POST /gateway/signup) holds a management token (svc_mgmt_...) for the /gateway/ routes: organizations, their keys, usage, people and sign-in policy, licenses. " +
	"An organization's runtime key (svc_live_...) opens the runtime routes (workflows, runs, tables, forms, webhooks, agents...): the gateway sets X-Org-Id from the key, " +
	"so no route here takes it, and limits each key's rate (429 rate_limited, with Retry-After). " +
	"Its publishable key (svc_pk_...) and the sessions of people who sign in (svc_sess_...) open the browser SDK's routes under /sdk/; public forms take no credential. " +
	"The operator's token opens /admin/. Each operation's security names the credential it takes. " +
	"Errors are RFC 9457 problem+json bodies with a snake_case `code`."

// throughGateway rewrites a runtime operation as the gateway serves it.
func throughGateway(op *huma.Operation, path string) {
	op.Parameters = slices.DeleteFunc(op.Parameters, func(p *huma.Param) bool {
		return p.In == "header" && http.CanonicalHeaderKey(p.Name) == runtime.OrgHeader
	})
	problem := problemContent(op)
	if problem == nil {
		problem = map[string]*huma.MediaType{"application/problem+json": {Schema: &huma.Schema{Ref: "#/components/schemas/Problem"}}}
	}
	answer := func(status int, text string) {
		code := strconv.Itoa(status)
		r := op.Responses[code]
		switch {
		case r == nil:
			op.Responses[code] = &huma.Response{Description: text, Content: problem}
		case r.Description == http.StatusText(status) || status == http.StatusUnauthorized && !strings.HasPrefix(path, "/forms/public/"):
			// The runtime's own 401 is missing_org, which the gateway never lets through.
			r.Description = text
		default:
			r.Description = text + " " + r.Description
		}
	}
	if strings.HasPrefix(path, "/forms/public/") {
		// No credential; a signed-in person's session (a form that requires sign-in).
		op.Security = []map[string][]string{{}, {SchemeSession: {}}}
		answer(http.StatusUnauthorized, "A session token that is not one (unknown_session), expired (session_expired) or whose key was revoked (key_revoked).")
		answer(http.StatusForbidden, "A session of another form (session_for_another_form), or of a suspended account (account_suspended).")
		answer(http.StatusTooManyRequests, fmt.Sprintf("rate_limited: the visitor's address read this form %d times, or submitted it %d times, in the last minute.", PublicReads, PublicSubmits))
	} else {
		op.Security = []map[string][]string{{SchemeRuntimeKey: {}}}
		answer(http.StatusUnauthorized, "No runtime key (unauthorized), an unknown one (unknown_key), a revoked one (key_revoked), or one whose rotation's grace is over (key_expired).")
		forbidden := "A publishable key (publishable_key) or a management token (management_token_on_runtime_route) instead of a runtime key, or a suspended account (account_suspended)."
		if strings.HasPrefix(path, "/agents") || path == "/forms/generate" {
			forbidden += " feature_not_in_tier: the account's tier does not include this route's feature."
		}
		answer(http.StatusForbidden, forbidden)
		too := "rate_limited: the key's rate limit is spent."
		if op.Method == http.MethodPost && path == "/workflows/{workflowId}/execute" {
			too += " quota_exceeded: the organization started its tier's runs for today (the quota renews at 00:00 UTC)."
		}
		answer(http.StatusTooManyRequests, too)
	}
	answer(http.StatusBadGateway, "runtime_unreachable: the runtime did not answer the gateway.")
	op.Responses[strconv.Itoa(http.StatusTooManyRequests)].Headers = map[string]*huma.Param{"Retry-After": retryAfter()}
}

// mergeSchemas adds rt's component schemas to doc's. A name both use for the same shape
// stays one schema; a gateway schema whose name the runtime uses for another shape is
// renamed Gateway<name>, and every reference to it in doc follows.
func mergeSchemas(doc, rt *huma.OpenAPI) error {
	mine, theirs := doc.Components.Schemas.Map(), rt.Components.Schemas.Map()
	renamed := map[string]string{}
	for name, s := range theirs {
		m, both := mine[name]
		if !both {
			continue
		}
		same, err := sameJSON(m, s)
		if err != nil {
			return err
		}
		if same {
			continue
		}
		to := "Gateway" + name
		if _, taken := theirs[to]; taken {
			return fmt.Errorf("integrator document: the runtime has schemas %s and %s, and the gateway another %s", name, to, name)
		}
		if _, taken := mine[to]; taken {
			return fmt.Errorf("integrator document: the gateway has schemas %s and %s, and the runtime another %s", name, to, name)
		}
		renamed["#/components/schemas/"+name] = "#/components/schemas/" + to
		mine[to] = m
		delete(mine, name)
	}
	if len(renamed) > 0 {
		seen := map[*huma.Schema]bool{}
		for _, s := range mine {
			rewriteRefs(s, renamed, seen)
		}
		for _, item := range doc.Paths {
			for _, op := range operations(item) {
				for _, p := range op.Parameters {
					rewriteRefs(p.Schema, renamed, seen)
				}
				if op.RequestBody != nil {
					for _, mt := range op.RequestBody.Content {
						rewriteRefs(mt.Schema, renamed, seen)
					}
				}
				for _, r := range op.Responses {
					for _, mt := range r.Content {
						rewriteRefs(mt.Schema, renamed, seen)
					}
				}
			}
		}
	}
	for name, s := range theirs {
		mine[name] = s
	}
	return nil
}

func sameJSON(a, b any) (bool, error) {
	ja, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return false, err
	}
	return string(ja) == string(jb), nil
}

// dropUnused removes the component schemas that no operation reaches (the runtime's
// /health answer, the gateway answering /health itself).
func dropUnused(doc *huma.OpenAPI) error {
	schemas := doc.Components.Schemas.Map()
	used := map[string]bool{}
	var reach func(v any) error
	reach = func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		for _, m := range refRe.FindAllStringSubmatch(string(b), -1) {
			if name := m[1]; !used[name] {
				used[name] = true
				if s := schemas[name]; s != nil {
					if err := reach(s); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	if err := reach(doc.Paths); err != nil {
		return err
	}
	if err := reach(doc.Webhooks); err != nil {
		return err
	}
	for name := range schemas {
		if !used[name] {
			delete(schemas, name)
		}
	}
	return nil
}

var refRe = regexp.MustCompile(`"\$ref":"#/components/schemas/([^"]+)"`)

// rewriteRefs renames the references of s and of the schemas within it.
func rewriteRefs(s *huma.Schema, renamed map[string]string, seen map[*huma.Schema]bool) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	if to, ok := renamed[s.Ref]; ok {
		s.Ref = to
	}
	rewriteRefs(s.Items, renamed, seen)
	rewriteRefs(s.Not, renamed, seen)
	for _, p := range s.Properties {
		rewriteRefs(p, renamed, seen)
	}
	for _, list := range [][]*huma.Schema{s.OneOf, s.AnyOf, s.AllOf} {
		for _, e := range list {
			rewriteRefs(e, renamed, seen)
		}
	}
	if ap, ok := s.AdditionalProperties.(*huma.Schema); ok {
		rewriteRefs(ap, renamed, seen)
	}
}

// operationsByMethod is an item's operations by method.
func operationsByMethod(item *huma.PathItem) map[string]*huma.Operation {
	out := map[string]*huma.Operation{}
	for m, op := range map[string]*huma.Operation{http.MethodGet: item.Get, http.MethodPut: item.Put, http.MethodPost: item.Post,
		http.MethodDelete: item.Delete, http.MethodPatch: item.Patch, http.MethodHead: item.Head, http.MethodOptions: item.Options} {
		if op != nil {
			out[m] = op
		}
	}
	return out
}

func operations(item *huma.PathItem) []*huma.Operation {
	var out []*huma.Operation
	for _, op := range operationsByMethod(item) {
		out = append(out, op)
	}
	return out
}

func setOperation(item *huma.PathItem, method string, op *huma.Operation) {
	switch method {
	case http.MethodGet:
		item.Get = op
	case http.MethodPut:
		item.Put = op
	case http.MethodPost:
		item.Post = op
	case http.MethodDelete:
		item.Delete = op
	case http.MethodPatch:
		item.Patch = op
	case http.MethodHead:
		item.Head = op
	case http.MethodOptions:
		item.Options = op
	}
}

// IntegratorYAML is the integrator's document as YAML (openapi/integrator.yaml).
func IntegratorYAML(version string) ([]byte, error) {
	doc, err := IntegratorOpenAPI(version)
	if err != nil {
		return nil, err
	}
	return doc.YAML()
}

// Integrator30YAML is the integrator's document downgraded to OpenAPI 3.0.3 and finished
// as the runtime's is (openapi/integrator-3.0.yaml), for tools that read 3.0 only.
func Integrator30YAML(version string) ([]byte, error) {
	doc, err := IntegratorOpenAPI(version)
	if err != nil {
		return nil, err
	}
	return runtime.DowngradeYAML(doc)
}
