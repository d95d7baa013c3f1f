package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/match"
)

// NWayMatch is the n-way match step.
const NWayMatch = "nway_match"

// N-way events (spec section 6).
const (
	EventNWayStarted   = "nway_matcher.started"
	EventNWayCompleted = "nway_matcher.completed"
	EventNWayFailed    = "nway_matcher.failed"
)

// ExceptionColumns are the columns an exceptionTable must declare (text).
var ExceptionColumns = []string{"run_id", "match_key", "classification", "missing_legs", "discrepancy_fields", "details", "status"}

// ProvenanceColumn, when the exception table declares it, receives JSON naming the runtime,
// the workflow, the run and the step that wrote the row. The run is in run_id and details too.
const ProvenanceColumn = "provenance"

// Runtime names this runtime in exception-row provenance.
const Runtime = "svcflow"

func validateNWay(props map[string]any) []svctype.PropertyProblem {
	var out []svctype.PropertyProblem
	sets, ok := props["sets"].([]any)
	if !ok {
		return append(out, svctype.PropertyProblem{Pointer: "/sets", Message: "required: an array of 2 to 4 {key, records} legs"})
	}
	seen := map[string]bool{}
	for i, s := range sets {
		at := fmt.Sprintf("/sets/%d", i)
		leg, ok := s.(map[string]any)
		if !ok {
			out = append(out, svctype.PropertyProblem{Pointer: at, Message: "must be an object {key, records}"})
			continue
		}
		key, _ := leg["key"].(string)
		switch {
		case key == "":
			out = append(out, svctype.PropertyProblem{Pointer: at + "/key", Message: "required: the leg's name"})
		case seen[key]:
			out = append(out, svctype.PropertyProblem{Pointer: at + "/key", Message: fmt.Sprintf("leg %q appears twice", key)})
		}
		seen[key] = true
		switch r := leg["records"].(type) {
		case []any:
		case string:
			if !isDynamic(r) {
				out = append(out, svctype.PropertyProblem{Pointer: at + "/records", Message: "must be an array, an @path to one or a doc: reference"})
			}
		default:
			out = append(out, svctype.PropertyProblem{Pointer: at + "/records", Message: "required: an array, an @path to one or a doc: reference"})
		}
	}
	opts, ps := nwayOptions(props, true)
	out = append(out, ps...)
	out = append(out, problems(match.ValidateNWay(opts, len(sets)))...)
	if _, err := compileRules(props["rules"]); err != nil {
		out = append(out, svctype.PropertyProblem{Pointer: "/rules", Message: err.Error()})
	}
	if v, ok := props["exceptionTable"]; ok {
		if s, isStr := v.(string); !isStr || s == "" {
			out = append(out, svctype.PropertyProblem{Pointer: "/exceptionTable", Message: "must be a custom table name"})
		}
	}
	return out
}

// nwayOptions reads everything but the sets and the rules.
func nwayOptions(p map[string]any, static bool) (match.NWayOptions, []svctype.PropertyProblem) {
	var opts match.NWayOptions
	var out []svctype.PropertyProblem
	var err error
	if opts.MatchOn, err = fieldList(p["matchOn"]); err != nil {
		out = append(out, svctype.PropertyProblem{Pointer: "/matchOn", Message: err.Error()})
	}
	if raw, ok := p["tolerances"]; ok && raw != nil {
		tols, isMap := raw.(map[string]any)
		if !isMap {
			out = append(out, svctype.PropertyProblem{Pointer: "/tolerances", Message: "must be an object of field -> {type, value, pairs}"})
		}
		opts.Tolerances = map[string]match.Tolerance{}
		for _, field := range slices.Sorted(maps.Keys(tols)) {
			at := "/tolerances/" + field
			t, isObj := tols[field].(map[string]any)
			if !isObj {
				out = append(out, svctype.PropertyProblem{Pointer: at, Message: "must be an object {type, value, pairs}"})
				continue
			}
			tol := match.Tolerance{}
			tol.Type, _ = t["type"].(string)
			if v, ok := t["value"]; ok {
				n, isNum := svctype.Float(v)
				if !isNum {
					out = append(out, svctype.PropertyProblem{Pointer: at + "/value", Message: "must be a number"})
				}
				tol.Value = n
			}
			if pr, ok := t["pairs"]; ok {
				pm, isMap := pr.(map[string]any)
				if !isMap {
					out = append(out, svctype.PropertyProblem{Pointer: at + "/pairs", Message: "must be an object of \"<leg>:<leg>\" -> number"})
				}
				tol.Pairs = map[string]float64{}
				for k, v := range pm {
					n, isNum := svctype.Float(v)
					if !isNum {
						out = append(out, svctype.PropertyProblem{Pointer: at + "/pairs/" + k, Message: "must be a number"})
					}
					tol.Pairs[k] = n
				}
			}
			opts.Tolerances[field] = tol
		}
	}
	out = stringProps(p, out, map[string]*string{"dateKey": &opts.DateKey, "descriptionKey": &opts.DescriptionKey})
	out = numberProps(p, out, static, map[string]**float64{"dateWindowDays": &opts.DateWindowDays, "fuzzyThreshold": &opts.FuzzyThreshold})
	return opts, out
}

