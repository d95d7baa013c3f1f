package authoring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Drafting: a prompt becomes a bundle by the organization's model, validated as a composed
// bundle is (CheckDSL) plus the notes' cross-check; on failure the model is asked once more
// with the validator's errors, then the generation fails with them.

// JobGenerate is the job kind that drafts one generation.
const JobGenerate = "authoring.generate"

// Limits of drafting.
const (
	MaxPromptLen    = 20_000
	DefaultModel    = "gpt-4o-mini"
	draftAttempts   = 2
	draftMaxTokens  = 8000
	draftCallTimout = 2 * time.Minute
)

// ErrNoModelKey: the organization has no model key (org config llm:api_key).
var ErrNoModelKey = errors.New("the organization has no org config key " + orgconfig.LLMAPIKey)

// ModelFunc builds the organization's model client from its base URL and key.
type ModelFunc func(baseURL, apiKey string) (agent.Model, error)

// WithModel gives drafting its model client builder.
func (a *Authoring) WithModel(m ModelFunc) *Authoring { a.model = m; return a }

// LLMOptions are a drafting request's model options.
type LLMOptions struct {
	Model       string
	Temperature *float64
}

// Generate records a generation and queues its drafting: the answer is at once.
func (a *Authoring) Generate(ctx context.Context, orgID, prompt string, o LLMOptions) (*svctype.Generation, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	if err := checkPrompt(prompt, o); err != nil {
		return nil, err
	}
	now := a.core.Now().UTC()
	g := &svctype.Generation{ID: "gen_" + uuid.NewString(), OrgID: orgID, Prompt: prompt, Model: o.Model, Temperature: o.Temperature,
		Status: svctype.GenerationProcessing, CreatedAt: now, UpdatedAt: now}
	err := a.store.InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		if err := tx.CreateGeneration(ctx, g); err != nil {
			return err
		}
		if err := a.generationEvent(ctx, stx, g); err != nil {
			return err
		}
		return tx.EnqueueJob(ctx, &svctype.Job{OrgID: orgID, Kind: JobGenerate, RunID: g.ID})
	})
	if err != nil {
		return nil, err
	}
	a.core.Notify()
	return g, nil
}

func checkPrompt(prompt string, o LLMOptions) error {
	var ps []core.Problem
	switch {
	case strings.TrimSpace(prompt) == "":
		ps = append(ps, core.Problem{Pointer: "/prompt", Message: "required: the process, in words"})
	case len(prompt) > MaxPromptLen:
		ps = append(ps, core.Problem{Pointer: "/prompt", Message: fmt.Sprintf("at most %d characters", MaxPromptLen)})
	}
	if o.Temperature != nil && (*o.Temperature < 0 || *o.Temperature > 2) {
		ps = append(ps, core.Problem{Pointer: "/llmOptions/temperature", Message: "between 0 and 2"})
	}
	if len(o.Model) > 200 {
		ps = append(ps, core.Problem{Pointer: "/llmOptions/model", Message: "at most 200 characters"})
	}
	if len(ps) > 0 {
		return invalid(ps...)
	}
	return nil
}

// GetGeneration returns a generation.
func (a *Authoring) GetGeneration(ctx context.Context, orgID, id string) (*svctype.Generation, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	return a.store.GetGeneration(ctx, orgID, id)
}

func (a *Authoring) generationEvent(ctx context.Context, stx storage.Tx, g *svctype.Generation) error {
	payload := events.LLMGenerationStatusEvent{GenerationID: g.ID, Status: g.Status}
	switch g.Status {
	case svctype.GenerationCompleted:
		payload.Result = &events.GenerationResult{Attempts: g.Attempts}
	case svctype.GenerationFailed:
		payload.Result = &events.GenerationResult{Attempts: g.Attempts, Errors: g.Errors}
	}
	ev, err := a.core.OrgEvent(g.OrgID, "llm_generation_status", payload)
	if err != nil {
		return err
	}
	return a.core.Emit(ctx, stx, []svctype.Event{ev}, nil)
}

