package authoring_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/authoring"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// worked is a library entry: a prompt, the bundle a model drafts for it (the scripted
// model's answer), and what the bundle must hold.
type worked struct {
	prompt  string
	reply   string
	steps   []string // the step types of the drafted workflow, in order
	tables  []string
	actions []string
	input   string         // a run's input once published
	status  string         // the run's status after working it
	rows    map[string]int // rows each table holds after the run
}

var library = map[string]worked{
	"onboarding": {
		prompt: "When a new customer signs up, ask them for their company size in a form, have sales approve, then store the customer.",
		reply: `{"workflow_name": "Customer onboarding",
		  "svc_workflow_definition": {"actions": [
		    {"type": "PbotForm", "properties": {"expected_keys": ["company_size"]}},
		    {"type": "PbotApproval", "properties": {"approver_role": "sales", "comment": "New customer {{input.email}}"}},
		    {"type": "store-customer", "properties": {}}]},
		  "actions_to_register": [{"action_name": "store-customer", "kind": "custom-table", "description": "Keeps the customer",
		    "properties": {"table": "onboarded_customers", "operation": "upsert", "keys": ["email"], "values": ["{{input.email}}"],
		      "fields": {"company_size": "{{company_size}}"}}}],
		  "custom_tables_to_create": [{"name": "onboarded_customers", "fields": {"email": "text", "company_size": "text"}}],
		  "workflow_description": "Onboards a customer after a form and an approval",
		  "external_dependency_notes": []}`,
		steps: []string{"PbotForm", "PbotApproval", "store-customer"}, tables: []string{"onboarded_customers"}, actions: []string{"store-customer"},
		input: `{"email": "ada@example.com"}`, status: "paused",
	},
	"exceptions": {
		prompt: "Record each payment exception in a table and notify our CRM over HTTP with our API key.",
		reply: "```json\n" + `{"workflow_name": "Payment exceptions",
		  "svc_workflow_definition": {"actions": [
		    {"type": "custom-table", "properties": {"table": "payment_exceptions", "operation": "write", "keys": ["ref"], "values": ["{{input.ref}}"]}}]},
		  "actions_to_register": [],
		  "custom_tables_to_create": [{"name": "payment_exceptions", "fields": {"ref": "text"}}],
		  "workflow_description": "Writes exceptions",
		  "external_dependency_notes": []}` + "\n```",
		steps: []string{"custom-table"}, tables: []string{"payment_exceptions"},
		input: `{"ref": "INV-7"}`, status: "completed", rows: map[string]int{"payment_exceptions": 1},
	},
	"reconciliation": {
		prompt: "Reconcile the bank statement against the ERP export by invoice, keep the differences in an exceptions table and have finance approve.",
		reply: `{"workflow_name": "Bank reconciliation",
		  "svc_workflow_definition": {"actions": [
		    {"type": "nway_match", "properties": {"sets": [{"key": "bank", "records": "@input.bank"}, {"key": "erp", "records": "@input.erp"}],
		      "matchOn": ["invoice"], "tolerances": {"amount": {"type": "currency", "value": 0.01}}, "exceptionTable": "rec_exceptions"}},
		    {"type": "PbotApproval", "properties": {"approver_role": "finance", "comment": "Review the exceptions"}}]},
		  "actions_to_register": [],
		  "custom_tables_to_create": [{"name": "rec_exceptions", "fields": {"run_id": "text", "match_key": "text", "classification": "text",
		    "missing_legs": "text", "discrepancy_fields": "text", "details": "text", "status": "text", "provenance": "text"}}],
		  "workflow_description": "Matches bank lines to ERP invoices; exceptions wait for finance",
		  "external_dependency_notes": ["The bank and ERP records come in the run's input"]}`,
		steps: []string{"nway_match", "PbotApproval"}, tables: []string{"rec_exceptions"},
		input: `{"bank": [{"invoice": "A1", "amount": 10, "date": "2026-11-01"}],
		  "erp": [{"invoice": "A1", "amount": 10, "date": "2026-11-01"}, {"invoice": "B2", "amount": 5, "date": "2026-11-02"}]}`,
		status: "paused", rows: map[string]int{"rec_exceptions": 1},
	},
	"triage": {
		prompt: "Triage each support ticket with an agent that decides its urgency, then log the ticket with it.",
		reply: `{"workflow_name": "Ticket triage",
		  "svc_workflow_definition": {"actions": [
		    {"type": "loop", "properties": {"mode": "react", "objective": "Decide the urgency (low, high) of the ticket: {{input.subject}}",
		      "tools": [], "max_iterations": 3, "result_key": "verdict"}},
		    {"type": "custom-table", "properties": {"table": "ticket_log", "operation": "write", "keys": ["subject"], "values": ["{{input.subject}}"],
		      "fields": {"urgency": "{{verdict.answer}}"}}}]},
		  "actions_to_register": [],
		  "custom_tables_to_create": [{"name": "ticket_log", "fields": {"subject": "text", "urgency": "text"}}],
		  "workflow_description": "An agent decides a ticket's urgency; the ticket is logged with it",
		  "external_dependency_notes": []}`,
		steps: []string{"loop", "custom-table"}, tables: []string{"ticket_log"},
		input: `{"subject": "Payments are down"}`, status: "completed", rows: map[string]int{"ticket_log": 1},
	},
}

