package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/authoring"
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/steps"
	"github.com/svcflow/svcflow/engine/svctype"
)

// pendingEvents are the catalogue's events that no code of this build can emit yet, each with
// the feature it waits for. TestEventCatalogue fails when one of them is emitted after all,
// so an event leaves this list in the change that starts emitting it.
var pendingEvents = map[string]string{
	"playbook_request.listed":         "playbooks do not exist yet",
	"playbook_request.awaiting_admin": "playbooks do not exist yet",
	"playbook_request.returned":       "playbooks do not exist yet",
}

// eventShapes check the nested parts of payloads that the spec's tables spell out.
var eventShapes = map[string]func(t *testing.T, p map[string]any){
	"step.failed": func(t *testing.T, p map[string]any) {
		requireKeys(t, p["error"], "message")
	},
	"workflow_run_cancelled": func(t *testing.T, p map[string]any) {
		requireKeys(t, p["actor"], "type", "id")
	},
	"workflow_run_retried": func(t *testing.T, p map[string]any) {
		requireKeys(t, p["actor"], "type", "id")
		require.IsType(t, float64(0), p["from_step"])
	},
	"nway_matcher.started": func(t *testing.T, p map[string]any) {
		for leg, n := range p["leg_counts"].(map[string]any) {
			require.IsType(t, float64(0), n, "leg_counts[%s]", leg)
		}
	},
	"nway_matcher.completed": func(t *testing.T, p map[string]any) {
		requireKeys(t, p["counts"], "groups", "full", "missing_leg", "variance", "orphan")
	},
	"custom_table_dropped_fields": func(t *testing.T, p map[string]any) {
		require.NotEmpty(t, p["dropped"])
		for _, f := range p["dropped"].([]any) {
			require.IsType(t, "", f)
		}
	},
}

func requireKeys(t *testing.T, v any, keys ...string) {
	t.Helper()
	m, ok := v.(map[string]any)
	require.True(t, ok, "%v is not an object", v)
	require.ElementsMatch(t, keys, slices.Collect(maps.Keys(m)))
}