// generateJob drafts a generation: the model calls are made with no transaction held; the
// outcome, its event and the job's completion are one transaction. A crash before that
// drafts again from the prompt (a draft is a proposal: asking again is harmless).
func (a *Authoring) generateJob(ctx context.Context, job *svctype.Job) error {
	g, err := a.store.GetGeneration(ctx, job.OrgID, job.RunID)
	if err != nil && !errors.Is(err, core.ErrNotFound) {
		return err
	}
	if err == nil && g.Status == svctype.GenerationProcessing {
		bundle, attempts, problems, derr := a.Draft(ctx, g.OrgID, g.Prompt, LLMOptions{Model: g.Model, Temperature: g.Temperature})
		g.Attempts = attempts
		switch {
		case derr != nil && !errors.Is(derr, ErrNoModelKey):
			return derr // the model did not answer: the job is retried
		case derr != nil:
			g.Status, g.Errors = svctype.GenerationFailed, []string{derr.Error()}
		case len(problems) > 0:
			g.Status, g.Errors = svctype.GenerationFailed, problems
		default:
			g.Status, g.Bundle = svctype.GenerationCompleted, bundle
		}
		g.UpdatedAt = a.core.Now().UTC()
	}
	return a.store.InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		if g != nil && g.Status != svctype.GenerationProcessing {
			switch err := tx.FinishGeneration(ctx, g); {
			case err == nil:
				if err := a.generationEvent(ctx, stx, g); err != nil {
					return err
				}
			case !errors.Is(err, core.ErrConflict):
				return err
			}
		}
		return tx.CompleteJob(ctx, job)
	})
}

// Draft asks the organization's model for a bundle of prompt, and once more with the
// validator's errors when the first fails them. It answers the bundle, or the problems of
// the last attempt, and how many model calls it made. Each call is made as every call to
// another system is (core.OutsideCall): no transaction or step slot held.
func (a *Authoring) Draft(ctx context.Context, orgID, prompt string, o LLMOptions) (json.RawMessage, int, []string, error) {
	if err := checkPrompt(prompt, o); err != nil {
		return nil, 0, nil, err
	}
	m, err := a.orgModel(ctx, orgID)
	if err != nil {
		return nil, 0, nil, err
	}
	model := o.Model
	if model == "" {
		model = DefaultModel
	}
	msgs := []agent.Message{{Role: agent.RoleSystem, Content: draftingSystemPrompt(a.core)}, {Role: agent.RoleUser, Content: prompt}}
	var problems []string
	for attempt := 1; attempt <= draftAttempts; attempt++ {
		var resp *agent.Response
		var callErr error
		req := agent.Request{Model: model, Messages: msgs, MaxTokens: draftMaxTokens, Temperature: o.Temperature, JSON: true}
		if err := a.core.OutsideCall(ctx, orgID, draftCallTimout, func(ctx context.Context) { resp, callErr = m.Chat(ctx, req) }); err != nil {
			return nil, attempt - 1, nil, err
		}
		if callErr != nil {
			return nil, attempt - 1, nil, fmt.Errorf("the model did not answer: %w", callErr)
		}
		bundle, ps, err := a.checkDraft(ctx, orgID, resp.Message.Content)
		if err != nil {
			return nil, attempt, nil, err
		}
		if len(ps) == 0 {
			return bundle, attempt, nil, nil
		}
		problems = ps
		msgs = append(msgs, resp.Message, agent.Message{Role: agent.RoleUser,
			Content: "The bundle does not validate. Answer the whole bundle again, as one JSON object, with these fixed:\n- " + strings.Join(ps, "\n- ")})
	}
	return nil, draftAttempts, problems, nil
}

