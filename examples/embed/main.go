// Command embed runs svcflow's engine inside a Go program of its own: an in-memory SQLite
// store, a step kind of the program's own registered next to the built-ins, a workflow, one
// run executed by an in-process worker.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/worker"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, "sqlite::memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Store: st})
	if err != nil {
		log.Fatal(err)
	}
	eng.RegisterStep("shout", func(_ context.Context, call *svctype.StepCall) (any, error) {
		text, _ := call.Properties["text"].(string)
		return map[string]any{"text": strings.ToUpper(text)}, nil
	})
	w, err := eng.CreateWorkflow(ctx, "demo", engine.WorkflowInput{Name: "hello", Definition: json.RawMessage(`{
		"actions": [{"type": "shout", "outputKey": "greeting", "properties": {"text": "hello {{input.name}}"}}]
	}`)})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = worker.New(eng, worker.Options{}).Run(ctx) }()

	run, err := eng.Execute(ctx, "demo", w.ID, json.RawMessage(`{"name": "Ada"}`), engine.ExecuteOptions{})
	if err != nil {
		log.Fatal(err)
	}
	// WaitRun returns as soon as a commit moves the run on from running (it ends, or pauses
	// for a person), or after engine.MaxWait with the run still running: no polling loop.
	status, err := eng.WaitRun(ctx, "demo", run.ID, run.Status, engine.MaxWait)
	if err != nil {
		log.Fatal(err)
	}
	if !status.Terminal() {
		log.Fatalf("run %s is %s", run.ID, status)
	}
	doc, err := eng.RunStatus(ctx, "demo", run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(doc.Status, doc.Context["greeting"])
	cancel()
	<-done
}