// fieldsMismatch says how payload's keys differ from fields ("" when they match): a required
// field missing, or a key the fields do not list. An optional field may be absent (or null).
func fieldsMismatch(fields []events.Field, payload map[string]any) string {
	listed := map[string]bool{}
	var problems []string
	for _, f := range fields {
		listed[f.Name] = true
		if _, ok := payload[f.Name]; !f.Optional && !ok {
			problems = append(problems, "missing "+f.Name)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(payload)) {
		if !listed[k] {
			problems = append(problems, "unlisted "+k)
		}
	}
	return strings.Join(problems, ", ")
}

// conforms reports how payload departs from every field set of spec, or "".
func conforms(spec *events.Spec, payload map[string]any) string {
	var why []string
	for _, fields := range append([][]events.Field{spec.Fields}, spec.Variants...) {
		m := fieldsMismatch(fields, payload)
		if m == "" {
			return ""
		}
		why = append(why, m)
	}
	return strings.Join(why, "; or ")
}

// catalogueScenario is one run of TestEventCatalogue and the events it must emit.
type catalogueScenario struct {
	name       string
	definition string
	input      string
	status     svctype.RunStatus
	// inTx starts the run with ExecuteTx; cancel cancels it before a worker takes it;
	// retry retries the failed run, whose retry must emit workflow_run_retried.
	inTx, cancel, retry bool
	// approve decides the approval the run paused at (status is then paused), after which
	// the run must end as approved.
	approve  int
	approved svctype.RunStatus
	// after, when set, moves the paused run on (a form submitted, a timer waited for) and
	// returns the status it must end in.
	after func(t *testing.T, b *enginetest.Logged, org, runID string) svctype.RunStatus
	want  []string
}

func catalogueScenarios() []catalogueScenario {
	// matcher.started is emitted only when left + right exceed steps.LargeMatchInput.
	var left, right []string
	for i := range steps.LargeMatchInput/2 + 1 {
		left = append(left, fmt.Sprintf(`{"ref": "r%d", "amount": %d}`, i, i))
	}
	for i := range steps.LargeMatchInput / 2 {
		right = append(right, fmt.Sprintf(`{"ref": "r%d", "amount": %d}`, i, i))
	}
	large := `{"l": [` + strings.Join(left, ",") + `], "r": [` + strings.Join(right, ",") + `]}`
	return []catalogueScenario{
		{
			name:       "form submitted",
			definition: `{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["answer"]}}]}`,
			input:      `{}`, status: svctype.RunPaused,
			after: func(t *testing.T, b *enginetest.Logged, org, runID string) svctype.RunStatus {
				_, err := b.Eng.SubmitForm(b.Ctx, org, runID, 0, engine.FormSubmission{Data: map[string]any{"answer": "42"}, ClaimedBy: "ada@example.com"})
				require.NoError(t, err)
				return svctype.RunCompleted
			},
			want: []string{"form_pause_created", "form_submitted"},
		},
		{
			name:       "form expired",
			definition: `{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["answer"], "ttl_seconds": 0.3, "reminder_intervals": [0.05]}}]}`,
			input:      `{}`, status: svctype.RunPaused,
			after: func(t *testing.T, b *enginetest.Logged, org, runID string) svctype.RunStatus {
				b.Clock.Advance(400 * time.Millisecond) // past the reminder and the expiry
				return svctype.RunCompleted
			},
			want: []string{"form_pause_created", "form_reminder", "form_expired"},
		},
		{
			name: "approval",
			definition: `{"actions": [{"type": "PbotApproval", "properties": {"comment": "pay {{input.x}}?", "request_payload": {"x": "@input.x"}}},
			  {"type": "PbotApproval", "properties": {"approver_role": "finance"}}]}`,
			input: `{"x": 5}`, status: svctype.RunPaused, approve: 2, approved: svctype.RunCompleted,
			want: []string{"pbot_approval_requested", "pbot_approval_decided"},
		},
		{
			name: "completes",
			definition: `{"actions": [
			  {"type": "custom-table", "properties": {"table": "customers", "operation": "upsert", "keys": ["email"], "values": ["@input.email"], "fields": {"junk": 1}}},
			  {"type": "log_note", "properties": {"fields": {"text": "stored", "stray": true}}},
			  {"type": "matcher", "properties": {"left": "@input.bank", "right": "@input.erp", "matchOn": ["inv"]}},
			  {"type": "nway_match", "properties": {
			    "sets": [{"key": "bank", "records": "@input.bank"}, {"key": "erp", "records": "@input.erp"}, {"key": "cards", "records": "@input.cards"}],
			    "matchOn": ["inv"], "tolerances": {"amount": {"type": "currency", "value": 0.1}}, "exceptionTable": "exceptions"}},
			  {"type": "recon", "properties": {"bank": "@input.bank", "erp": "@input.erp"}},
			  {"type": "loop", "properties": {"mode": "foreach", "items": "@input.bank", "result_key": "each",
			    "steps": [{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "@item.inv", "extra": "@index"}}}]}}
			]}`,
			input: `{"email": "a@x.io",
			  "bank": [{"inv": "I1", "amount": 100}, {"inv": "I2", "amount": 50}, {"inv": "I9", "amount": 5}],
			  "erp": [{"inv": "I1", "amount": 100}, {"inv": "I2", "amount": 51}],
			  "cards": [{"inv": "I1", "amount": 100}]}`,
			status: svctype.RunCompleted,
			want: []string{"workflow_run_started", "step.started", "step.completed", "custom_table_dropped_fields", "matcher.completed",
				"nway_matcher.started", "nway_matcher.completed", "loop.started", "workflow_run_completed"},
		},
		{
			name:       "large match",
			definition: `{"actions": [{"type": "matcher", "properties": {"left": "@input.l", "right": "@input.r", "matchOn": ["ref"]}}]}`,
			input:      large, status: svctype.RunCompleted,
			want: []string{"matcher.started", "matcher.completed"},
		},
		{
			name:       "gate false",
			definition: `{"condition": {"equal": ["@input.go", true]}, "actions": [{"type": "custom-table", "properties": {"table": "notes", "operation": "read"}}]}`,
			input:      `{"go": false}`, status: svctype.RunConditionNotMet,
			want: []string{"workflow_run_started", "workflow_run_completed"},
		},
		{
			name:       "started in a transaction",
			definition: `{"actions": [{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "tx"}}}]}`,
			inTx:       true, status: svctype.RunCompleted,
			want: []string{"workflow_run_started", "workflow_run_completed"},
		},
		{
			name:       "step fails",
			definition: `{"actions": [{"type": "custom-table", "properties": {"table": "nope", "operation": "read"}}]}`,
			status:     svctype.RunFailed,
			want:       []string{"step.failed", "workflow_run_failed"},
		},
		{
			name: "retried",
			definition: `{"actions": [{"type": "custom-table", "properties": {"table": "notes", "operation": "read"}},
			  {"type": "custom-table", "properties": {"table": "nope", "operation": "read"}}]}`,
			status: svctype.RunFailed, retry: true,
			want: []string{"step.failed", "workflow_run_failed"},
		},
		{
			name:       "cancelled",
			definition: `{"actions": [{"type": "custom-table", "properties": {"table": "notes", "operation": "read"}}]}`,
			cancel:     true, status: svctype.RunCancelled,
			want: []string{"workflow_run_started", "workflow_run_cancelled"},
		},
		{
			name: "loop fails",
			definition: `{"actions": [{"type": "loop", "properties": {"mode": "foreach", "items": "@input.lines",
			  "steps": [{"type": "custom-table", "properties": {"table": "notes", "operation": "read"}}]}}]}`,
			input: `{"lines": "not an array"}`, status: svctype.RunFailed,
			want: []string{"loop.failed", "step.failed", "workflow_run_failed"},
		},
		{
			name:       "matcher fails",
			definition: `{"actions": [{"type": "matcher", "properties": {"left": "@input.l", "right": "@input.r", "matchOn": ["ref"]}}]}`,
			input:      `{"l": "oops", "r": []}`, status: svctype.RunFailed,
			want: []string{"matcher.failed", "step.failed"},
		},
		{
			name: "nway fails",
			definition: `{"actions": [{"type": "nway_match", "properties": {
			    "sets": [{"key": "bank", "records": "@input.bank"}, {"key": "erp", "records": "@input.erp"}], "matchOn": ["inv"]}}]}`,
			input: `{"bank": [{"inv": "x"}], "erp": {"not": "an array"}}`, status: svctype.RunFailed,
			want: []string{"nway_matcher.failed", "step.failed"},
		},
		{
			name:       "nway action fails",
			definition: `{"actions": [{"type": "recon", "properties": {"bank": "@input.bank"}}]}`,
			input:      `{"bank": [{"inv": "x"}]}`, status: svctype.RunFailed,
			want: []string{"nway_matcher.failed", "step.failed"},
		},
		{
			name:       "llm without a key",
			definition: `{"actions": [{"type": "summarise", "properties": {"text": "@input.text"}}]}`,
			input:      `{"text": "the ledger"}`, status: svctype.RunFailed,
			want: []string{"llm_key_missing", "step.failed", "workflow_run_failed"},
		},
	}
}

// TestEventCatalogue drives every event this build can emit through the engine and checks
// each emitted payload against the catalogue (spec section 6): every required field, no
// field the catalogue does not list. A catalogue event is either emitted here or pending.
func TestEventCatalogue(t *testing.T) {
	t.Parallel()
	for name, why := range pendingEvents {
		_, ok := events.Lookup(name)
		require.True(t, ok, "pending event %q is not in the catalogue", name)
		require.NotEmpty(t, why)
	}
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := enginetest.SetupLoggedAt(t, dialect, false, enginetest.NewClock(time.Now()))
			const org = "evc"
			b.Bundle.CustomerTables(t, org)
			b.Bundle.ExceptionTable(t, org)
			b.Action(t, org, svctype.Action{Name: "log_note", Kind: svctype.ActionCustomTable, Properties: map[string]any{
				"table": "notes", "operation": "write"}})
			b.Action(t, org, svctype.Action{Name: "recon", Kind: svctype.ActionNWayMatch, Properties: map[string]any{
				"sets":    []any{map[string]any{"key": "bank", "records": "@input.bank"}, map[string]any{"key": "erp", "records": "@input.erp"}},
				"matchOn": []any{"inv"},
			}})
			b.Action(t, org, svctype.Action{Name: "summarise", Kind: svctype.ActionLLM, Template: "Summarise {{text}}"})

			runs := map[string]catalogueScenario{}
			for _, sc := range catalogueScenarios() {
				w := b.Workflow(t, org, sc.name, sc.definition)
				var run *svctype.Run
				var err error
				if sc.inTx {
					err = b.St.InTx(b.Ctx, func(ctx context.Context, tx engine.Tx) error {
						var txErr error
						run, txErr = b.Eng.ExecuteTx(ctx, tx, org, w.ID, json.RawMessage(sc.input), engine.ExecuteOptions{})
						return txErr
					})
				} else {
					run, err = b.Eng.Execute(b.Ctx, org, w.ID, json.RawMessage(sc.input), engine.ExecuteOptions{})
				}
				require.NoError(t, err, sc.name)
				if sc.cancel {
					_, err = b.Eng.CancelRun(b.Ctx, org, run.ID, "not needed", engine.Actor{Type: "user", ID: "u1"})
					require.NoError(t, err)
				}
				_, err = b.Eng.Work(b.Ctx)
				require.NoError(t, err)
				doc, err := b.Eng.RunStatus(b.Ctx, org, run.ID)
				require.NoError(t, err)
				require.Equal(t, sc.status, doc.Status, "%s: %s", sc.name, doc.Reason)
				for i := range sc.approve {
					_, err = b.Eng.DecideApproval(b.Ctx, org, run.ID, i, engine.ApprovalDecision{Approved: true, Comment: "fine"})
					require.NoError(t, err, sc.name)
					_, err = b.Eng.Work(b.Ctx)
					require.NoError(t, err)
				}
				if sc.after != nil {
					want := sc.after(t, b, org, run.ID)
					_, err = b.Eng.Work(b.Ctx)
					require.NoError(t, err)
					doc, err = b.Eng.RunStatus(b.Ctx, org, run.ID)
					require.NoError(t, err)
					require.Equal(t, want, doc.Status, "%s: %s", sc.name, doc.Reason)
				}
				if sc.approve > 0 {
					doc, err = b.Eng.RunStatus(b.Ctx, org, run.ID)
					require.NoError(t, err)
					require.Equal(t, sc.approved, doc.Status, "%s: %s", sc.name, doc.Reason)
				}
				runs[run.ID] = sc
				if sc.retry {
					next, err := b.Eng.RetryRun(b.Ctx, org, run.ID, "the table exists now", engine.Actor{Type: "user", ID: "u1"})
					require.NoError(t, err, sc.name)
					_, err = b.Eng.Work(b.Ctx)
					require.NoError(t, err)
					runs[next.ID] = catalogueScenario{name: sc.name + ", its retry", want: []string{"workflow_run_retried", "workflow_run_failed"}}
				}
			}

			// The document events belong to no run. An engine whose clock runs an hour behind
			// the store's makes a document due for expiry at once.
			docs := documentEvents(t, b.Bundle, org)

			emitted := map[string]int{}
			check := func(where string, e svctype.Event) map[string]any {
				spec, ok := events.Lookup(e.Event)
				require.True(t, ok, "%s: %q is not in the catalogue", where, e.Event)
				require.Equal(t, spec.Name, e.Event, "%s: emitted under an alias", where)
				var p map[string]any
				require.NoError(t, json.Unmarshal(e.Payload, &p), "%s: %s", where, e.Event)
				require.Empty(t, conforms(spec, p), "%s: %s payload %s", where, e.Event, e.Payload)
				if shape := eventShapes[e.Event]; shape != nil {
					shape(t, p)
				}
				emitted[e.Event]++
				return p
			}

			page, err := b.Eng.ListRuns(b.Ctx, org, engine.RunFilter{ListOptions: svctype.ListOptions{Limit: 500}})
			require.NoError(t, err)
			require.Len(t, page.Items, len(runs))
			for _, run := range page.Items {
				sc, ok := runs[run.ID]
				require.True(t, ok, "a run no scenario started: %s", run.ID)
				evs, err := b.Eng.RunEvents(b.Ctx, org, run.ID, svctype.ListOptions{Limit: 500})
				require.NoError(t, err)
				require.Empty(t, evs.NextCursor)
				var names []string
				for _, e := range evs.Items {
					p := check(sc.name, e)
					names = append(names, e.Event)
					require.Equal(t, run.ID, e.RunID)
					if _, ok := p["run_id"]; ok {
						require.Equal(t, run.ID, p["run_id"], "%s: %s", sc.name, e.Event)
					}
				}
				// Emission ties: execute (and ExecuteTx) emits workflow_run_started, first.
				require.Equal(t, "workflow_run_started", names[0], sc.name)
				require.Equal(t, 1, count(names, "workflow_run_started"), sc.name)
				for _, w := range sc.want {
					require.Contains(t, names, w, sc.name)
				}
			}
			for _, e := range docs {
				require.Empty(t, e.RunID, e.Event)
				check("documents", e)
			}
			for _, e := range externalFormEvents(t, b.Bundle, org) {
				require.Empty(t, e.RunID, e.Event)
				check("external forms", e)
			}
			for _, e := range modelEvents(t, b.Bundle) {
				check("agents and drafting", e)
			}

			// Emission ties: every nway_match that ran (the step, the stored action) emitted
			// started and completed; every write with undeclared columns emitted
			// custom_table_dropped_fields (two top-level writes, one per foreach element).
			require.Equal(t, 2, emitted["nway_matcher.started"])
			require.Equal(t, 2, emitted["nway_matcher.completed"])
			require.Equal(t, 2, emitted["nway_matcher.failed"])
			require.Equal(t, 2+3, emitted["custom_table_dropped_fields"])

			for _, spec := range events.Catalogue {
				why, pending := pendingEvents[spec.Name]
				if pending {
					require.Zero(t, emitted[spec.Name], "%s is emitted: take it off pendingEvents (%s)", spec.Name, why)
					continue
				}
				require.NotZero(t, emitted[spec.Name], "%s is neither emitted by this test nor pending", spec.Name)
			}
		})
	}
}

