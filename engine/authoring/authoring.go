// Package authoring is the process studio: projects group processes; a process's versions
// are bundles composed from a workflow DSL (the definition, the actions it registers, the
// custom tables it creates); publishing a bundle registers and creates what it needs and
// puts the workflow in one transaction, and a published process executes.
//
// It plugs into the run core like every feature: its own store interfaces (Store, Tx: the
// methods it calls), the core's seams for checking and writing a workflow inside a
// transaction (core.CheckWorkflowWith, core.PutWorkflowTx), and the actions feature's
// (actions.CheckAction, actions.PutActionTx).
package authoring

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/engine/actions"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tables"
)

// Authoring is the studio feature.
type Authoring struct {
	core    *core.Core
	actions *actions.Actions
	store   Store
	model   ModelFunc
}

// New builds the feature on the core and the actions feature.
func New(c *core.Core, a *actions.Actions, st Store) *Authoring {
	return &Authoring{core: c, actions: a, store: st}
}

// Register plugs drafting's job into the run core, and refuses the deletion of a workflow
// a process publishes.
func (a *Authoring) Register(c *core.Core) {
	c.RegisterJob(JobGenerate, a.generateJob)
	c.OnDeleteWorkflow(a.refuseOwnedDelete)
}

// AuthoringModes are the ways a process is authored.
var AuthoringModes = []string{"process_first", "workflow_first"}

// Limits of what the studio takes.
const (
	MaxNameLen        = 200
	MaxDescriptionLen = 4000
	MaxDSLBytes       = 1 << 20
)

// ErrAlreadyPublished: a bundle is published once.
var ErrAlreadyPublished = fmt.Errorf("%w: the bundle was published already (compose a new one)", core.ErrConflict)

// ErrNotPublished: a process runs only once a bundle of it is published.
var ErrNotPublished = fmt.Errorf("%w: the process has no published bundle: publish one first", core.ErrConflict)

func invalid(ps ...core.Problem) error { return &core.ValidationError{Problems: ps} }

func checkText(pointer, v string, required bool, max int) []core.Problem {
	switch {
	case required && strings.TrimSpace(v) == "":
		return []core.Problem{{Pointer: pointer, Message: "required"}}
	case len(v) > max:
		return []core.Problem{{Pointer: pointer, Message: fmt.Sprintf("at most %d characters", max)}}
	}
	return nil
}

// CreateProject creates a project.
func (a *Authoring) CreateProject(ctx context.Context, orgID, name, description string) (*svctype.Project, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	if ps := append(checkText("/name", name, true, MaxNameLen), checkText("/description", description, false, MaxDescriptionLen)...); len(ps) > 0 {
		return nil, invalid(ps...)
	}
	p := &svctype.Project{ID: "prj_" + uuid.NewString(), OrgID: orgID, Name: strings.TrimSpace(name), Description: description, CreatedAt: a.core.Now().UTC()}
	return p, a.store.CreateProject(ctx, p)
}

// ListProjects pages the organization's projects, newest first.
func (a *Authoring) ListProjects(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Project], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.Project]{}, err
	}
	return a.store.ListProjects(ctx, orgID, opts)
}

