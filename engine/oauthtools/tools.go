// Package oauthtools holds the built-in OAuth business tools: step kinds (and agent tools,
// once agents land) that act as one of an organization's connected accounts at Google
// (gmail_send, google_sheets_append_row), Slack (slack_post_message) and Microsoft
// (microsoft_teams_post_message).
//
// Each tool is an IO half only: it checks its properties, asks Tokens for the access token
// of the account the step selects (the step property __oauth_account__), makes one call
// through the outbound client (address guard, body cap, Idempotency-Key), and returns the
// provider's JSON answer as the step's output. It never logs, never returns a token and
// never puts one into an error. It knows nothing of storage, tenancy or refresh: Tokens
// (the engine) owns which connection is used and keeps its token fresh.
package oauthtools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/svcflow/svcflow/engine/outbound"
	"github.com/svcflow/svcflow/engine/svctype"
)

// AccountProperty is the step property that names the connected account a tool uses.
const AccountProperty = "__oauth_account__"

// Tool names, as a workflow step's type.
const (
	GmailSend        = "gmail_send"
	SheetsAppendRow  = "google_sheets_append_row"
	SlackPostMessage = "slack_post_message"
	TeamsPostMessage = "microsoft_teams_post_message"
)

// Provider names.
const (
	Google    = "google"
	Slack     = "slack"
	Microsoft = "microsoft"
)

// Names lists every tool, sorted.
var Names = []string{GmailSend, SheetsAppendRow, TeamsPostMessage, SlackPostMessage}

// Provider returns the provider whose connection a tool uses ("" for a name that is no tool).
func Provider(tool string) string {
	switch tool {
	case GmailSend, SheetsAppendRow:
		return Google
	case SlackPostMessage:
		return Slack
	case TeamsPostMessage:
		return Microsoft
	}
	return ""
}

// Tokens hands out access tokens of an organization's connections.
type Tokens interface {
	// AccessToken returns a valid access token of the organization's connection to
	// provider named account, or, when account is "", of its only connection to provider;
	// and the account label of the connection used. Its errors name accounts, never tokens.
	AccessToken(ctx context.Context, orgID, provider, account string) (token, usedAccount string, err error)
}

// APIs are the base URLs of the providers' APIs, without a trailing slash. Tests point
// them at httptest servers.
type APIs struct {
	Gmail  string // https://gmail.googleapis.com/gmail/v1
	Sheets string // https://sheets.googleapis.com/v4
	Slack  string // https://slack.com/api
	Graph  string // https://graph.microsoft.com/v1.0
}

// DefaultAPIs are the providers' real APIs.
func DefaultAPIs() APIs {
	return APIs{
		Gmail:  "https://gmail.googleapis.com/gmail/v1",
		Sheets: "https://sheets.googleapis.com/v4",
		Slack:  "https://slack.com/api",
		Graph:  "https://graph.microsoft.com/v1.0",
	}
}

// withDefaults fills the empty fields of a with the real APIs.
func (a APIs) withDefaults() APIs {
	d := DefaultAPIs()
	for _, f := range []struct{ v, def *string }{{&a.Gmail, &d.Gmail}, {&a.Sheets, &d.Sheets}, {&a.Slack, &d.Slack}, {&a.Graph, &d.Graph}} {
		if *f.v == "" {
			*f.v = *f.def
		}
		*f.v = strings.TrimRight(*f.v, "/")
	}
	return a
}

// tool is one built-in tool: its provider, its properties, and how it turns them into a
// request and the provider's answer into an output.
type tool struct {
	name     string
	provider string
	required []string
	// build checks the resolved properties and returns the request, without credentials.
	build func(apis APIs, props map[string]any) (outbound.Request, error)
	// check turns an answer that is 2xx but a failure (Slack's ok:false) into an error.
	check func(body any) error
}

// Kinds returns the tools as step kinds (IO halves with create-time validation), to
// register on an Environment. client makes every call; tokens supplies the credentials.
func Kinds(tokens Tokens, client *outbound.Client, apis APIs) map[string]svctype.StepKind {
	apis = apis.withDefaults()
	out := make(map[string]svctype.StepKind, len(Names))
	for _, t := range tools() {
		out[t.name] = svctype.StepKind{
			IO:       t.io(tokens, client, apis),
			Validate: t.validate,
		}
	}
	return out
}

