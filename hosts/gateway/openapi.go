package gateway

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// The credentials of the gateway's routes, as OpenAPI security schemes: each operation
// says which it takes (its security), and declares the answers a refused credential gets.
// The integrator's document (integrator.go) uses the same schemes for the runtime routes
// seen through the gateway.
const (
	SchemeRuntimeKey  = "runtimeKey"
	SchemeManagement  = "managementToken"
	SchemePublishable = "publishableKey"
	SchemeSession     = "personSession"
	SchemeOperator    = "operatorToken"
)

// securitySchemes are the components.securitySchemes of the gateway's documents: every
// credential is a bearer token, told apart by its prefix.
func securitySchemes() map[string]*huma.SecurityScheme {
	bearer := func(format, doc string) *huma.SecurityScheme {
		return &huma.SecurityScheme{Type: "http", Scheme: "bearer", BearerFormat: format, Description: doc}
	}
	return map[string]*huma.SecurityScheme{
		SchemeRuntimeKey: bearer(PrefixRuntime+"...", "An organization's runtime key (POST /gateway/orgs/{orgId}/keys, kind runtime): "+
			"server-side calls to the runtime routes. The gateway sets X-Org-Id from it (a client's own is removed) and rate-limits each key."),
		SchemeManagement: bearer(PrefixManagement+"...", "The account's management token (POST /gateway/signup): the /gateway/ routes "+
			"(organizations, keys, usage, people, licenses). It opens no runtime route."),
		SchemePublishable: bearer(PrefixPublishable+"...", "An organization's publishable key (kind publishable): the browser SDK's "+
			"routes (/sdk/), anonymously, and its sign-in. It opens no runtime route."),
		SchemeSession: bearer(PrefixSession+"...", "A signed-in person's session token (POST /sdk/auth/verify, or a public form's "+
			"POST /forms/public/{formId}/auth/verify): the SDK routes as that person, or the one form it was opened on."),
		SchemeOperator: bearer("", "The platform operator's token (SVC_OPERATOR_TOKEN): the /admin/ routes."),
	}
}

// Security requirements of the gateway's operations.
var (
	byManagement = []map[string][]string{{SchemeManagement: {}}}
	bySDK        = []map[string][]string{{SchemePublishable: {}}, {SchemeSession: {}}}
	byOperator   = []map[string][]string{{SchemeOperator: {}}}
	// byNobody: no credential (security: [] overrides none, and says so).
	byNobody = []map[string][]string{}
)

// managementOp is o as a route of the management token: it may answer 401 (no token,
// an unknown one) and 403 (a key instead of the token, a suspended account), and errs.
func managementOp(o huma.Operation, errs ...int) huma.Operation {
	o.Security = byManagement
	o.Errors = append([]int{http.StatusUnauthorized, http.StatusForbidden}, errs...)
	return o
}

// sdkOp is o as an SDK route (publishable key or session): 401 and 403 for a credential it
// refuses, 429 when the key's rate limit is spent, and errs.
func sdkOp(o huma.Operation, errs ...int) huma.Operation {
	o.Security = bySDK
	o.Errors = append([]int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests}, errs...)
	return o
}

// publicOp is o as a route that takes no credential, answering errs.
func publicOp(o huma.Operation, errs ...int) huma.Operation {
	o.Security = byNobody
	o.Errors = errs
	return o
}

// declareAnswers completes the declarations of every operation of o once all are
// registered: an operation that takes a body may answer 400 (malformed JSON, invalid
// UTF-8), 413 (over its limit) and 415 (not JSON) before its handler runs, as on the
// runtime; a 429 comes with Retry-After, the seconds to wait.
func declareAnswers(o *huma.OpenAPI) {
	for path, item := range o.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op == nil {
				continue
			}
			if strings.HasPrefix(path, "/admin/") {
				operatorAnswers(op)
			}
			describeRefusals(op)
			problem := problemContent(op)
			if op.RequestBody != nil && problem != nil {
				for _, status := range []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType} {
					if code := strconv.Itoa(status); op.Responses[code] == nil {
						op.Responses[code] = &huma.Response{Description: http.StatusText(status), Content: problem}
					}
				}
			}
			if r := op.Responses[strconv.Itoa(http.StatusTooManyRequests)]; r != nil {
				if r.Headers == nil {
					r.Headers = map[string]*huma.Param{}
				}
				r.Headers["Retry-After"] = retryAfter()
			}
		}
	}
}