// CreateProcess creates a process in a project of the organization.
func (a *Authoring) CreateProcess(ctx context.Context, orgID string, in svctype.Process) (*svctype.Process, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	ps := append(checkText("/name", in.Name, true, MaxNameLen), checkText("/description", in.Description, false, MaxDescriptionLen)...)
	if in.AuthoringMode == "" {
		in.AuthoringMode = "process_first"
	}
	if !slices.Contains(AuthoringModes, in.AuthoringMode) {
		ps = append(ps, core.Problem{Pointer: "/authoring_mode", Message: "one of " + strings.Join(AuthoringModes, ", ")})
	}
	if in.ProjectID == "" {
		ps = append(ps, core.Problem{Pointer: "/project_id", Message: "required"})
	} else if _, err := a.store.GetProject(ctx, orgID, in.ProjectID); errors.Is(err, core.ErrNotFound) {
		ps = append(ps, core.Problem{Pointer: "/project_id", Message: "no such project"})
	} else if err != nil {
		return nil, err
	}
	if len(ps) > 0 {
		return nil, invalid(ps...)
	}
	now := a.core.Now().UTC()
	p := &svctype.Process{ID: "prc_" + uuid.NewString(), OrgID: orgID, ProjectID: in.ProjectID, Name: strings.TrimSpace(in.Name),
		Description: in.Description, AuthoringMode: in.AuthoringMode, CreatedAt: now, UpdatedAt: now}
	if err := a.store.CreateProcess(ctx, p); err != nil {
		if errors.Is(err, core.ErrConflict) {
			return nil, fmt.Errorf("%w: the project has a process named %q", core.ErrConflict, p.Name)
		}
		return nil, err
	}
	return p, nil
}

// GetProcess returns a process.
func (a *Authoring) GetProcess(ctx context.Context, orgID, id string) (*svctype.Process, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	return a.store.GetProcess(ctx, orgID, id)
}

// GetBundle returns a bundle.
func (a *Authoring) GetBundle(ctx context.Context, orgID, id string) (*svctype.Bundle, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	return a.store.GetBundle(ctx, orgID, id)
}

// DSL is a workflow bundle as the studio and drafting write it.
type DSL struct {
	Definition          json.RawMessage  `json:"svc_workflow_definition"`
	ActionsToRegister   []svctype.Action `json:"actions_to_register"`
	CustomTables        []TableSpec      `json:"custom_tables_to_create"`
	WorkflowDescription string           `json:"workflow_description"`
}

// TableSpec is a custom table a bundle creates.
type TableSpec struct {
	Name   string            `json:"name"`
	Fields map[string]string `json:"fields"`
	// Indexes are created with a new table; a table kept because it exists keeps its own.
	Indexes [][]string `json:"indexes,omitempty"`
}

// Compose is a compose request.
type Compose struct {
	DeploymentShape string
	Summary         string
	DSL             json.RawMessage
}

// checkedDSL is a DSL that validated, with its actions as checked.
type checkedDSL struct {
	dsl     DSL
	actions []*svctype.Action
}