func count(names []string, name string) int {
	n := 0
	for _, x := range names {
		if x == name {
			n++
		}
	}
	return n
}

// documentEvents makes each document event happen once in org and returns the events that
// belong to no run.
func documentEvents(t *testing.T, b *enginetest.Bundle, org string) []svctype.Event {
	t.Helper()
	clk := enginetest.NewClock(time.Now().Add(-time.Hour).UTC().Truncate(time.Second))
	eng, err := engine.New(engine.Config{Store: b.St, Now: clk.Now})
	require.NoError(t, err)
	at := clk.Now().Add(30 * time.Minute)
	soon, err := eng.UploadDocument(b.Ctx, org, engine.DocumentUpload{Name: "soon.csv", Content: []byte("n\n1\n"), Tags: []string{"tmp"}, ExpiresAt: &at})
	require.NoError(t, err)
	_, err = eng.AddDocumentVersion(b.Ctx, org, soon.ID, []byte("n\n2\n"), "text/csv")
	require.NoError(t, err)
	gone, err := eng.UploadDocument(b.Ctx, org, engine.DocumentUpload{Name: "gone.json", Content: []byte(`[{"n": 1}]`)})
	require.NoError(t, err)
	require.NoError(t, eng.DeleteDocument(b.Ctx, org, gone.ID))
	ran, err := eng.Work(b.Ctx)
	require.NoError(t, err)
	require.Equal(t, 1, ran, "the expiry job")
	page, err := b.St.ListRunEvents(b.Ctx, org, "", svctype.ListOptions{Limit: 500})
	require.NoError(t, err)
	var names []string
	for _, e := range page.Items {
		names = append(names, e.Event)
	}
	require.Equal(t, []string{"document.uploaded", "document.version_created", "document.uploaded", "document.deleted", "document.expired"}, names)
	return page.Items
}

