// Command tour walks the integrator's path through svcflow's gateway with the generated Go
// client (examples/client/integrator): an account's management token (or a new account), an
// organization, its runtime key, a workflow, a run executed with ?wait=, and its result.
//
//	go run ./examples/client/cmd/tour -gateway http://127.0.0.1:8081
//
// Flags fall back to the environment: SVC_GATEWAY_URL, SVC_MANAGEMENT_TOKEN (without one,
// the tour signs up a new account with -email) and SVC_ORG.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/svcflow/svcflow/examples/client/integrator"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// bearer sets a credential on every request of a client.
func bearer(token string) integrator.ClientOption {
	return integrator.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
}

// problem is the error of an answer that is not the one the tour expected.
func problem(step string, status int, body []byte) error {
	return fmt.Errorf("%s: HTTP %d: %s", step, status, body)
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("tour", flag.ContinueOnError)
	base := fs.String("gateway", env("SVC_GATEWAY_URL", "http://127.0.0.1:8081"), "the gateway's base `URL`")
	token := fs.String("token", os.Getenv("SVC_MANAGEMENT_TOKEN"), "an account's management `token` (svc_mgmt_...); empty: sign up a new account")
	email := fs.String("email", "tour@example.com", "the new account's `email` when no token is given")
	org := fs.String("org", env("SVC_ORG", "tour"), "the organization to create (`id`)")
	wait := fs.Duration("wait", 30*time.Second, "how long execute may hold the answer (?wait=)")
	if err := fs.Parse(args); err != nil {
		return err
	}

	// The account: a management token opens the /gateway/ routes.
	if *token == "" {
		anon, err := integrator.NewClientWithResponses(*base)
		if err != nil {
			return err
		}
		acct, err := anon.SignupWithResponse(ctx, integrator.SignupJSONRequestBody{Email: *email, Name: "svcflow tour"})
		if err != nil {
			return err
		}
		if acct.JSON201 == nil {
			return problem("signup", acct.StatusCode(), acct.Body)
		}
		*token = acct.JSON201.ManagementToken
		fmt.Fprintf(out, "account %s\n", acct.JSON201.Account.Id)
	}
	mgmt, err := integrator.NewClientWithResponses(*base, bearer(*token))
	if err != nil {
		return err
	}

	// An organization, and its runtime key (its secret is shown once).
	o, err := mgmt.CreateGatewayOrgWithResponse(ctx, integrator.CreateGatewayOrgJSONRequestBody{Id: org, Name: "Tour"})
	if err != nil {
		return err
	}
	if o.JSON201 == nil {
		return problem("create organization", o.StatusCode(), o.Body)
	}
	k, err := mgmt.CreateKeyWithResponse(ctx, o.JSON201.Id, integrator.CreateKeyJSONRequestBody{Kind: integrator.CreateKeyRequestKindRuntime})
	if err != nil {
		return err
	}
	if k.JSON201 == nil || k.JSON201.Secret == nil {
		return problem("create key", k.StatusCode(), k.Body)
	}
	fmt.Fprintf(out, "organization %s, key %s...\n", o.JSON201.Id, k.JSON201.Prefix)

	// The runtime's routes through the gateway, with the key: the gateway sets the
	// organization from it.
	svc, err := integrator.NewClientWithResponses(*base, bearer(*k.JSON201.Secret))
	if err != nil {
		return err
	}
	// A workflow that needs nothing set up: match two lists of invoices by their number.
	// The definition is typed (integrator.WorkflowDefinition); written as JSON, as a workflow file is.
	var definition integrator.WorkflowDefinition
	if err := json.Unmarshal([]byte(`{"actions": [{"type": "matcher",
		"properties": {"left": "@input.bank", "right": "@input.ledger", "matchOn": ["invoice"]}}]}`), &definition); err != nil {
		return err
	}
	w, err := svc.CreateWorkflowWithResponse(ctx, integrator.CreateWorkflowJSONRequestBody{Name: "hello", Definition: definition})
	if err != nil {
		return err
	}
	if w.JSON201 == nil {
		return problem("create workflow", w.StatusCode(), w.Body)
	}
	fmt.Fprintf(out, "workflow %s version %d\n", w.JSON201.Id, w.JSON201.Version)

	input := map[string]any{
		"bank":   []any{map[string]any{"invoice": "INV-1", "amount": 100}, map[string]any{"invoice": "INV-2", "amount": 40}},
		"ledger": []any{map[string]any{"invoice": "INV-1", "amount": 100}},
	}
	waitFor := wait.String()
	r, err := svc.ExecuteWorkflowWithResponse(ctx, w.JSON201.Id, &integrator.ExecuteWorkflowParams{Wait: &waitFor},
		integrator.ExecuteWorkflowJSONRequestBody{Input: &input})
	if err != nil {
		return err
	}
	done := r.JSON200
	if done == nil {
		if r.JSON202 != nil {
			return errors.New("the run did not end within -wait: " + r.JSON202.Id)
		}
		return problem("execute", r.StatusCode(), r.Body)
	}
	fmt.Fprintf(out, "run %s %s\n", done.Id, done.Status)
	if done.Context != nil {
		for _, key := range []string{"matched", "unmatchedLeft", "unmatchedRight"} {
			v, _ := json.Marshal((*done.Context)[key])
			fmt.Fprintf(out, "%s %s\n", key, v)
		}
	}
	return nil
}