// scripted answers each prompt from the library; a "retry:" prompt gets a bad bundle first
// and the library's on the second call; a "hopeless:" prompt only bad ones.
type scripted struct {
	mu    sync.Mutex
	calls map[string]int
	last  []agent.Message
}

const badBundle = `{"workflow_name": "Bad", "svc_workflow_definition": {"actions": [
  {"type": "custom-table", "properties": {"table": "nowhere", "operation": "write", "keys": ["k"], "values": ["v"]}},
  {"type": "call-crm", "properties": {}}]},
  "actions_to_register": [{"action_name": "call-crm", "kind": "http", "url": "orgconfig:crm_url", "headers": {"Authorization": "orgconfig:crm_token"}}],
  "custom_tables_to_create": [], "workflow_description": "bad", "external_dependency_notes": ["crm_url is the CRM's address"]}`

func (s *scripted) Chat(_ context.Context, req agent.Request) (*agent.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(req.Tools) > 0 {
		// An agent of a drafted workflow (the triage one): it completes at once.
		return &agent.Response{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "__complete__",
			Arguments: json.RawMessage(`{"answer": "high", "confidence": 0.9}`)}}}, FinishReason: agent.FinishToolCalls}, nil
	}
	prompt := req.Messages[1].Content
	s.calls[prompt]++
	s.last = req.Messages
	reply := ""
	switch {
	case strings.HasPrefix(prompt, "retry:"):
		reply = badBundle
		if s.calls[prompt] > 1 {
			reply = library["onboarding"].reply
		}
	case strings.HasPrefix(prompt, "hopeless:"):
		reply = badBundle
	default:
		for _, w := range library {
			if w.prompt == prompt {
				reply = w.reply
			}
		}
	}
	return &agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: reply}, FinishReason: agent.FinishStop}, nil
}

func draftingSetup(t *testing.T, dialect string) (*enginetest.Bundle, *scripted) {
	t.Helper()
	sc := &scripted{calls: map[string]int{}}
	st := store.OpenTest(t, dialect)
	eng, err := engine.New(engine.Config{Store: st, Keyring: enginetest.NewKeyring(t, enginetest.GenerateKey(t)),
		ModelFactory: func(string, string, *http.Client) (agent.Model, error) { return sc, nil }})
	require.NoError(t, err)
	b := &enginetest.Bundle{Eng: eng, St: st, Ctx: context.Background()}
	_, _, err = eng.SetOrgConfig(b.Ctx, "o1", engine.LLMAPIKey, "sk-drafting-test")
	require.NoError(t, err)
	return b, sc
}