// CheckDSL validates a DSL for orgID with the checks of POST /workflows, POST /actions and
// POST /custom-tables, plus cross-checks: every step type is a primitive, a registered
// action or one the bundle registers; every table a custom-table step names is created by
// the bundle or exists. Problems are located under at (a JSON pointer).
func (a *Authoring) CheckDSL(ctx context.Context, orgID, name string, raw json.RawMessage, at string) (*checkedDSL, error) {
	if len(raw) > MaxDSLBytes {
		return nil, invalid(core.Problem{Pointer: at, Message: fmt.Sprintf("at most %d bytes", MaxDSLBytes)})
	}
	var d DSL
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, invalid(core.Problem{Pointer: at, Message: "not a DSL document: " + err.Error()})
	}
	var ps []core.Problem
	c := &checkedDSL{dsl: d}
	names := map[string]bool{}
	for i, in := range d.ActionsToRegister {
		p := fmt.Sprintf("%s/actions_to_register/%d", at, i)
		if names[in.Name] {
			ps = append(ps, core.Problem{Pointer: p + "/action_name", Message: fmt.Sprintf("%q is listed twice", in.Name)})
			continue
		}
		names[in.Name] = true
		act, err := a.actions.CheckAction(in)
		var ve *core.ValidationError
		if errors.As(err, &ve) {
			for _, q := range ve.Problems {
				ps = append(ps, core.Problem{Pointer: p + q.Pointer, Message: q.Message})
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		c.actions = append(c.actions, act)
	}
	tablesListed := map[string]bool{}
	for i, t := range d.CustomTables {
		p := fmt.Sprintf("%s/custom_tables_to_create/%d", at, i)
		if tablesListed[t.Name] {
			ps = append(ps, core.Problem{Pointer: p + "/name", Message: fmt.Sprintf("%q is listed twice", t.Name)})
		}
		tablesListed[t.Name] = true
		for _, q := range append(tables.Check(t.Name, t.Fields), tables.CheckIndexes("/indexes", t.Fields, nil, t.Indexes)...) {
			ps = append(ps, core.Problem{Pointer: p + q.Pointer, Message: q.Message})
		}
	}
	if len(d.Definition) == 0 {
		ps = append(ps, core.Problem{Pointer: at + "/svc_workflow_definition", Message: "required: the workflow definition"})
	} else {
		warnings, err := a.core.CheckWorkflowWith(ctx, orgID, core.WorkflowInput{Name: name, Definition: d.Definition}, func(n string) bool { return names[n] })
		// What POST /workflows only warns about (a step type nothing defines) a bundle may not
		// have: it would fail at that step on its first run.
		for _, w := range warnings {
			ptr, msg, _ := strings.Cut(w, ": ")
			ps = append(ps, core.Problem{Pointer: at + "/svc_workflow_definition" + strings.TrimPrefix(ptr, "/definition"), Message: msg})
		}
		var ve *core.ValidationError
		if errors.As(err, &ve) {
			for _, q := range ve.Problems {
				ps = append(ps, core.Problem{Pointer: at + "/svc_workflow_definition" + strings.TrimPrefix(q.Pointer, "/definition"), Message: q.Message})
			}
		} else if err != nil {
			return nil, err
		}
		// Every table a custom-table step names is created here or exists.
		for _, t := range stepTables(d.Definition) {
			if tablesListed[t] {
				continue
			}
			if _, err := a.store.GetTable(ctx, orgID, t); errors.Is(err, core.ErrNotFound) {
				ps = append(ps, core.Problem{Pointer: at + "/custom_tables_to_create",
					Message: fmt.Sprintf("a step writes table %q: list it here (or create it first)", t)})
			} else if err != nil {
				return nil, err
			}
		}
	}
	if len(ps) > 0 {
		return nil, invalid(ps...)
	}
	return c, nil
}

// stepTables lists the tables the steps of a definition write (nested steps too), sorted,
// once each.
func stepTables(def json.RawMessage) []string {
	var doc any
	if json.Unmarshal(def, &doc) != nil {
		return nil
	}
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			// The tables a step writes: a custom-table step's table, an nway_match step's
			// exception table.
			field := map[any]string{"custom-table": "table", "nway_match": "exceptionTable"}[x["type"]]
			if p, ok := x["properties"].(map[string]any); ok && field != "" {
				if t, ok := p[field].(string); ok && t != "" && !strings.Contains(t, "{{") {
					seen[t] = true
				}
			}
			for _, el := range x {
				walk(el)
			}
		case []any:
			for _, el := range x {
				walk(el)
			}
		}
	}
	walk(doc)
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Compose validates a DSL and stores it as the process's next bundle, a draft.
func (a *Authoring) Compose(ctx context.Context, orgID, processID string, in Compose) (*svctype.Bundle, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	p, err := a.store.GetProcess(ctx, orgID, processID)
	if err != nil {
		return nil, err
	}
	ps := append(checkText("/deployment_shape", in.DeploymentShape, false, MaxNameLen), checkText("/summary", in.Summary, false, MaxDescriptionLen)...)
	if len(ps) > 0 {
		return nil, invalid(ps...)
	}
	if len(in.DSL) == 0 {
		return nil, invalid(core.Problem{Pointer: "/dsl", Message: "required"})
	}
	if _, err := a.CheckDSL(ctx, orgID, p.Name, in.DSL, "/dsl"); err != nil {
		return nil, err
	}
	b := &svctype.Bundle{ID: "bnd_" + uuid.NewString(), OrgID: orgID, ProcessID: p.ID, Status: svctype.BundleDraft,
		DeploymentShape: in.DeploymentShape, Summary: in.Summary, DSL: compactJSON(in.DSL), CreatedAt: a.core.Now().UTC()}
	for attempt := 0; ; attempt++ {
		err := a.store.CreateBundle(ctx, b)
		if err == nil || !errors.Is(err, core.ErrConflict) || attempt == 3 {
			return b, err
		}
	}
}

