package runtime_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// committedDocuments are the four documents of openapi/: the runtime's and the integrator's,
// OpenAPI 3.1 and the 3.0 downgrade.
var committedDocuments = []string{"openapi.yaml", "openapi-3.0.yaml", "integrator.yaml", "integrator-3.0.yaml"}

func readDocument(t *testing.T, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "openapi", name))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	return doc
}

// operationsOf calls f with every operation of doc, as "METHOD path".
func operationsOf(doc map[string]any, f func(where, path string, op map[string]any)) {
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			if op, isOp := op.(map[string]any); isOp && slices.Contains([]string{"get", "put", "post", "delete", "patch", "head", "options"}, method) {
				f(strings.ToUpper(method)+" "+path, path, op)
			}
		}
	}
}

// responseSchemas calls f with every schema an answer of doc can hold, once each, with
// where it was reached from: the schemas of every response, and what they refer to.
func responseSchemas(doc map[string]any, webhooks bool, f func(where string, s map[string]any)) {
	components, _ := doc["components"].(map[string]any)
	named, _ := components["schemas"].(map[string]any)
	seen := map[string]bool{}
	var walk func(where string, v any)
	walk = func(where string, v any) {
		s, isSchema := v.(map[string]any)
		if !isSchema {
			return
		}
		if ref, isRef := s["$ref"].(string); isRef {
			name := strings.TrimPrefix(ref, "#/components/schemas/")
			if !seen[name] {
				seen[name] = true
				walk(name, named[name])
			}
		}
		f(where, s)
		if props, ok := s["properties"].(map[string]any); ok {
			for k, p := range props {
				walk(where+"."+k, p)
			}
		}
		for _, k := range []string{"items", "additionalProperties", "not"} {
			walk(where+"["+k+"]", s[k])
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			list, _ := s[k].([]any)
			for _, e := range list {
				walk(where, e)
			}
		}
	}
	operationsOf(doc, func(where, _ string, op map[string]any) {
		responses, _ := op["responses"].(map[string]any)
		for code, r := range responses {
			content, _ := r.(map[string]any)["content"].(map[string]any)
			for _, mt := range content {
				walk(where+" "+code, mt.(map[string]any)["schema"])
			}
		}
	})
	if !webhooks {
		return
	}
	hooks, _ := doc["webhooks"].(map[string]any)
	for name, item := range hooks {
		for _, op := range item.(map[string]any) {
			body, _ := op.(map[string]any)["requestBody"].(map[string]any)
			content, _ := body["content"].(map[string]any)
			for _, mt := range content {
				walk("webhook "+name, mt.(map[string]any)["schema"])
			}
		}
	}
}

// TestResponseStatusesAreNamedEnums: no `status` an answer holds is a plain string; each is
// an enum, and where a set has a name (RunStatus, StepStatus...) every field of it and the
// list filter on it are the same $ref, so a generated client has one union type per set.
func TestResponseStatusesAreNamedEnums(t *testing.T) {
	t.Parallel()
	for _, name := range committedDocuments {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			doc := readDocument(t, name)
			named := doc["components"].(map[string]any)["schemas"].(map[string]any)
			var plain []string
			// Answers and the webhooks' payloads (in 3.0, the payload schemas are components
			// the walk does not reach; they are the 3.1 documents' same Go types).
			responseSchemas(doc, true, func(where string, s map[string]any) {
				props, _ := s["properties"].(map[string]any)
				p, ok := props["status"].(map[string]any)
				if items, isArray := p["items"].(map[string]any); ok && isArray {
					p = items // a filter of several statuses
				}
				if !ok || p["type"] == "integer" {
					return // no status, or an HTTP status (a problem's)
				}
				if _, isEnum := p["enum"]; !isEnum && enumRef(p, named) == "" {
					plain = append(plain, where+".status")
				}
			})
			sort.Strings(plain)
			require.Empty(t, plain, "a status an answer holds is a plain string: give its Go type a named set (hosts/runtime/statuses.go)")

			for _, c := range []struct{ path, param, set string }{
				{"/runs", "status", "RunStatus"},
				{"/runs/{runId}/status", "last_status", "RunStatus"},
				{"/agents", "status", "AgentRunStatus"},
				{"/approvals", "status", "ApprovalStatus"},
			} {
				op := doc["paths"].(map[string]any)[c.path].(map[string]any)["get"].(map[string]any)
				var ref string
				for _, p := range op["parameters"].([]any) {
					if p := p.(map[string]any); p["name"] == c.param {
						s := p["schema"].(map[string]any)
						if items, isArray := s["items"].(map[string]any); isArray {
							s = items // ?status=failed&status=paused
						}
						ref = enumRef(s, named)
					}
				}
				require.Equal(t, c.set, ref, "GET %s?%s= filters on the set its answers carry", c.path, c.param)
			}
			for _, set := range []string{"RunStatus", "StepStatus", "AgentRunStatus", "ApprovalStatus", "FormPauseStatus", "DeliveryStatus", "GenerationStatus", "BundleStatus", "RunOperationStatus"} {
				require.Contains(t, named, set)
				require.NotEmpty(t, named[set].(map[string]any)["enum"], "%s is an enum", set)
			}
		})
	}
}