func generate(t *testing.T, b *enginetest.Bundle, prompt string) *svctype.Generation {
	t.Helper()
	g, err := b.Eng.Generate(b.Ctx, "o1", prompt, engine.LLMOptions{Model: "gpt-test"})
	require.NoError(t, err)
	require.Equal(t, svctype.GenerationProcessing, g.Status)
	_, err = b.Eng.Work(b.Ctx)
	require.NoError(t, err)
	g, err = b.Eng.GetGeneration(b.Ctx, "o1", g.ID)
	require.NoError(t, err)
	return g
}

// TestDraftedBundlesRunEndToEnd: each worked prompt drafts a bundle of the expected shape,
// which composes, publishes and runs.
func TestDraftedBundlesRunEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b, _ := draftingSetup(t, d)
			prj, err := b.Eng.CreateProject(b.Ctx, "o1", "Drafted", "")
			require.NoError(t, err)
			for name, w := range library {
				g := generate(t, b, w.prompt)
				require.Equal(t, svctype.GenerationCompleted, g.Status, "%s: %v", name, g.Errors)
				require.Equal(t, 1, g.Attempts)
				var doc struct {
					Def struct {
						Actions []struct{ Type string }
					} `json:"svc_workflow_definition"`
					Tables  []struct{ Name string } `json:"custom_tables_to_create"`
					Actions []struct {
						Name string `json:"action_name"`
					} `json:"actions_to_register"`
					Notes []string `json:"external_dependency_notes"`
				}
				require.NoError(t, json.Unmarshal(g.Bundle, &doc))
				var steps, tables, actions []string
				for _, s := range doc.Def.Actions {
					steps = append(steps, s.Type)
				}
				for _, x := range doc.Tables {
					tables = append(tables, x.Name)
				}
				for _, x := range doc.Actions {
					actions = append(actions, x.Name)
				}
				require.Equal(t, w.steps, steps, name)
				require.Equal(t, w.tables, tables, name)
				require.Equal(t, w.actions, actions, name)

				dsl, wfName, err := authoring.SplitBundle(g.Bundle)
				require.NoError(t, err)
				require.NotEmpty(t, wfName)
				proc, err := b.Eng.CreateProcess(b.Ctx, "o1", svctype.Process{ProjectID: prj.ID, Name: wfName})
				require.NoError(t, err)
				bnd, err := b.Eng.Compose(b.Ctx, "o1", proc.ID, engine.Compose{DSL: dsl})
				require.NoError(t, err, name)
				_, err = b.Eng.Publish(b.Ctx, "o1", bnd.ID, "drafted")
				require.NoError(t, err, name)
				run, err := b.Eng.ExecuteProcess(b.Ctx, "o1", proc.ID, json.RawMessage(w.input))
				require.NoError(t, err)
				_, err = b.Eng.Work(b.Ctx)
				require.NoError(t, err)
				doc2, err := b.Eng.RunStatus(b.Ctx, "o1", run.ID)
				require.NoError(t, err)
				require.Equal(t, w.status, string(doc2.Status), name)
				for table, n := range w.rows {
					rows, err := b.Eng.ReadRows(b.Ctx, "o1", table, nil, 100)
					require.NoError(t, err)
					require.Len(t, rows, n, "%s: rows of %s", name, table)
				}
			}
			evs, err := b.St.ListRunEvents(b.Ctx, "o1", "", svctype.ListOptions{Limit: 200})
			require.NoError(t, err)
			statuses := map[string]int{}
			for _, e := range evs.Items {
				if e.Event == "llm_generation_status" {
					var p map[string]any
					require.NoError(t, json.Unmarshal(e.Payload, &p))
					statuses[p["status"].(string)]++
				}
			}
			require.Equal(t, map[string]int{"processing": len(library), "completed": len(library)}, statuses)
		})
	}
}