type namedCondition struct {
	name string
	cond *expr.Condition
}

// compileRules reads `rules`: an array whose entries are condition objects (named by their
// index) or {name, condition}.
func compileRules(v any) ([]namedCondition, error) {
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, errors.New("must be an array of condition objects")
	}
	out := make([]namedCondition, 0, len(arr))
	for i, r := range arr {
		name, cond := strconv.Itoa(i), r
		if m, ok := r.(map[string]any); ok {
			if c, has := m["condition"]; has {
				n, _ := m["name"].(string)
				if n == "" {
					return nil, fmt.Errorf("%d: a rule with a condition needs a name", i)
				}
				name, cond = n, c
			}
		}
		c, err := expr.Compile(cond)
		if err != nil {
			return nil, fmt.Errorf("%d: %w", i, err)
		}
		out = append(out, namedCondition{name: name, cond: c})
	}
	return out, nil
}

func runNWay(ctx context.Context, call *svctype.StepCall) (any, error) {
	fail := func(err error) error {
		return svctype.FailWithEvent(fmt.Errorf("nway_match: %w", err), EventNWayFailed, nil)
	}
	p := call.Properties
	sets, ok := p["sets"].([]any)
	if !ok {
		return nil, fail(errors.New("sets must be an array of {key, records}"))
	}
	legs := make([]match.Leg, len(sets))
	legCounts := map[string]any{}
	for i, s := range sets {
		leg, _ := s.(map[string]any)
		key, _ := leg["key"].(string)
		recs, err := records(leg["records"], fmt.Sprintf("sets[%d].records", i))
		if err != nil {
			return nil, fail(err)
		}
		legs[i] = match.Leg{Key: key, Records: recs}
		legCounts[key] = len(recs)
	}
	opts, ps := nwayOptions(p, false)
	if len(ps) > 0 {
		return nil, fail(fmt.Errorf("%s: %s", ps[0].Pointer, ps[0].Message))
	}
	// Rules are evaluated per group from the properties as written: their @group paths
	// have nothing to resolve against before the groups exist.
	rules, err := compileRules(call.Raw["rules"])
	if err != nil {
		return nil, fail(fmt.Errorf("rules/%w", err))
	}
	for _, r := range rules {
		opts.Rules = append(opts.Rules, match.Rule{Name: r.name, Eval: func(group map[string]any) (bool, error) {
			vars := make(expr.Vars, len(call.Vars)+1)
			maps.Copy(vars, call.Vars)
			vars["group"] = group
			return r.cond.Eval(ctx, vars)
		}})
	}
	var table *svctype.Table
	if name, _ := p["exceptionTable"].(string); name != "" {
		if table, err = exceptionTable(ctx, call, name); err != nil {
			return nil, fail(err)
		}
	}
	call.Emit(EventNWayStarted, map[string]any{"leg_counts": legCounts})
	res, err := match.NWay(legs, opts)
	if err != nil {
		return nil, fail(err)
	}
	for i := range res.Exceptions {
		res.Exceptions[i].RunID = call.RunID
	}
	if table != nil {
		if err := writeExceptions(ctx, call, table, res.Exceptions); err != nil {
			return nil, fail(err)
		}
	}
	// result_reference is the path of GET /runs/{runId}/context/{key} for the groups, to be
	// read against the API's base URL (paged: ?offset=&limit=).
	call.Emit(EventNWayCompleted, map[string]any{
		"schema_version": match.SchemaVersion, "counts": res.Counts,
		"result_reference": fmt.Sprintf("/runs/%s/context/matchGroups", call.RunID),
	})
	return svctype.ContextOutputs(res.Context()), nil
}