// Published is the answer to a publication.
type Published struct {
	Bundle        *svctype.Bundle   `json:"bundle"`
	Process       *svctype.Process  `json:"process"`
	Workflow      *svctype.Workflow `json:"workflow"`
	Actions       []string          `json:"actions_registered"`
	ActionsKept   []string          `json:"actions_kept"`
	TablesCreated []string          `json:"tables_created"`
	TablesKept    []string          `json:"tables_kept"`
	ExecutePath   string            `json:"execute_path"`
}

// Publish registers the bundle's actions, creates its tables, creates or updates the
// process's workflow and marks the bundle published, in one transaction: on any failure
// nothing is written. An existing table with the same columns is kept; one that differs
// is a conflict naming the column; likewise an existing action that differs.
func (a *Authoring) Publish(ctx context.Context, orgID, bundleID, note string) (*Published, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	if len(note) > MaxDescriptionLen {
		return nil, invalid(core.Problem{Pointer: "/publish_note", Message: fmt.Sprintf("at most %d characters", MaxDescriptionLen)})
	}
	b, err := a.store.GetBundle(ctx, orgID, bundleID)
	if err != nil {
		return nil, err
	}
	if b.Status == svctype.BundlePublished {
		return nil, ErrAlreadyPublished
	}
	p, err := a.store.GetProcess(ctx, orgID, b.ProcessID)
	if err != nil {
		return nil, err
	}
	c, err := a.CheckDSL(ctx, orgID, p.Name, b.DSL, "/dsl")
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, act := range c.actions {
		names[act.Name] = true
	}
	out := &Published{Process: p, Actions: []string{}, ActionsKept: []string{}, TablesCreated: []string{}, TablesKept: []string{}}
	now := a.core.Now().UTC()
	err = a.store.InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		for _, act := range c.actions {
			created, err := a.actions.PutActionTx(ctx, stx, orgID, act)
			if err != nil {
				return err
			}
			if created {
				out.Actions = append(out.Actions, act.Name)
			} else {
				out.ActionsKept = append(out.ActionsKept, act.Name)
			}
		}
		for _, t := range c.dsl.CustomTables {
			cur, err := tx.GetTable(ctx, orgID, t.Name)
			switch {
			case err == nil:
				if col, ok := sameColumns(cur.Fields, t.Fields); !ok {
					return fmt.Errorf("%w: table %q exists with column %q of another type or missing", core.ErrConflict, t.Name, col)
				}
				out.TablesKept = append(out.TablesKept, t.Name)
				continue
			case !errors.Is(err, core.ErrNotFound):
				return err
			}
			if _, err := tables.Create(ctx, stx, orgID, t.Name, t.Fields, t.Indexes, now); err != nil {
				return err
			}
			out.TablesCreated = append(out.TablesCreated, t.Name)
		}
		// The process's workflow, or a new one when it has none: never published, or deleted
		// before deleting a process's workflow was refused (issue 31).
		workflowID := p.WorkflowID
		if workflowID != "" {
			if _, err := tx.GetWorkflow(ctx, orgID, workflowID); errors.Is(err, core.ErrNotFound) {
				workflowID = ""
			} else if err != nil {
				return err
			}
		}
		w, err := a.core.PutWorkflowTx(ctx, stx, orgID, workflowID, core.WorkflowInput{Name: p.Name, Definition: c.dsl.Definition},
			func(n string) bool { return names[n] })
		if err != nil {
			return err
		}
		out.Workflow = w
		if err := tx.PublishBundle(ctx, orgID, b.ID, note, w.ID, w.Version, now); err != nil {
			if errors.Is(err, core.ErrConflict) {
				return ErrAlreadyPublished
			}
			return err
		}
		if err := tx.SetProcessPublished(ctx, orgID, p.ID, b.ID, w.ID, w.Version, now); err != nil {
			return err
		}
		ev, err := a.core.OrgEvent(orgID, "workflow_creation_status", events.WorkflowCreationStatusEvent{
			ProcessID: p.ID, Status: "published", WorkflowID: w.ID, WorkflowName: w.Name})
		if err != nil {
			return err
		}
		return a.core.Emit(ctx, stx, []svctype.Event{ev}, nil)
	})
	if err != nil {
		return nil, err
	}
	a.core.Notify()
	if out.Bundle, err = a.store.GetBundle(ctx, orgID, b.ID); err != nil {
		return nil, err
	}
	if out.Process, err = a.store.GetProcess(ctx, orgID, p.ID); err != nil {
		return nil, err
	}
	out.ExecutePath = "/process-studio/processes/" + p.ID + "/execute"
	return out, nil
}

