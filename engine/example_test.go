package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// An embedding program registers a step kind of its own and runs a workflow that uses it.
func ExampleEnvironment_RegisterStep() {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite::memory:")
	if err != nil {
		panic(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		panic(err)
	}
	env := engine.NewEnvironment()
	env.RegisterStep("shout", func(_ context.Context, call *svctype.StepCall) (any, error) {
		return strings.ToUpper(call.Properties["text"].(string)), nil
	})
	eng, _ := engine.New(engine.Config{Store: st, Env: env})
	w, err := eng.CreateWorkflow(ctx, "demo", engine.WorkflowInput{Name: "hello", Definition: json.RawMessage(`{
		"actions": [{"type": "shout", "outputKey": "greeting", "properties": {"text": "hello {{input.name}}"}}]}`)})
	if err != nil {
		panic(err)
	}
	run, _ := eng.Execute(ctx, "demo", w.ID, json.RawMessage(`{"name": "Ada"}`), engine.ExecuteOptions{})
	_, _ = eng.Work(ctx) // a host runs hosts/worker instead
	doc, _ := eng.RunStatus(ctx, "demo", run.ID)
	fmt.Println(doc.Status, doc.Context["greeting"])
	// Output: completed HELLO ADA
}
