package hitl_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/agent/llm"
	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// genSetup is an engine whose model is a scripted one replaying turns, for an
// organization with a key and the agent_forms feature.
func genSetup(t *testing.T, turns ...llm.Turn) (*enginetest.Bundle, *llm.Scripted) {
	t.Helper()
	key, err := secrets.GenerateKey()
	require.NoError(t, err)
	kr, err := secrets.NewKeyring(key)
	require.NoError(t, err)
	model := llm.NewScripted(turns...)
	st := store.OpenTest(t, "sqlite")
	eng, err := engine.New(engine.Config{Store: st, Keyring: kr,
		ModelFactory: func(string, string, *http.Client) (agent.Model, error) { return model, nil }})
	require.NoError(t, err)
	b := &enginetest.Bundle{Eng: eng, St: st, Ctx: context.Background()}
	_, _, err = eng.SetOrgConfig(b.Ctx, "o", engine.LLMAPIKey, "sk-test-formgen-key")
	require.NoError(t, err)
	_, err = eng.SetOrgFeatures(b.Ctx, "o", svctype.OrgFeatures{AgentForms: true})
	require.NoError(t, err)
	return b, model
}

func reply(content string) llm.Turn {
	return llm.Turn{Reply: agent.Message{Role: agent.RoleAssistant, Content: content}}
}

const goodForm = `{"version": "form_schema_v1", "title": "Supplier", "pages": [{"id": "main", "fields": [
	{"key": "company", "type": "text", "label": "Company", "required": true},
	{"key": "email", "type": "email", "label": "Email", "required": true},
	{"key": "size", "type": "select", "label": "Size", "options": [{"label": "Small", "value": "s"}, {"label": "Large", "value": "l"}]}]}]}`

var genInput = engine.FormGeneration{Intent: "onboard a supplier", ExpectedKeys: []string{"company", "email"}}

func TestGenerateFormValidReply(t *testing.T) {
	t.Parallel()
	b, model := genSetup(t, reply(goodForm))
	g, err := b.Eng.GenerateForm(b.Ctx, "o", genInput)
	require.NoError(t, err)
	require.Equal(t, "llm", g.Source)
	require.Equal(t, 1, g.Attempts)
	_, ok := g.Schema.Field("size")
	require.True(t, ok)
	require.Len(t, model.Requests(), 1)
	require.True(t, model.Requests()[0].JSON)
}

func TestGenerateFormRetriesOnceWithTheProblems(t *testing.T) {
	t.Parallel()
	// The first reply asks for a password no expected key demands, uses a type outside the
	// ten, and lacks the email field.
	bad := `{"version": "form_schema_v1", "pages": [{"id": "main", "fields": [
		{"key": "company", "type": "text", "label": "Company"},
		{"key": "password", "type": "text", "label": "Password"},
		{"key": "logo", "type": "file", "label": "Logo"}]}]}`
	b, model := genSetup(t, reply(bad), reply(goodForm))
	g, err := b.Eng.GenerateForm(b.Ctx, "o", genInput)
	require.NoError(t, err)
	require.Equal(t, "llm", g.Source)
	require.Equal(t, 2, g.Attempts)
	second := model.Requests()[1].Messages
	feedback := second[len(second)-1].Content
	require.Contains(t, feedback, `"password"`)
	require.Contains(t, feedback, `"file"`)
	require.Contains(t, feedback, `"email"`)
}

func TestGenerateFormFallsBackAfterTwoInvalidReplies(t *testing.T) {
	t.Parallel()
	b, _ := genSetup(t, reply(`not json`), reply(`{"version": "form_schema_v1", "pages": []}`))
	g, err := b.Eng.GenerateForm(b.Ctx, "o", genInput)
	require.NoError(t, err)
	require.Equal(t, "fallback", g.Source)
	require.Equal(t, 2, g.Attempts)
	for _, k := range genInput.ExpectedKeys {
		f, ok := g.Schema.Field(k)
		require.True(t, ok)
		require.Equal(t, "text", string(f.Type))
	}
}

func TestGenerateFormNeedsTheFeature(t *testing.T) {
	t.Parallel()
	b, model := genSetup(t, reply(goodForm))
	_, err := b.Eng.SetOrgFeatures(b.Ctx, "o", svctype.OrgFeatures{AgentForms: false})
	require.NoError(t, err)
	_, err = b.Eng.GenerateForm(b.Ctx, "o", genInput)
	require.ErrorIs(t, err, engine.ErrAgentFormsDisabled)
	_, err = b.Eng.GenerateForm(b.Ctx, "another-org", genInput)
	require.ErrorIs(t, err, engine.ErrAgentFormsDisabled, "features are per organization")
	require.Empty(t, model.Requests())
	_, err = b.Eng.GenerateForm(b.Ctx, "o", engine.FormGeneration{ExpectedKeys: []string{"Not Snake"}})
	var ve *engine.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Problems, 2)
}

func TestGenerateFormCreatesAnExternalForm(t *testing.T) {
	t.Parallel()
	b, model := genSetup(t, reply(goodForm))
	w := b.Workflow(t, "o", "onboard", `{"actions": []}`)

	// The form's own fields are checked before the model is asked.
	in := genInput
	in.Create = &engine.FormCreation{Name: " ", TriggerWorkflowID: "wfl-missing"}
	_, err := b.Eng.GenerateForm(b.Ctx, "o", in)
	var ve *engine.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, []engine.Problem{{Pointer: "/create/name", Message: "required"},
		{Pointer: "/create/trigger_workflow_id", Message: "no workflow with this id in the organization"}}, ve.Problems)
	require.Empty(t, model.Requests(), "no model call for a form that cannot be stored")

	in.Create = &engine.FormCreation{Name: "Supplier onboarding", IsPublic: true, TriggerWorkflowID: w.ID}
	g, err := b.Eng.GenerateForm(b.Ctx, "o", in)
	require.NoError(t, err)
	require.Equal(t, "llm", g.Source)
	require.NotNil(t, g.Form)
	stored, err := b.Eng.GetExternalForm(b.Ctx, "o", g.Form.ID)
	require.NoError(t, err)
	require.Equal(t, w.ID, stored.TriggerWorkflowID)
	require.True(t, stored.IsPublic)
	require.Contains(t, string(stored.Schema), `"size"`, "the model's form, not the fallback")
	pub, _, err := b.Eng.PublicForm(b.Ctx, g.Form.ID)
	require.NoError(t, err)
	require.Equal(t, "Supplier onboarding", pub.Name)
}