// externalFormEvents makes each external form event happen once in org (after the
// document events) and returns them.
func externalFormEvents(t *testing.T, b *enginetest.Bundle, org string) []svctype.Event {
	t.Helper()
	w := b.Workflow(t, org, "intake-trigger", `{"actions": []}`)
	in := engine.ExternalFormInput{Name: "Intake", IsPublic: true, TriggerWorkflowID: w.ID,
		Schema: json.RawMessage(`{"version": "form_schema_v1", "pages": [{"id": "p", "fields": [{"key": "email", "type": "email", "label": "Email"}]}]}`)}
	f, err := b.Eng.CreateExternalForm(b.Ctx, org, in)
	require.NoError(t, err)
	in.Settings.RequireAuth = true
	_, err = b.Eng.ReplaceExternalForm(b.Ctx, org, f.ID, in)
	require.NoError(t, err)
	_, err = b.Eng.SubmitPublicForm(b.Ctx, f.ID, engine.PublicSubmission{Payload: map[string]any{"email": "ada@example.com"}, SubmittedBy: "ada@example.com"})
	require.NoError(t, err)
	require.NoError(t, b.Eng.DeleteExternalForm(b.Ctx, org, f.ID))
	page, err := b.St.ListRunEvents(b.Ctx, org, "", svctype.ListOptions{Limit: 500})
	require.NoError(t, err)
	var out []svctype.Event
	var names []string
	for _, e := range page.Items {
		if strings.HasPrefix(e.Event, "external_form_") {
			out, names = append(out, e), append(names, e.Event)
		}
	}
	require.Equal(t, []string{"external_form_created", "external_form_updated", "external_form_submitted", "external_form_deleted"}, names)
	return out
}

