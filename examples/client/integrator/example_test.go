package integrator_test

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/svcflow/svcflow/examples/client/integrator"
)

// Example_readme is README.md's Go client lines ("The OpenAPI documents and the clients"),
// kept here verbatim between the markers so that the compiler checks them;
// TestReadmeShowsTheExample checks that the README shows these lines. cmd/tour runs the
// whole path (an account, an organization and its key first).
func Example_readme() {
	ctx := context.Background()
	// README begin
	key := integrator.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+os.Getenv("SVC_KEY")) // svc_live_…
		return nil
	})
	svc, _ := integrator.NewClientWithResponses("http://localhost:8081", key)
	wf, _ := svc.CreateWorkflowWithResponse(ctx, integrator.WorkflowBody{Name: "hello", Definition: integrator.WorkflowDefinition{Actions: []integrator.WorkflowStep{}}})
	wait := "30s"
	run, _ := svc.ExecuteWorkflowWithResponse(ctx, wf.JSON201.Id, &integrator.ExecuteWorkflowParams{Wait: &wait},
		integrator.ExecuteBody{Input: &map[string]any{"name": "Ada"}})
	fmt.Println(run.JSON200.Status, run.JSON200.Steps) // typed; a 4xx: run.ApplicationproblemJSON404.Code and the like
	// README end
}
