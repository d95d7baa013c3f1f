package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/examples/client"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/hosts/worker"
	"github.com/svcflow/svcflow/internal/testlog"
)

const org = "acme"

// setup starts a real runtime (engine on in-memory SQLite, a worker, the runtime's handler
// on a loopback listener) and returns a generated client for it whose every answer is also
// checked against openapi/openapi-3.0.yaml.
func setup(t *testing.T) *client.ClientWithResponses {
	t.Helper()
	st := store.OpenTest(t, "sqlite")
	quiet := testlog.Quiet()
	eng, err := engine.New(engine.Config{Store: st, Logger: quiet})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = worker.New(eng, worker.Options{Logger: quiet}).Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer(runtime.New(eng, runtime.Options{Logger: quiet, Version: "test"}).Handler())
	t.Cleanup(srv.Close)

	c, err := client.NewClientWithResponses(srv.URL, client.WithHTTPClient(&http.Client{
		Transport: &conforming{t: t, next: http.DefaultTransport, router: contractRouter(t, srv.URL)},
	}))
	require.NoError(t, err)
	return c
}

// contractRouter loads openapi/openapi-3.0.yaml, the document the client is generated from.
func contractRouter(t *testing.T, serverURL string) routers.Router {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(filepath.Join("..", "..", "openapi", "openapi-3.0.yaml"))
	require.NoError(t, err)
	require.NoError(t, doc.Validate(loader.Context))
	doc.Servers = openapi3.Servers{{URL: serverURL}}
	router, err := gorillamux.NewRouter(doc)
	require.NoError(t, err)
	return router
}

// conforming fails the test when an answer is not one the contract documents for its
// operation: an undocumented status, a body that breaks its schema (a missing required
// field, a wrong type, a field the schema does not list). Decoding alone would not see most
// of that: Go's JSON decoder leaves a missing field zero and drops an unknown one.
type conforming struct {
	t      *testing.T
	next   http.RoundTripper
	router routers.Router
}

func (c *conforming) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))

	route, params, err := c.router.FindRoute(req)
	if err != nil {
		c.t.Errorf("%s %s: not an operation of the contract: %v", req.Method, req.URL.Path, err)
		return resp, nil
	}
	err = openapi3filter.ValidateResponse(req.Context(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	})
	if err != nil {
		c.t.Errorf("%s %s answered %d, which the contract does not allow: %v\nbody: %s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
	return resp, nil
}

// TestClientAgainstRuntime walks the README's tour with the generated client against a real
// runtime and worker: tables, a workflow (examples/workflows/onboard.json), a run, its
// status, a context key, and a problem answer.
func TestClientAgainstRuntime(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := setup(t)

	for _, tbl := range []client.TableDefinition{
		{Name: "customers", Fields: map[string]string{"email": "text", "name": "text", "tier": "text"}},
		{Name: "notes", Fields: map[string]string{"text": "text"}},
	} {
		created, err := c.CreateCustomTableWithResponse(ctx, &client.CreateCustomTableParams{XOrgId: org}, tbl)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, created.StatusCode(), string(created.Body))
		require.NotNil(t, created.JSON201)
		require.Equal(t, tbl.Name, created.JSON201.Name)
	}

	raw, err := os.ReadFile(filepath.Join("..", "workflows", "onboard.json"))
	require.NoError(t, err)
	var def client.WorkflowRequest
	require.NoError(t, json.Unmarshal(raw, &def))
	wf, err := c.CreateWorkflowWithResponse(ctx, &client.CreateWorkflowParams{XOrgId: org}, def)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, wf.StatusCode(), string(wf.Body))
	require.NotNil(t, wf.JSON201)
	require.Equal(t, "onboard", wf.JSON201.Name)
	require.Equal(t, int64(1), wf.JSON201.Version)

	input := map[string]any{"email": "ada@example.com", "name": "Ada", "tier": "gold"}
	key := "signup-42"
	started, err := c.ExecuteWorkflowWithResponse(ctx, wf.JSON201.Id,
		&client.ExecuteWorkflowParams{XOrgId: org, IdempotencyKey: &key}, client.ExecuteRequest{Input: &input})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, started.StatusCode(), string(started.Body))
	require.NotNil(t, started.JSON202)
	runID := started.JSON202.Id
	require.NotEmpty(t, runID)

	wait := "20s"
	status, err := c.GetRunStatusWithResponse(ctx, runID, &client.GetRunStatusParams{XOrgId: org, Wait: &wait})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status.StatusCode(), string(status.Body))
	doc := status.JSON200
	require.NotNil(t, doc)
	require.Equal(t, client.RunStatusCompleted, doc.Status, "reason: %v", doc.Reason)
	require.Equal(t, wf.JSON201.Id, doc.WorkflowId)
	require.Len(t, doc.Steps, 3, "steps is an array, never null")
	for _, s := range doc.Steps {
		require.Equal(t, client.StepStatusCompleted, s.Status)
		require.Equal(t, "custom-table", s.Type)
	}
	require.NotNil(t, doc.Context)
	require.Contains(t, *doc.Context, "gold")

	limit := int64(10)
	gold, err := c.GetRunContextWithResponse(ctx, runID, "gold", &client.GetRunContextParams{XOrgId: org, Limit: &limit})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, gold.StatusCode(), string(gold.Body))
	require.NotNil(t, gold.JSON200)
	require.Equal(t, "gold", gold.JSON200.Key)
	require.NotNil(t, gold.JSON200.Total)
	require.Equal(t, int64(1), *gold.JSON200.Total)
	rows, isArray := gold.JSON200.Value.([]any)
	require.True(t, isArray, "value: %#v", gold.JSON200.Value)
	require.Len(t, rows, 1)
	require.Equal(t, "ada@example.com", rows[0].(map[string]any)["email"])

	// A retry with the same Idempotency-Key answers the same run.
	again, err := c.ExecuteWorkflowWithResponse(ctx, wf.JSON201.Id,
		&client.ExecuteWorkflowParams{XOrgId: org, IdempotencyKey: &key}, client.ExecuteRequest{Input: &input})
	require.NoError(t, err)
	require.NotNil(t, again.JSON202, string(again.Body))
	require.Equal(t, runID, again.JSON202.Id)

	// With ?wait=, a run that ends within the wait answers 200 with its status document, typed
	// as GET /runs/{runId}/status's (no optional fields to unwrap); ?context=false leaves the
	// context out.
	noContext := false
	waited, err := c.ExecuteWorkflowWithResponse(ctx, wf.JSON201.Id,
		&client.ExecuteWorkflowParams{XOrgId: org, Wait: &wait, Context: &noContext}, client.ExecuteRequest{Input: &input})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, waited.StatusCode(), string(waited.Body))
	require.NotNil(t, waited.JSON200, string(waited.Body))
	require.Equal(t, client.RunStatusCompleted, waited.JSON200.Status)
	require.Len(t, waited.JSON200.Steps, 3)
	require.Nil(t, waited.JSON200.Context, "?context=false")

	// Errors come back typed: problem+json with the machine code.
	missing, err := c.GetRunContextWithResponse(ctx, runID, "nope", &client.GetRunContextParams{XOrgId: org})
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, missing.StatusCode())
	require.NotNil(t, missing.ApplicationproblemJSON404, string(missing.Body))
	require.Equal(t, "not_found", missing.ApplicationproblemJSON404.Code)
}
