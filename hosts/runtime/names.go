package runtime

import (
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/forms"
)

// The contract's names (docs/decisions.md, "The contract's names"): a schema is a
// PascalCase noun for what it holds, never a Go-ism (Body, Struct, Answer, OutputBody); an
// operation id is kebab-case; a path parameter names its kind (runId, workflowId). Go
// types keep their Go names: SchemaName maps them to the contract's, for the runtime's
// registry and the gateway's. TestContractNames checks both committed documents.

// SchemaName is the Huma schema namer of the runtime's and the gateway's documents: Huma's
// default name, renamed by schemaNames; a type of package forms is Form<its name>; a list page (List[T]) is <T's name>List; an
// anonymous body, which Huma names after its operation ("create-keyRequest"), is in
// PascalCase ("CreateKeyRequest").
func SchemaName(t reflect.Type, hint string) string {
	t = derefType(t)
	if n := t.Name(); strings.HasPrefix(n, "List[") && strings.HasSuffix(n, "]") && t.Kind() == reflect.Struct {
		if items, ok := t.FieldByName("Items"); ok && items.Type.Kind() == reflect.Slice {
			return SchemaName(items.Type.Elem(), hint) + "List"
		}
	}
	name := huma.DefaultSchemaNamer(t, hint)
	if t.PkgPath() == formsPackage && !strings.HasPrefix(name, "Form") {
		return "Form" + name // forms.Schema, Page, Field, Option: FormSchema, FormPage, ...
	}
	if to, ok := schemaNames[name]; ok {
		return to
	}
	if strings.Contains(name, "-") {
		var b strings.Builder
		for _, part := range strings.Split(name, "-") {
			if part != "" {
				b.WriteString(strings.ToUpper(part[:1]) + part[1:])
			}
		}
		return b.String()
	}
	return name
}

// formsPackage is the package of the form_schema_v1 types, whose bare names (Schema, Page,
// Field, Option) say nothing in a document of many other things.
var formsPackage = reflect.TypeFor[forms.Schema]().PkgPath()

// No array of the contract is null: every answer makes its slices ([] when empty), and a
// request may leave an array out but not send null. Huma's default is nullable, a setting
// of the package read whenever a schema is made, so it is set once, before any is.
func init() { huma.DefaultArrayNullable = false }

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// schemaNames are the Go names (as Huma's default namer spells them) whose schemas the
// contract names otherwise. A request body is named for what it carries (TableDefinition)
// or, where no noun fits, for its operation (CancelRunRequest).
var schemaNames = map[string]string{
	// Runtime: request bodies.
	"ActionBody":            "ActionDefinition",
	"AgentBody":             "ExecuteAgentRequest",
	"AgentBodyConfigStruct": "AgentConfig",
	"AgentResumeBody":       "ResumeAgentRequest",
	"ApprovalDecisionBody":  "ApprovalDecision",
	"CancelBody":            "CancelRunRequest",
	"ComposeBody":           "ComposeBundleRequest",
	"ExecuteBody":           "ExecuteRequest",
	"ExternalFormBody":      "ExternalFormDefinition",
	"FormGenerateBody":      "GenerateFormRequest",
	"FormSubmitBody":        "SubmitFormRequest",
	"FromPromptBody":        "CreateProcessFromPromptRequest",
	"GenerateBody":          "GenerateWorkflowRequest",
	"IndexBody":             "IndexDefinition",
	"LLMOptionsBody":        "LLMOptions",
	"LegacyFromAIBody":      "CreateWorkflowFromAIRequest",
	"OAuthConnectionBody":   "CreateOAuthConnectionRequest",
	"OrgConfigBody":         "SetOrgConfigRequest",
	"ProcessBody":           "CreateProcessRequest",
	"ProjectBody":           "CreateProjectRequest",
	"RetryBody":             "RetryRunRequest",
	"RunOperationBody":      "CreateRunOperationRequest",
	"PublishBody":           "PublishBundleRequest",
	"TableBody":             "TableDefinition",
	"WebhookBody":           "WebhookRegistration",
	"WebhookPatchBody":      "WebhookUpdate",
	"WorkflowBody":          "WorkflowRequest",
	// Runtime: answers.
	"AgentStatus":        "AgentRun",
	"AgentTraceAnswer":   "AgentTrace",
	"ExecuteAnswer":      "RunAccepted",
	"FromPromptAnswer":   "ProcessFromPrompt",
	"GenerateAnswer":     "GenerationStarted",
	"GenerationStatus":   "GenerationProgress",
	"LegacyFromAIAnswer": "WorkflowFromAI",
	"PublishAnswer":      "Publication",
	"RunStatusDoc":       "RunStatusDocument",
	"DeliveryDoc":        "DeliveryDocument",
	// Gateway: bodies of named outputs and inputs.
	"LicenseListOutputBody": "LicenseList",
	"TierListOutputBody":    "TierList",
	"UsageOutputBody":       "UsageList",
	"PutTierInputBody":      "PutTierRequest",
	"SetTierInputBody":      "SetAccountTierRequest",
	"OrgBody":               "OrgRequest",
}