func (a *Authoring) orgModel(ctx context.Context, orgID string) (agent.Model, error) {
	if a.model == nil {
		return nil, ErrNoModelKey
	}
	key, err := a.core.Secret(ctx, orgID, orgconfig.LLMAPIKey)
	if errors.Is(err, core.ErrNotFound) || errors.Is(err, orgconfig.ErrNoMasterKey) {
		return nil, ErrNoModelKey
	}
	if err != nil {
		return nil, err
	}
	base, err := a.core.Secret(ctx, orgID, orgconfig.LLMBaseURL)
	if err != nil && !errors.Is(err, core.ErrNotFound) {
		return nil, err
	}
	return a.model(base, key)
}

var orgConfigRef = regexp.MustCompile(`orgconfig:([A-Za-z0-9_.:-]+)`)

// checkDraft validates a model's reply: one JSON object holding a DSL, a workflow_name and
// external_dependency_notes, each orgconfig: key the bundle uses named in the notes.
// Problems come back as "<pointer>: <message>".
func (a *Authoring) checkDraft(ctx context.Context, orgID, reply string) (json.RawMessage, []string, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(stripFence(reply))), &doc); err != nil {
		return nil, []string{"/: the reply is not one JSON object: " + err.Error()}, nil
	}
	var name string
	_ = json.Unmarshal(doc["workflow_name"], &name)
	var notes []string
	var ps []string
	if raw, ok := doc["external_dependency_notes"]; ok {
		if err := json.Unmarshal(raw, &notes); err != nil {
			ps = append(ps, "/external_dependency_notes: an array of strings")
		}
	}
	if strings.TrimSpace(name) == "" {
		ps = append(ps, "/workflow_name: required: a short name for the workflow")
	}
	delete(doc, "workflow_name")
	delete(doc, "external_dependency_notes")
	dsl, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, err
	}
	_, err = a.CheckDSL(ctx, orgID, orDefault(name, "drafted"), dsl, "")
	var ve *core.ValidationError
	switch {
	case errors.As(err, &ve):
		for _, p := range ve.Problems {
			ps = append(ps, orDefault(p.Pointer, "/")+": "+p.Message)
		}
	case err != nil:
		return nil, nil, err
	}
	joined := strings.Join(notes, "\n")
	seen := map[string]bool{}
	for _, m := range orgConfigRef.FindAllStringSubmatch(string(dsl), -1) {
		if !seen[m[1]] && !strings.Contains(joined, m[1]) {
			ps = append(ps, fmt.Sprintf("/external_dependency_notes: name org config key %q (set with POST /org-config) and what it holds", m[1]))
		}
		seen[m[1]] = true
	}
	if len(ps) > 0 {
		sort.Strings(ps)
		return nil, ps, nil
	}
	var bundle map[string]json.RawMessage
	_ = json.Unmarshal(dsl, &bundle)
	bundle["workflow_name"], _ = json.Marshal(name)
	if notes == nil {
		notes = []string{}
	}
	bundle["external_dependency_notes"], _ = json.Marshal(notes)
	out, err := json.Marshal(bundle)
	return out, nil, err
}

// SplitBundle separates a drafted bundle into the DSL the studio composes and its name.
func SplitBundle(bundle json.RawMessage) (dsl json.RawMessage, name string, err error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(bundle, &doc); err != nil {
		return nil, "", err
	}
	_ = json.Unmarshal(doc["workflow_name"], &name)
	delete(doc, "workflow_name")
	delete(doc, "external_dependency_notes")
	dsl, err = json.Marshal(doc)
	return dsl, name, err
}

func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```json")
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	return s
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// pauseTypes lists the step types that pause a run, as the run core's registry has them
// (the people in the loop's approvals and forms), each with its synopsis: ", PbotApproval
// ({approver_role, comment}), ...".
func pauseTypes(c *core.Core) string {
	var b strings.Builder
	for _, name := range c.PauseTypes() {
		b.WriteString(", " + name)
		if k, _ := c.LookupPause(name); k.Synopsis != "" {
			b.WriteString(" (" + k.Synopsis + ")")
		}
	}
	return b.String()
}

// draftingSystemPrompt tells the model what a bundle is and which step types exist.
func draftingSystemPrompt(c *core.Core) string {
	return `You draft workflow bundles for svcflow, a workflow automation service. Answer with ONE JSON object:
{
  "workflow_name": "short name",
  "svc_workflow_definition": {"actions": [ steps ]},
  "actions_to_register": [ action registrations ],
  "custom_tables_to_create": [ {"name": "table_name", "fields": {"column": "text|number|boolean|date|json"}} ],
  "workflow_description": "what the workflow does",
  "external_dependency_notes": [ "each org config key the bundle needs (orgconfig:<key>) and what it holds; other systems it calls" ]
}
A step is {"type": <type>, "properties": {...}}. Types: the primitives ` + strings.Join(c.Environment().Kinds(), ", ") +
		`, loop` + pauseTypes(c) + `; or the action_name of an action in actions_to_register.
