package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// testExternalForms: forms and their submissions are read, replaced, listed and deleted by
// (org, id) only; listings page newest first; deleting a form deletes its submissions and
// nothing of another form's or another organization's.
func testExternalForms(t *testing.T, b *bundle) {
	at := time.Date(2026, 11, 23, 9, 0, 0, 123456000, time.UTC)
	expires := at.Add(48 * time.Hour)
	form := func(org, id string, n int) *svctype.ExternalForm {
		return &svctype.ExternalForm{OrgID: org, ID: id, Name: fmt.Sprintf("form %d", n), Description: "d", IsPublic: n%2 == 0,
			ExpiresAt: &expires, TriggerWorkflowID: "wfl-1", Schema: json.RawMessage(`{"version":"form_schema_v1","pages":[]}`),
			Settings: svctype.ExternalFormSettings{RequireAuth: true, SuccessMessage: "thanks",
				Branding: &svctype.ExternalFormBrand{Name: "Acme", LogoURL: "https://acme.example/l.png", Accent: "#abc", HidePoweredBy: true}},
			CreatedAt: at.Add(time.Duration(n) * time.Second), UpdatedAt: at.Add(time.Duration(n) * time.Second)}
	}
	for i := range 3 {
		require.NoError(t, b.s.CreateExternalForm(b.ctx, form(orgA, fmt.Sprintf("frm-a%d", i), i)))
	}
	require.NoError(t, b.s.CreateExternalForm(b.ctx, form(orgB, "frm-b0", 9)))
	require.Error(t, b.s.CreateExternalForm(b.ctx, form(orgA, "frm-a0", 7)), "an id is unique in its organization")

	got, err := b.s.GetExternalForm(b.ctx, orgA, "frm-a0")
	require.NoError(t, err)
	require.Equal(t, form(orgA, "frm-a0", 0).Settings, got.Settings)
	require.True(t, got.ExpiresAt.Equal(expires))
	require.True(t, got.CreatedAt.Equal(at))
	requireJSON(t, `{"version":"form_schema_v1","pages":[]}`, got.Schema)
	_, err = b.s.GetExternalForm(b.ctx, orgB, "frm-a0")
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = b.s.LockExternalForm(b.ctx, orgB, "frm-a0", false)
	require.ErrorIs(t, err, storage.ErrNotFound)

	page, err := b.s.ListExternalForms(b.ctx, orgA, svctype.ListOptions{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"frm-a2", "frm-a1"}, []string{page.Items[0].ID, page.Items[1].ID}, "newest first")
	require.NotEmpty(t, page.NextCursor)
	page, err = b.s.ListExternalForms(b.ctx, orgA, svctype.ListOptions{Limit: 2, Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, "frm-a0", page.Items[0].ID)

	changed := form(orgA, "frm-a0", 0)
	changed.Name, changed.ExpiresAt, changed.Settings = "renamed", nil, svctype.ExternalFormSettings{}
	changed.CreatedAt = at.Add(time.Hour) // not written
	require.NoError(t, b.s.ReplaceExternalForm(b.ctx, changed))
	got, err = b.s.GetExternalForm(b.ctx, orgA, "frm-a0")
	require.NoError(t, err)
	require.Equal(t, "renamed", got.Name)
	require.Nil(t, got.ExpiresAt)
	require.Nil(t, got.Settings.Branding)
	require.True(t, got.CreatedAt.Equal(at), "the creation time stays")
	changed.OrgID = orgB
	require.ErrorIs(t, b.s.ReplaceExternalForm(b.ctx, changed), storage.ErrNotFound, "another organization's form")

	sub := func(org, form, id string, n int) *svctype.FormSubmission {
		return &svctype.FormSubmission{OrgID: org, ID: id, FormID: form, Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)),
			TriggeredRunID: "run-" + id, TriggeredExecutionType: svctype.ExecutionWorkflowRun, SubmittedBy: "ada@example.com",
			SubmittedAt: at.Add(time.Duration(n) * time.Minute)}
	}
	for i := range 3 {
		require.NoError(t, b.s.CreateFormSubmission(b.ctx, sub(orgA, "frm-a0", fmt.Sprintf("sub_a0_%d", i), i)))
	}
	require.NoError(t, b.s.CreateFormSubmission(b.ctx, sub(orgA, "frm-a1", "sub_a1_0", 0)))
	require.NoError(t, b.s.CreateFormSubmission(b.ctx, sub(orgB, "frm-a0", "sub_b_0", 0)), "B's rows under the same form id")
	subs, err := b.s.ListFormSubmissions(b.ctx, orgA, "frm-a0", svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, subs.Items, 3)
	require.Equal(t, "sub_a0_2", subs.Items[0].ID, "newest first")
	requireJSON(t, `{"n":2}`, subs.Items[0].Payload)
	require.Equal(t, "run-sub_a0_2", subs.Items[0].TriggeredRunID)
	require.Equal(t, "ada@example.com", subs.Items[0].SubmittedBy)
	require.True(t, subs.Items[0].SubmittedAt.Equal(at.Add(2*time.Minute)))

	require.NoError(t, b.s.DeleteExternalForm(b.ctx, orgA, "frm-a0"))
	require.ErrorIs(t, b.s.DeleteExternalForm(b.ctx, orgA, "frm-a0"), storage.ErrNotFound)
	subs, err = b.s.ListFormSubmissions(b.ctx, orgA, "frm-a0", svctype.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, subs.Items, "the form's submissions went with it")
	for _, k := range []struct{ org, form string }{{orgA, "frm-a1"}, {orgB, "frm-a0"}} {
		subs, err = b.s.ListFormSubmissions(b.ctx, k.org, k.form, svctype.ListOptions{})
		require.NoError(t, err)
		require.Len(t, subs.Items, 1, "%s %s kept its submission", k.org, k.form)
	}
	_, err = b.s.GetExternalForm(b.ctx, orgB, "frm-b0")
	require.NoError(t, err)
}