// sameColumns reports whether an existing table's columns are those wanted, or the first
// column that differs.
func sameColumns(have, want map[string]string) (string, bool) {
	keys := make([]string, 0, len(have)+len(want))
	for k := range want {
		keys = append(keys, k)
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if have[k] != want[k] {
			return k, false
		}
	}
	return "", true
}

// ExecuteProcess runs the workflow version the process's last publication put: an edit of
// the workflow outside the studio (PUT /workflows/{id}) changes nothing here until a bundle
// is published. ErrNotPublished before a publication, or when the workflow is gone (deleted
// before that was refused): publishing again creates it.
func (a *Authoring) ExecuteProcess(ctx context.Context, orgID, processID string, input json.RawMessage) (*svctype.Run, error) {
	p, err := a.GetProcess(ctx, orgID, processID)
	if err != nil {
		return nil, err
	}
	if p.PublishedBundleID == "" || p.WorkflowID == "" {
		return nil, ErrNotPublished
	}
	run, err := a.core.Execute(ctx, orgID, p.WorkflowID, input, core.ExecuteOptions{WorkflowVersion: p.WorkflowVersion})
	if errors.Is(err, core.ErrNotFound) {
		return nil, ErrNotPublished
	}
	return run, err
}

// PublishedWorkflow is the workflow and version a published process runs (ErrNotPublished
// when none): what an external form with trigger_process_id starts.
func (a *Authoring) PublishedWorkflow(ctx context.Context, orgID, processID string) (string, int, error) {
	p, err := a.GetProcess(ctx, orgID, processID)
	if err != nil {
		return "", 0, err
	}
	if p.WorkflowID == "" {
		return "", 0, ErrNotPublished
	}
	return p.WorkflowID, p.WorkflowVersion, nil
}

// WorkflowOwnedError refuses the deletion of a workflow a process publishes: the process
// would be left with nothing to run. It is an ErrConflict.
type WorkflowOwnedError struct {
	ProcessID, ProcessName string
}

func (e *WorkflowOwnedError) Error() string {
	return fmt.Sprintf("the workflow is published by process %q (%s): it changes through the process studio", e.ProcessName, e.ProcessID)
}

// Is makes errors.Is(err, core.ErrConflict) hold.
func (e *WorkflowOwnedError) Is(target error) bool { return target == core.ErrConflict }

// refuseOwnedDelete is the core's delete hook: a workflow a process publishes stays.
func (a *Authoring) refuseOwnedDelete(ctx context.Context, stx storage.Tx, orgID, workflowID string) error {
	p, err := Tx(stx).ProcessOfWorkflow(ctx, orgID, workflowID)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return &WorkflowOwnedError{ProcessID: p.ID, ProcessName: p.Name}
}

// compactJSON is b without insignificant white space (b was checked to be JSON).
func compactJSON(b json.RawMessage) json.RawMessage {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}