// catalogueModel answers as a model would for the events that need one: a drafted bundle
// for the drafting prompt, and for an agent the tool call its objective names.
type catalogueModel struct{}

func (catalogueModel) Chat(_ context.Context, req agent.Request) (*agent.Response, error) {
	var system, objective string
	for _, m := range req.Messages {
		switch {
		case m.Role == agent.RoleSystem && system == "":
			system = m.Content
		case m.Role == agent.RoleUser && objective == "":
			objective = m.Content
		}
	}
	reply := agent.Message{Role: agent.RoleAssistant}
	switch {
	case strings.HasPrefix(system, "You draft workflow bundles"):
		reply.Content = `{"workflow_name": "Notes", "svc_workflow_definition": {"actions": [
		  {"type": "custom-table", "properties": {"table": "drafted_notes", "operation": "write", "fields": {"text": "{{input.text}}"}}}]},
		  "actions_to_register": [], "custom_tables_to_create": [{"name": "drafted_notes", "fields": {"text": "text"}}],
		  "workflow_description": "Keeps a note", "external_dependency_notes": []}`
	case strings.Contains(objective, "ask a person"):
		reply.ToolCalls = []agent.ToolCall{{ID: "c1", Name: "__pause_for_human__", Arguments: json.RawMessage(`{"question": "Go on?"}`)}}
	default:
		reply.ToolCalls = []agent.ToolCall{{ID: "c1", Name: "__complete__", Arguments: json.RawMessage(`{"answer": "done", "confidence": 0.9}`)}}
	}
	return &agent.Response{Message: reply, Usage: agent.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}}, nil
}