func exceptionTable(ctx context.Context, call *svctype.StepCall, name string) (*svctype.Table, error) {
	t, err := call.Tables.GetTable(ctx, call.OrgID, name)
	if errors.Is(err, svctype.ErrNotFound) {
		return nil, fmt.Errorf("exceptionTable %q does not exist", name)
	}
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, c := range ExceptionColumns {
		if _, ok := t.Fields[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("exceptionTable %q does not declare the columns %s", name, strings.Join(missing, ", "))
	}
	return t, nil
}

// writeExceptions upserts one row per exception, keyed by run_id + match_key, in the step's
// transaction: a replay of the step updates its rows rather than adding more.
func writeExceptions(ctx context.Context, call *svctype.StepCall, t *svctype.Table, rows []match.ExceptionRow) error {
	var provenance string
	if _, ok := t.Fields[ProvenanceColumn]; ok {
		b, _ := json.Marshal(map[string]any{
			"runtime": Runtime, "workflow_id": call.WorkflowID, "run_id": call.RunID, "step_index": call.Index,
		})
		provenance = string(b)
	}
	keys := []string{"run_id", "match_key"}
	for _, x := range rows {
		row := map[string]any{
			"run_id": x.RunID, "match_key": x.MatchKey, "classification": x.Classification,
			"missing_legs": x.MissingLegs, "discrepancy_fields": x.DiscrepancyFields,
			"details": x.Details, "status": x.Status,
		}
		if provenance != "" {
			row[ProvenanceColumn] = provenance
		}
		if _, _, err := call.Tables.UpsertRow(ctx, call.OrgID, t.Name, keys, row); err != nil {
			return fmt.Errorf("exceptionTable %q: %w", t.Name, err)
		}
	}
	if len(rows) > 0 {
		call.AddEffect(svctype.Effect{Kind: "exception_rows_upserted", Target: t.Name, Detail: map[string]any{"rows": len(rows)}})
	}
	return nil
}

// NWayAction returns the step kind of an action of kind nway_match: its stored
// configuration is authoritative. The step's properties (or, for an agent, the tool call) are
// the configuration's @input: each @input.<name> used in a leg's records is a required
// parameter (an array, or a doc: reference); any other name sent is discarded and logged.
func NWayAction(config map[string]any) (svctype.StepKind, error) {
	if ps := validateNWay(config); len(ps) > 0 {
		return svctype.StepKind{}, fmt.Errorf("nway_match action: properties%s: %s", ps[0].Pointer, ps[0].Message)
	}
	params := InputParams(config)
	run := func(ctx context.Context, call *svctype.StepCall) (any, error) {
		in := map[string]any{}
		var discarded []string
		for _, k := range slices.Sorted(maps.Keys(call.Properties)) {
			if !slices.Contains(params, k) {
				discarded = append(discarded, k)
				continue
			}
			v := call.Properties[k]
			if s, ok := v.(string); ok && strings.HasPrefix(s, "doc:") {
				resolved, err := call.Resolve(ctx, s, call.Vars)
				if err != nil {
					return nil, svctype.FailWithEvent(fmt.Errorf("nway_match: parameter %q: %w", k, err), EventNWayFailed, nil)
				}
				v = resolved
			}
			in[k] = v
		}
		if len(discarded) > 0 && call.Logger != nil {
			call.Logger.Warn("nway_match action: discarded parameters its configuration does not declare", "discarded", discarded)
		}
		for _, p := range params {
			if _, ok := in[p]; !ok {
				return nil, svctype.FailWithEvent(fmt.Errorf("nway_match: parameter %q is required (an array of records or a doc: reference)", p), EventNWayFailed, nil)
			}
		}
		vars := maps.Clone(call.Vars)
		if vars == nil {
			vars = map[string]any{}
		}
		vars["input"] = in
		resolved, err := call.Resolve(ctx, config, vars)
		if err != nil {
			return nil, svctype.FailWithEvent(fmt.Errorf("nway_match: %w", err), EventNWayFailed, nil)
		}
		sub := *call
		sub.Properties, _ = resolved.(map[string]any)
		sub.Raw, sub.Vars = config, vars
		return runNWay(ctx, &sub)
	}
	return svctype.StepKind{Run: run, FailedEvent: EventNWayFailed}, nil
}

// InputParams lists the names <n> of every "@input.<n>" that a configuration's legs read
// their records from, sorted: an nway_match action's required parameters.
func InputParams(config map[string]any) []string {
	var out []string
	sets, _ := config["sets"].([]any)
	for _, s := range sets {
		leg, _ := s.(map[string]any)
		ref, _ := leg["records"].(string)
		if name, ok := strings.CutPrefix(ref, "@input."); ok {
			name, _, _ = strings.Cut(name, ".")
			if name != "" && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}