An action registration is {"action_name", "kind": "http|db|llm|custom-table|nway_match", "description", ...} with the fields of its kind:
http {url, http_method, headers}, db {datasource: "orgconfig:db:<name>", query}, llm {template, model}, custom-table and nway_match {properties}.
A custom-table step writes or reads a table: {"table", "operation": "write|upsert|read", "keys": [...], "values": [...], "fields": {...}}; every table it names must be in custom_tables_to_create.
Templates read the run's input and earlier outputs: {{input.email}}. Secrets are never literal: write orgconfig:<key> and name the key in external_dependency_notes.`
}

// FromPrompt is a create-from-prompt request.
type FromPrompt struct {
	ProjectID   string
	Name        string // default: the drafted workflow_name
	Description string
	Prompt      string
	LLM         LLMOptions
	// Publish, true by default at the route, publishes the composed bundle.
	Publish bool
}

// CreatedFromPrompt is what create-from-prompt made.
type CreatedFromPrompt struct {
	Process   *svctype.Process
	Bundle    *svctype.Bundle
	Published *Published
	Attempts  int
}

// ErrDraftFailed: the model's bundle did not validate, twice.
type ErrDraftFailed struct{ Problems []string }

func (e *ErrDraftFailed) Error() string {
	return "the drafted bundle does not validate: " + strings.Join(e.Problems, "; ")
}

// CreateFromPrompt drafts a bundle from a prompt (synchronously: the model calls are made
// with nothing held), creates the process, composes the bundle and, unless told not to,
// publishes it. A draft that fails validation twice is *ErrDraftFailed and creates nothing.
func (a *Authoring) CreateFromPrompt(ctx context.Context, orgID string, in FromPrompt) (*CreatedFromPrompt, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	if err := checkPrompt(in.Prompt, in.LLM); err != nil {
		return nil, err
	}
	if in.ProjectID == "" {
		return nil, invalid(core.Problem{Pointer: "/project_id", Message: "required"})
	}
	if _, err := a.store.GetProject(ctx, orgID, in.ProjectID); errors.Is(err, core.ErrNotFound) {
		return nil, invalid(core.Problem{Pointer: "/project_id", Message: "no such project"})
	} else if err != nil {
		return nil, err
	}
	bundle, attempts, problems, err := a.Draft(ctx, orgID, in.Prompt, in.LLM)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, &ErrDraftFailed{Problems: problems}
	}
	dsl, name, err := SplitBundle(bundle)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Name) != "" {
		name = in.Name
	}
	p, err := a.CreateProcess(ctx, orgID, svctype.Process{ProjectID: in.ProjectID, Name: name, Description: in.Description, AuthoringMode: "process_first"})
	if err != nil {
		return nil, err
	}
	b, err := a.Compose(ctx, orgID, p.ID, Compose{DeploymentShape: "single_workflow", Summary: "drafted from a prompt", DSL: dsl})
	if err != nil {
		return nil, err
	}
	out := &CreatedFromPrompt{Process: p, Bundle: b, Attempts: attempts}
	if in.Publish {
		if out.Published, err = a.Publish(ctx, orgID, b.ID, "drafted from a prompt"); err != nil {
			return nil, err
		}
		out.Process, out.Bundle = out.Published.Process, out.Published.Bundle
	}
	return out, nil
}