// modelEvents makes each agent event, each llm_generation_status and the
// workflow_creation_status of a publication happen, with an engine over b's store whose
// model is catalogueModel, in organizations of their own, and returns their events: an
// agent's carry its agent run's id as their run id, the others none.
func modelEvents(t *testing.T, b *enginetest.Bundle) []svctype.Event {
	t.Helper()
	const org, keyless = "evc-model", "evc-nokey"
	cfg := engine.Config{Store: b.St, Keyring: enginetest.NewKeyring(t, enginetest.GenerateKey(t)),
		ModelFactory: func(string, string, *http.Client) (agent.Model, error) { return catalogueModel{}, nil }}
	if b.Clock != nil {
		cfg.Now = b.Clock.Now // the store's: what this engine enqueues is due by it
	}
	eng, err := engine.New(cfg)
	require.NoError(t, err)
	_, _, err = eng.SetOrgConfig(b.Ctx, org, engine.LLMAPIKey, "sk-catalogue")
	require.NoError(t, err)
	work := func() {
		_, err := eng.Work(b.Ctx)
		require.NoError(t, err)
	}
	var out []svctype.Event
	var names []string
	collect := func(org, runID string) {
		page, err := b.St.ListRunEvents(b.Ctx, org, runID, svctype.ListOptions{Limit: 500})
		require.NoError(t, err)
		for _, e := range page.Items {
			require.Equal(t, runID, e.RunID, e.Event)
			out, names = append(out, e), append(names, e.Event)
		}
	}

	// Standalone agents: one completes, one asks a person, one has no model key.
	done, err := eng.ExecuteAgent(b.Ctx, org, engine.AgentInput{Objective: "say done"})
	require.NoError(t, err)
	asks, err := eng.ExecuteAgent(b.Ctx, org, engine.AgentInput{Objective: "ask a person first"})
	require.NoError(t, err)
	fails, err := eng.ExecuteAgent(b.Ctx, keyless, engine.AgentInput{Objective: "say done"})
	require.NoError(t, err)
	work()
	// A workflow's agent, cancelled with its run while it waits for a person.
	w, err := eng.CreateWorkflow(b.Ctx, org, engine.WorkflowInput{Name: "agent step", Definition: json.RawMessage(
		`{"actions": [{"type": "loop", "outputKey": "out", "properties": {"mode": "react", "objective": "ask a person"}}]}`)})
	require.NoError(t, err)
	run, err := eng.Execute(b.Ctx, org, w.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
	require.NoError(t, err)
	work()
	_, err = eng.CancelRun(b.Ctx, org, run.ID, "not needed", engine.Actor{Type: "user", ID: "u1"})
	require.NoError(t, err)
	kids, err := eng.ListAgents(b.Ctx, org, "cancelled", svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, kids.Items, 1)
	for _, r := range []struct{ org, id string }{{org, done.ID}, {org, asks.ID}, {keyless, fails.ID}, {org, kids.Items[0].ID}, {org, run.ID}} {
		collect(r.org, r.id)
	}

	// Drafting: a generation that completes, one that fails (no model key); a publication.
	g, err := eng.Generate(b.Ctx, org, "Keep a note of each request.", engine.LLMOptions{})
	require.NoError(t, err)
	_, err = eng.Generate(b.Ctx, keyless, "Keep a note of each request.", engine.LLMOptions{})
	require.NoError(t, err)
	work()
	g, err = eng.GetGeneration(b.Ctx, org, g.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.GenerationCompleted, g.Status, g.Errors)
	prj, err := eng.CreateProject(b.Ctx, org, "Notes", "")
	require.NoError(t, err)
	proc, err := eng.CreateProcess(b.Ctx, org, svctype.Process{ProjectID: prj.ID, Name: "Notes", AuthoringMode: "process_first"})
	require.NoError(t, err)
	dsl, _, err := authoring.SplitBundle(g.Bundle)
	require.NoError(t, err)
	bnd, err := eng.Compose(b.Ctx, org, proc.ID, engine.Compose{DeploymentShape: "single_workflow", Summary: "v1", DSL: dsl})
	require.NoError(t, err)
	_, err = eng.Publish(b.Ctx, org, bnd.ID, "first")
	require.NoError(t, err)
	collect(org, "")
	collect(keyless, "")

	require.Equal(t, []string{
		"agent.started", "agent.completed",
		"agent.started", "agent.paused", "pbot_approval_requested",
		"agent.started", "agent.failed",
		"agent.paused", "agent.cancelled", // a workflow's agent starts with its loop.started
		"workflow_run_started", "step.started", "loop.started", "workflow_run_cancelled",
		"llm_generation_status", "llm_generation_status", "workflow_creation_status",
		"llm_generation_status", "llm_generation_status",
	}, names)
	return out
}