func tools() []tool {
	return []tool{
		{name: GmailSend, provider: Google, required: []string{"to", "subject", "body"}, build: buildGmailSend},
		{name: SheetsAppendRow, provider: Google, required: []string{"spreadsheet_id", "range", "values"}, build: buildSheetsAppend},
		{name: SlackPostMessage, provider: Slack, required: []string{"channel", "text"}, build: buildSlackPost, check: checkSlack},
		{name: TeamsPostMessage, provider: Microsoft, required: []string{"team_id", "channel_id", "text"}, build: buildTeamsPost},
	}
}

// validate checks a step's properties as written (before @paths resolve): the required
// ones are present, and the account, when given, is a string.
func (t tool) validate(props map[string]any) []svctype.PropertyProblem {
	var ps []svctype.PropertyProblem
	for _, name := range t.required {
		if v, ok := props[name]; !ok || v == nil {
			ps = append(ps, svctype.PropertyProblem{Pointer: "/" + name, Message: fmt.Sprintf("required by %s", t.name)})
		}
	}
	if v, ok := props[AccountProperty]; ok {
		if s, isStr := v.(string); !isStr || strings.TrimSpace(s) == "" {
			ps = append(ps, svctype.PropertyProblem{Pointer: "/" + AccountProperty, Message: "the connected account's label: a non-empty string"})
		}
	}
	return ps
}

func (t tool) io(tokens Tokens, client *outbound.Client, apis APIs) svctype.IOFunc {
	return func(ctx context.Context, call *svctype.StepCall) (any, error) {
		account, err := accountOf(call.Properties)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
		req, err := t.build(apis, call.Properties)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
		token, used, err := tokens.AccessToken(ctx, call.OrgID, t.provider, account)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
		if req.Headers == nil {
			req.Headers = map[string]string{}
		}
		req.Headers["Authorization"] = "Bearer " + token
		req.Headers["Accept"] = "application/json"
		req.IdempotencyKey = call.IdempotencyKey
		resp, err := client.Do(ctx, req)
		if err != nil {
			return nil, redacted(t.failure(used, err), token)
		}
		if t.check != nil {
			if err := t.check(resp.Body); err != nil {
				return nil, redacted(fmt.Errorf("%s: account %q: %w", t.name, used, err), token)
			}
		}
		return scrub(resp.Body, token), nil
	}
}

// failure words a failed call: the outbound error names the method, the host, the status
// and an excerpt with the request's header values (the token among them) blanked.
func (t tool) failure(account string, err error) error {
	var oe *outbound.Error
	if errors.As(err, &oe) && (oe.Status == http.StatusUnauthorized || oe.Status == http.StatusForbidden) {
		return fmt.Errorf("%s: account %q: the provider refused the connection's token or its scopes (reconnect the account): %w", t.name, account, err)
	}
	return fmt.Errorf("%s: account %q: %w", t.name, account, err)
}

// accountOf reads __oauth_account__ ("" when absent).
func accountOf(props map[string]any) (string, error) {
	v, ok := props[AccountProperty]
	if !ok || v == nil {
		return "", nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", fmt.Errorf("%s must be a string (the connected account's label)", AccountProperty)
	}
	return strings.TrimSpace(s), nil
}

// text reads a required string property (a number is taken as its text).
func text(props map[string]any, name string) (string, error) {
	v, ok := props[name]
	if !ok || v == nil {
		return "", fmt.Errorf("property %q is required", name)
	}
	switch x := v.(type) {
	case string:
		if strings.TrimSpace(x) == "" {
			return "", fmt.Errorf("property %q is empty", name)
		}
		return x, nil
	case float64, json.Number, int, int64, bool:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("property %q must be a string", name)
}

// redactedError hides a token from an error's text and keeps the chain.
type redactedError struct {
	err   error
	token string
}

func (e *redactedError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.token, "[redacted]")
}
func (e *redactedError) Unwrap() error { return e.err }

func redacted(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return &redactedError{err: err, token: token}
}

// scrub replaces the token wherever a provider echoed it in its answer (none of them do;
// the output lands in run context, events and evidence, so this is a last guard).
func scrub(v any, token string) any {
	if token == "" {
		return v
	}
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, token, "[redacted]")
	case map[string]any:
		for k, e := range x {
			x[k] = scrub(e, token)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = scrub(e, token)
		}
		return x
	}
	return v
}