// TestDraftingRetriesOnceWithTheErrors: a bundle that fails validation is sent back with
// the validator's errors; a second failure fails the generation with them.
func TestDraftingRetriesOnceWithTheErrors(t *testing.T) {
	t.Parallel()
	b, sc := draftingSetup(t, "sqlite")
	g := generate(t, b, "retry: onboarding")
	require.Equal(t, svctype.GenerationCompleted, g.Status, g.Errors)
	require.Equal(t, 2, g.Attempts)
	sc.mu.Lock()
	second := sc.last[len(sc.last)-1].Content
	sc.mu.Unlock()
	require.Contains(t, second, `"nowhere"`, "the errors went back to the model")
	require.Contains(t, second, "crm_token")

	g = generate(t, b, "hopeless: anything")
	require.Equal(t, svctype.GenerationFailed, g.Status)
	require.Equal(t, 2, g.Attempts)
	joined := strings.Join(g.Errors, "\n")
	require.Contains(t, joined, "/custom_tables_to_create")
	require.Contains(t, joined, `"crm_token"`, "an orgconfig key the notes do not name")
	require.NotContains(t, joined, `"crm_url"`, "the key the notes name is fine")
	require.Empty(t, g.Bundle)

	_, err := b.Eng.Generate(b.Ctx, "o1", strings.Repeat("x", authoring.MaxPromptLen+1), engine.LLMOptions{})
	var ve *engine.ValidationError
	require.ErrorAs(t, err, &ve)
	_, err = b.Eng.GetGeneration(b.Ctx, "o2", g.ID)
	require.ErrorIs(t, err, engine.ErrNotFound)

	// Without a model key the generation fails, saying so.
	g2, err := b.Eng.Generate(b.Ctx, "o3", "anything", engine.LLMOptions{})
	require.NoError(t, err)
	_, err = b.Eng.Work(b.Ctx)
	require.NoError(t, err)
	g2, err = b.Eng.GetGeneration(b.Ctx, "o3", g2.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.GenerationFailed, g2.Status)
	require.Contains(t, g2.Errors[0], engine.LLMAPIKey)
}

// TestCreateFromPrompt: one call drafts, creates the process, composes and publishes (or
// stops at the draft bundle); a draft that fails twice creates nothing.
func TestCreateFromPrompt(t *testing.T) {
	t.Parallel()
	b, _ := draftingSetup(t, "sqlite")
	prj, err := b.Eng.CreateProject(b.Ctx, "o1", "One shot", "")
	require.NoError(t, err)
	res, err := b.Eng.CreateFromPrompt(b.Ctx, "o1", authoring.FromPrompt{ProjectID: prj.ID, Prompt: library["exceptions"].prompt, Publish: true})
	require.NoError(t, err)
	require.Equal(t, "Payment exceptions", res.Process.Name, "named as drafted")
	require.Equal(t, svctype.BundlePublished, res.Bundle.Status)
	run, err := b.Eng.ExecuteProcess(b.Ctx, "o1", res.Process.ID, json.RawMessage(`{"ref": "X"}`))
	require.NoError(t, err)
	require.NotEmpty(t, run.ID)

	draft, err := b.Eng.CreateFromPrompt(b.Ctx, "o1", authoring.FromPrompt{ProjectID: prj.ID, Name: "Held back", Prompt: library["onboarding"].prompt})
	require.NoError(t, err)
	require.Nil(t, draft.Published)
	require.Equal(t, svctype.BundleDraft, draft.Bundle.Status)
	_, err = b.Eng.ExecuteProcess(b.Ctx, "o1", draft.Process.ID, nil)
	require.ErrorIs(t, err, engine.ErrProcessNotPublished)

	before, err := b.Eng.ListWorkflows(b.Ctx, "o1", svctype.ListOptions{})
	require.NoError(t, err)
	_, err = b.Eng.CreateFromPrompt(b.Ctx, "o1", authoring.FromPrompt{ProjectID: prj.ID, Name: "Never", Prompt: "hopeless: x", Publish: true})
	var df *authoring.ErrDraftFailed
	require.ErrorAs(t, err, &df)
	require.NotEmpty(t, df.Problems)
	after, err := b.Eng.ListWorkflows(b.Ctx, "o1", svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, after.Items, len(before.Items), "nothing was created")
}