// refusals say, by credential, what a refused one is answered (the problem's code).
var refusals = map[string]map[int]string{
	SchemeManagement: {
		http.StatusUnauthorized: "No management token (unauthorized), or one that is not known (unknown_token: it may have been regenerated).",
		http.StatusForbidden:    "An organization's key instead of the management token (key_on_management_route), or a suspended account (account_suspended).",
	},
	SchemePublishable: {
		http.StatusUnauthorized: "No credential (unauthorized); an unknown, revoked or expired key (unknown_key, key_revoked, key_expired); " +
			"a session that is not known, has expired or whose person the organization no longer admits (unknown_session, session_expired, session_ended); " +
			"on sign-in, a wrong, expired, used or exhausted code (code_invalid).",
		http.StatusForbidden: "A runtime key or a management token (runtime_key_on_sdk_route, management_token_on_sdk_route), a public form's session " +
			"(form_session_on_sdk_route), a suspended account (account_suspended); where the route needs a person: an anonymous session " +
			"(signin_required), a guest (not_a_member), a person without the role (not_an_assignee, not_an_approver).",
		http.StatusTooManyRequests:    "rate_limited: the key's rate limit is spent, or (sign-in) too many codes were asked for this email.",
		http.StatusServiceUnavailable: "mail_not_configured: the gateway has no mail server, so no code can be sent.",
	},
	SchemeOperator: {
		http.StatusUnauthorized: "Not the operator's token (unknown_operator_token).",
		http.StatusNotFound:     "admin_not_configured: the gateway has no operator token; or what the path names does not exist (not_found).",
	},
}

// describeRefusals gives an operation's refusals by its credential their codes, where they
// have only their status's text.
func describeRefusals(op *huma.Operation) {
	for _, req := range op.Security {
		for scheme := range req {
			for status, text := range refusals[scheme] {
				if r := op.Responses[strconv.Itoa(status)]; r != nil && r.Description == http.StatusText(status) {
					r.Description = text
				}
			}
		}
	}
}

// operatorAnswers declares what an operator route answers besides its success: 401 for a
// token that is not the operator's, 404 admin_not_configured (and what a route's id
// names that does not exist), 400 and 422 for a request it refuses, 409 when the gateway
// cannot sign licenses.
func operatorAnswers(op *huma.Operation) {
	if op.Security == nil {
		op.Security = byOperator
	}
	problem := problemContent(op)
	if d := op.Responses["default"]; problem == nil && d != nil {
		problem = d.Content
	}
	delete(op.Responses, "default")
	errs := []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusInternalServerError}
	if op.OperationID == "admin-issue-license" {
		errs = append(errs, http.StatusConflict)
	}
	for _, status := range errs {
		if code := strconv.Itoa(status); op.Responses[code] == nil {
			op.Responses[code] = &huma.Response{Description: http.StatusText(status), Content: problem}
		}
	}
}

// retryAfter declares the Retry-After header of a 429.
func retryAfter() *huma.Param {
	return &huma.Param{Description: "Seconds to wait before the next request.", Required: true,
		Schema: &huma.Schema{Type: "integer", Minimum: new(float64(1))}}
}

// problemContent is the problem+json content of an operation's error answers (nil when it
// declares none).
func problemContent(op *huma.Operation) map[string]*huma.MediaType {
	for _, code := range []string{"400", "401", "404", "422", "500"} {
		if r := op.Responses[code]; r != nil && r.Content["application/problem+json"] != nil {
			return r.Content
		}
	}
	return nil
}