// enumRef is the name of the named enum s refers to ($ref, or 3.0's allOf of one $ref), or "".
func enumRef(s map[string]any, named map[string]any) string {
	ref, _ := s["$ref"].(string)
	if all, ok := s["allOf"].([]any); ok && len(all) == 1 {
		ref, _ = all[0].(map[string]any)["$ref"].(string)
	}
	name := strings.TrimPrefix(ref, "#/components/schemas/")
	if target, ok := named[name].(map[string]any); ok && target["enum"] != nil {
		return name
	}
	return ""
}

// TestResponseArraysAreNotNullable: no array an answer holds may be null (3.1: a type list
// with "null"; 3.0: nullable), so a generated client has no `| null` to check; the server
// answers [] (the contract test under every HTTP test fails a null). A workflow
// definition's parts (engine/core/definition.schema.json's $defs) are the exception: a
// definition is answered as it was written, and where the engine accepts a null array
// (a matcher's matchOn, a write's keys) it comes back null.
func TestResponseArraysAreNotNullable(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "engine", "core", "definition.schema.json"))
	require.NoError(t, err)
	var def struct {
		Defs map[string]any `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(raw, &def))
	require.NotEmpty(t, def.Defs)
	for _, name := range committedDocuments {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var nullable []string
			responseSchemas(readDocument(t, name), true, func(where string, s map[string]any) {
				types, _ := s["type"].([]any)
				if _, asWritten := def.Defs[strings.Split(where, ".")[0]]; asWritten {
					return
				}
				if slices.Contains(types, any("array")) && slices.Contains(types, any("null")) ||
					s["type"] == "array" && s["nullable"] == true {
					nullable = append(nullable, where)
				}
			})
			sort.Strings(nullable)
			require.Empty(t, nullable, "arrays an answer holds are declared nullable")
		})
	}
}

// TestExecuteDeclaresBothAnswers: POST /workflows/{workflowId}/execute answers 202 with the
// accepted run, and 200 (?wait=, the run ended or paused) with the status document: the
// schema of GET /runs/{runId}/status's 200.
func TestExecuteDeclaresBothAnswers(t *testing.T) {
	t.Parallel()
	for _, name := range committedDocuments {
		doc := readDocument(t, name)
		bodyOf := func(path, method, code string) string {
			op := doc["paths"].(map[string]any)[path].(map[string]any)[method].(map[string]any)
			s := op["responses"].(map[string]any)[code].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
			return fmt.Sprint(s["$ref"])
		}
		status := bodyOf("/runs/{runId}/status", "get", "200")
		require.Equal(t, "#/components/schemas/RunStatusDocument", status, name)
		require.Equal(t, status, bodyOf("/workflows/{workflowId}/execute", "post", "200"), name)
		require.Equal(t, "#/components/schemas/RunAccepted", bodyOf("/workflows/{workflowId}/execute", "post", "202"), name)
	}
}

// TestContractNames checks the convention of docs/decisions.md ("The contract's names")
// over the committed documents, so that a new route or type cannot break it unseen:
// operation ids in kebab-case; path parameters in camelCase naming their kind (runId,
// tableName), never a bare {id}, {name} or {key}, and one name per kind across both
// documents; schema names PascalCase nouns without a Go-ism for a suffix.
func TestContractNames(t *testing.T) {
	t.Parallel()
	var (
		opID   = regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
		param  = regexp.MustCompile(`^[a-z]+([A-Z][a-z]*)+$|^(email|provider)$`)
		schema = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
		goisms = regexp.MustCompile(`(Body|Struct|Answer|Output|Input|Item|Doc)$|^List[A-Z]`)
		brace  = regexp.MustCompile(`\{([^}]*)\}`)
	)
	// The kinds a parameter may name, each under one name: what the parameter's name says.
	kindOf := map[string]string{}
	for _, name := range committedDocuments {
		doc := readDocument(t, name)
		ids := map[string]string{}
		operationsOf(doc, func(where, path string, op map[string]any) {
			id, _ := op["operationId"].(string)
			require.Regexp(t, opID, id, "%s: %s: the operation id is kebab-case", name, where)
			require.NotContains(t, ids, id, "%s: %s and %s have one operation id", name, ids[id], where)
			ids[id] = where
			for _, m := range brace.FindAllStringSubmatch(path, -1) {
				p := m[1]
				require.Regexp(t, param, p, "%s: %s: {%s} names its kind in camelCase (workflowId, tableName)", name, where, p)
			}
			params, _ := op["parameters"].([]any)
			for _, p := range params {
				p := p.(map[string]any)
				if p["in"] != "path" {
					continue
				}
				pn := p["name"].(string)
				kind := strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(pn, "Id"), "Name"), "Key"))
				if other, seen := kindOf[kind]; seen {
					require.Equal(t, other, pn, "%s: %s: one name for each kind of path parameter", name, where)
				}
				kindOf[kind] = pn
			}
		})
		for s := range doc["components"].(map[string]any)["schemas"].(map[string]any) {
			require.Regexp(t, schema, s, "%s: schema %q is PascalCase", name, s)
			require.NotRegexp(t, goisms, s, "%s: schema %q: name it for what it holds (hosts/runtime/names.go)", name, s)
		}
	}
}

// TestNullArrayInARequestIsLeftOut: the contract declares no array nullable, in a request
// either, but Huma takes an optional member sent as null as left out, as it did while arrays
// were nullable: a client that sends null keeps working, and the answer holds [] (never null).
func TestNullArrayInARequestIsLeftOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	table := ok[map[string]any](t, b.do(t, http.MethodPost, "/custom-tables", orgA, map[string]any{
		"name": "contacts", "fields": map[string]string{"email": "text"}, "indexes": nil,
	}), http.StatusCreated)
	require.Equal(t, []any{}, table["indexes"])
}

// freeValues are the members of answers (and webhook payloads) whose schema is any value,
// each with why: what a workflow, a person or a model writes there is theirs, not the
// contract's. A generated client has `unknown` for each. Every other member is typed;
// TestAnswersAreTypedWhereTheyHaveASchema fails on one that is not and is not listed here.
var freeValues = map[string]string{
	// A run's data: the input, context and outputs a workflow's steps write.
	"Run.input": "the run's input, as the caller sent it",
	"RunAccepted.context[additionalProperties]":            "a context key's value, as a step wrote it",
	"RunStatusDocument.context[additionalProperties]":      "a context key's value, as a step wrote it",
	"RunResult.outputs[additionalProperties]":              "a step's output",
	"ContextValue.value":                                   "a context key's value, as a step wrote it",
	"StepRecord.input_summary":                             "a step's resolved properties, summarised",
	"StepRecord.output":                                    "a step's output",
	"Evidence.input":                                       "the run's input",
	"Evidence.exceptions[items]":                           "what the steps recorded as exceptions",
	"Effect.detail[additionalProperties]":                  "an effect's details, per step kind",
	"EvidenceEffect.detail[additionalProperties]":          "an effect's details, per step kind",
	"Decision.result":                                      "a decision step's result",
	"Records[items]":                                       "a record a matcher reads, as the workflow supplies it",
	"Row.data[additionalProperties]":                       "a custom table's cell: its field's type is the table's",
	"WorkflowRunStartedEvent.input_payload":                "the run's input",
	"WorkflowRunFailedEvent.context[additionalProperties]": "a context key's value",
	"MatcherCompletedEvent.policy[additionalProperties]":   "the matcher step's properties as written",
	"Webhook.auto_payload[additionalProperties]":           "what the registration adds to each payload",
	// People's and models' data.
	"Approval.request_payload":                   "what the approval step shows the approver, as the workflow wrote it",
	"Task.request_payload":                       "what the approval step shows the approver, as the workflow wrote it",
	"PbotApprovalRequestedEvent.request_payload": "what the approval step shows the approver, as the workflow wrote it",
	"FormPause.submission":                       "the flat {key: value} a person submitted",
	"FormSubmission.payload":                     "the flat {key: value} a person submitted",
	"FormField.default":                          "a value of the kind the field submits",
	"TraceEntry.action_input":                    "the arguments the model gave a tool",
	"TraceEntry.observation":                     "what a tool answered the model",
	"Generation.bundle":                          "the model's draft, which may not compose (status failed)",
	"ProblemDetail.value":                        "the value a request sent that was refused",
	// A workflow definition's members as written: a value, an @path or a {{template}},
	// resolved when the step runs, so any JSON value there is the definition's author's.
	"Action.properties[additionalProperties]":        "a registered action's properties, its own",
	"ApprovalProperties.comment":                     "text, or an @path to it",
	"CustomTableWriteProperties.values[items]":       "a value or an @path",
	"ForeachLoopProperties.items[items]":             "the elements to loop over",
	"FormProperties.schema":                          "a form in any shape the engine normalises",
	"GmailSendProperties.body":                       "a value or an @path, resolved at run time",
	"GmailSendProperties.subject":                    "a value or an @path, resolved at run time",
	"GmailSendProperties.to":                         "a value or an @path, resolved at run time",
	"GoogleSheetsAppendRowProperties.range":          "a value or an @path, resolved at run time",
	"GoogleSheetsAppendRowProperties.spreadsheet_id": "a value or an @path, resolved at run time",
	"GoogleSheetsAppendRowProperties.values":         "a value or an @path, resolved at run time",
	"MicrosoftTeamsPostMessageProperties.channel_id": "a value or an @path, resolved at run time",
	"MicrosoftTeamsPostMessageProperties.team_id":    "a value or an @path, resolved at run time",
	"MicrosoftTeamsPostMessageProperties.text":       "a value or an @path, resolved at run time",
	"SlackPostMessageProperties.channel":             "a value or an @path, resolved at run time",
	"SlackPostMessageProperties.text":                "a value or an @path, resolved at run time",
	"NWayMatchProperties.rules[items]":               "a rule, checked by the nway_match kind",
	"WorkflowSchedule":                               "a schedule in one of its written forms",
	"AgentToolDeclaration[not].type":                 "a `not` clause, not a member",
	// Open: typed by the event's webhook (the webhooks section), not here.
	"Event.payload": "the event's payload: its schema is its webhook's (webhooks section), by the event's name",
}

// TestAnswersAreTypedWhereTheyHaveASchema: no answer of the integrator's document holds a
// member of any value (a generated client's `unknown`) but those freeValues lists: a form,
// a tool declaration, a definition, a relayed answer is typed by its schema.
func TestAnswersAreTypedWhereTheyHaveASchema(t *testing.T) {
	t.Parallel()
	doc := readDocument(t, "integrator.yaml")
	var untyped []string
	seen := map[string]bool{}
	responseSchemas(doc, true, func(where string, s map[string]any) {
		for _, k := range []string{"type", "$ref", "oneOf", "anyOf", "allOf", "properties", "enum", "items", "const"} {
			if _, typed := s[k]; typed {
				return
			}
		}
		if !seen[where] {
			seen[where] = true
			if _, free := freeValues[where]; !free {
				untyped = append(untyped, where)
			}
		}
	})
	sort.Strings(untyped)
	require.Empty(t, untyped, "answers of any value: type them by their schema, or list them in freeValues with why")
	for where := range freeValues {
		require.True(t, seen[where], "freeValues lists %s, which is no longer any value: take it out", where)
	}
}
