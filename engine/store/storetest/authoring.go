package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// testAuthoring: the process studio's projects, processes and bundles, each organization's
// own; process names unique in a project; bundles numbered per process and published once.
func testAuthoring(t *testing.T, b *bundle) {
	at := time.Now().UTC().Truncate(time.Second)
	require.NoError(t, b.s.CreateProject(b.ctx, &svctype.Project{ID: "prj_1", OrgID: "o1", Name: "Finance", Description: "close"}))
	p, err := b.s.GetProject(b.ctx, "o1", "prj_1")
	require.NoError(t, err)
	require.Equal(t, "Finance", p.Name)
	_, err = b.s.GetProject(b.ctx, "o2", "prj_1")
	require.ErrorIs(t, err, storage.ErrNotFound, "another organization's project")
	projects, err := b.s.ListProjects(b.ctx, "o1", svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, projects.Items, 1)

	proc := &svctype.Process{ID: "prc_1", OrgID: "o1", ProjectID: "prj_1", Name: "Bank rec", AuthoringMode: "process_first"}
	require.NoError(t, b.s.CreateProcess(b.ctx, proc))
	require.ErrorIs(t, b.s.CreateProcess(b.ctx, &svctype.Process{ID: "prc_2", OrgID: "o1", ProjectID: "prj_1", Name: "Bank rec"}), storage.ErrConflict)
	require.NoError(t, b.s.CreateProcess(b.ctx, &svctype.Process{ID: "prc_3", OrgID: "o2", ProjectID: "prj_x", Name: "Bank rec"}))
	_, err = b.s.GetProcess(b.ctx, "o2", "prc_1")
	require.ErrorIs(t, err, storage.ErrNotFound)
	list, err := b.s.ListProcesses(b.ctx, "o1", "prj_1", svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)

	b1 := &svctype.Bundle{ID: "bnd_1", OrgID: "o1", ProcessID: "prc_1", Status: svctype.BundleDraft, DSL: []byte(`{"a":1}`)}
	require.NoError(t, b.s.CreateBundle(b.ctx, b1))
	b2 := &svctype.Bundle{ID: "bnd_2", OrgID: "o1", ProcessID: "prc_1", Status: svctype.BundleDraft, DSL: []byte(`{"a":2}`)}
	require.NoError(t, b.s.CreateBundle(b.ctx, b2))
	require.Equal(t, 1, b1.Version)
	require.Equal(t, 2, b2.Version)
	other := &svctype.Bundle{ID: "bnd_3", OrgID: "o2", ProcessID: "prc_3", Status: svctype.BundleDraft, DSL: []byte(`{}`)}
	require.NoError(t, b.s.CreateBundle(b.ctx, other))
	require.Equal(t, 1, other.Version, "each process its own versions")

	require.ErrorIs(t, b.s.PublishBundle(b.ctx, "o2", "bnd_2", "x", "wfl-x", 1, at), storage.ErrConflict, "another organization's bundle is never published")
	require.NoError(t, b.s.PublishBundle(b.ctx, "o1", "bnd_2", "first release", "wfl-1", 4, at))
	require.ErrorIs(t, b.s.PublishBundle(b.ctx, "o1", "bnd_2", "again", "wfl-1", 4, at), storage.ErrConflict, "published once")
	got, err := b.s.GetBundle(b.ctx, "o1", "bnd_2")
	require.NoError(t, err)
	require.Equal(t, svctype.BundlePublished, got.Status)
	require.Equal(t, "first release", got.PublishNote)
	require.Equal(t, 4, got.WorkflowVersion)
	require.JSONEq(t, `{"a":2}`, string(got.DSL))
	_, err = b.s.GetBundle(b.ctx, "o2", "bnd_2")
	require.ErrorIs(t, err, storage.ErrNotFound)

	require.ErrorIs(t, b.s.SetProcessPublished(b.ctx, "o2", "prc_1", "bnd_2", "wfl-1", 4, at), storage.ErrNotFound)
	_, err = b.s.ProcessOfWorkflow(b.ctx, "o1", "wfl-1")
	require.ErrorIs(t, err, storage.ErrNotFound, "no process publishes it yet")
	require.NoError(t, b.s.SetProcessPublished(b.ctx, "o1", "prc_1", "bnd_2", "wfl-1", 4, at))
	gp, err := b.s.GetProcess(b.ctx, "o1", "prc_1")
	require.NoError(t, err)
	require.Equal(t, "bnd_2", gp.PublishedBundleID)
	require.Equal(t, "wfl-1", gp.WorkflowID)
	require.Equal(t, 4, gp.WorkflowVersion, "the version the publication put")
	owner, err := b.s.ProcessOfWorkflow(b.ctx, "o1", "wfl-1")
	require.NoError(t, err)
	require.Equal(t, "prc_1", owner.ID)
	_, err = b.s.ProcessOfWorkflow(b.ctx, "o2", "wfl-1")
	require.ErrorIs(t, err, storage.ErrNotFound, "another organization's process is never found")
	require.NotNil(t, gp.PublishedAt)

	// Generations: created processing, finished once, each organization's own.
	temp := 0.2
	g := &svctype.Generation{ID: "gen_1", OrgID: "o1", Prompt: "reconcile", Model: "m", Temperature: &temp, Status: svctype.GenerationProcessing}
	require.NoError(t, b.s.CreateGeneration(b.ctx, g))
	_, err = b.s.GetGeneration(b.ctx, "o2", "gen_1")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorIs(t, b.s.FinishGeneration(b.ctx, &svctype.Generation{ID: "gen_1", OrgID: "o2", Status: svctype.GenerationFailed}), storage.ErrConflict)
	require.NoError(t, b.s.FinishGeneration(b.ctx, &svctype.Generation{ID: "gen_1", OrgID: "o1", Status: svctype.GenerationFailed, Attempts: 2,
		Errors: []string{"/a: wrong"}}))
	require.ErrorIs(t, b.s.FinishGeneration(b.ctx, &svctype.Generation{ID: "gen_1", OrgID: "o1", Status: svctype.GenerationCompleted}), storage.ErrConflict,
		"finished once")
	gg, err := b.s.GetGeneration(b.ctx, "o1", "gen_1")
	require.NoError(t, err)
	require.Equal(t, svctype.GenerationFailed, gg.Status)
	require.Equal(t, []string{"/a: wrong"}, gg.Errors)
	require.Equal(t, 0.2, *gg.Temperature)
	require.Equal(t, "reconcile", gg.Prompt)
}
