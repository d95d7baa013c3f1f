// Package enginetest builds whole engines (engine.New over a test store of each dialect) for
// the tests of the feature packages, which test their code through the composition root
// the way the hosts use it.
package enginetest

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testclock"
	"github.com/svcflow/svcflow/internal/testlog"
)

// Bundle is an engine over a test store.
type Bundle struct {
	Eng *engine.Engine
	St  engine.Store
	Ctx context.Context
	// Clock is the engine's and its store's clock when the bundle was set up with one
	// (ForEachDialect, SetupLoggedAt), else nil: both read time.Now.
	Clock *Clock
}

// Dialects are the stores every engine test runs on; postgres skips without
// SVC_TEST_POSTGRES_DSN.
var Dialects = []string{"sqlite", "postgres"}

// Setup returns an engine over a fresh test store of dialect, configured by cfg (whose
// Store it sets). The store keeps the engine's clock (cfg.Now): moving a Clock given as
// Now moves both, so a timer falls due or a lease expires at once.
func Setup(t *testing.T, dialect string, cfg ...engine.Config) *Bundle {
	t.Helper()
	var c engine.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	st := store.OpenTest(t, dialect, store.WithNow(c.Now))
	c.Store = st
	eng, err := engine.New(c)
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	return &Bundle{Eng: eng, St: st, Ctx: context.Background()}
}

// ForEachDialect runs fn as a parallel subtest per store. The engine and its store share
// b.Clock, which runs with the wall clock until the test moves it.
func ForEachDialect(t *testing.T, fn func(t *testing.T, b *Bundle)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			clk := testclock.Running()
			b := Setup(t, d, engine.Config{Now: clk.Now})
			b.Clock = clk
			fn(t, b)
		})
	}
}

// Workflow creates a workflow.
func (b *Bundle) Workflow(t *testing.T, org, name, def string) *svctype.Workflow {
	t.Helper()
	w, err := b.Eng.CreateWorkflow(b.Ctx, org, engine.WorkflowInput{Name: name, Definition: json.RawMessage(def)})
	require.NoError(t, err)
	return w
}

// Execute runs a workflow to its end (or pause) in this process and returns its status.
func (b *Bundle) Execute(t *testing.T, org, wfID, input string) *engine.RunStatusDoc {
	t.Helper()
	run, err := b.Eng.Execute(b.Ctx, org, wfID, json.RawMessage(input), engine.ExecuteOptions{})
	require.NoError(t, err)
	require.Equal(t, svctype.RunRunning, run.Status)
	_, err = b.Eng.Work(b.Ctx)
	require.NoError(t, err)
	doc, err := b.Eng.RunStatus(b.Ctx, org, run.ID)
	require.NoError(t, err)
	return doc
}

// Events lists the names of a run's events, in order.
func (b *Bundle) Events(t *testing.T, org, runID string) []string {
	t.Helper()
	page, err := b.Eng.RunEvents(b.Ctx, org, runID, svctype.ListOptions{Limit: 500})
	require.NoError(t, err)
	names := make([]string, len(page.Items))
	for i, e := range page.Items {
		names[i] = e.Event
	}
	return names
}

// EventPayload returns the payload of the run's first event called name.
func (b *Bundle) EventPayload(t *testing.T, org, runID, name string) map[string]any {
	t.Helper()
	page, err := b.Eng.RunEvents(b.Ctx, org, runID, svctype.ListOptions{Limit: 500})
	require.NoError(t, err)
	for _, e := range page.Items {
		if e.Event == name {
			require.True(t, strings.HasPrefix(e.DeliveryID, "dlv_"))
			var m map[string]any
			require.NoError(t, json.Unmarshal(e.Payload, &m))
			return m
		}
	}
	t.Fatalf("no %s event among %v", name, b.Events(t, org, runID))
	return nil
}

// Upload stores a document.
func (b *Bundle) Upload(t *testing.T, org, name, contentType, content string, tags ...string) *documents.Document {
	t.Helper()
	d, err := b.Eng.UploadDocument(b.Ctx, org, engine.DocumentUpload{
		Name: name, ContentType: contentType, Tags: tags, Content: []byte(content),
	})
	require.NoError(t, err)
	return d
}

// AddVersion stores the next version of a document.
func (b *Bundle) AddVersion(t *testing.T, org, id, contentType string, content []byte) *documents.Document {
	t.Helper()
	d, err := b.Eng.AddDocumentVersion(b.Ctx, org, id, content, contentType)
	require.NoError(t, err)
	return d
}

// Logged is an engine with a keyring (org config works), allowed or not to reach private
// addresses (the test servers on 127.0.0.1), and its log captured.
type Logged struct {
	*Bundle
	Logs *LockedBuffer
}

// SetupLogged returns a Logged engine over a fresh test store of dialect.
func SetupLogged(t *testing.T, dialect string, allowPrivate bool) *Logged {
	t.Helper()
	return SetupLoggedAt(t, dialect, allowPrivate, nil)
}

// SetupLoggedAt is SetupLogged with clk, when not nil, as the clock of the engine and its
// store (Bundle.Clock).
func SetupLoggedAt(t *testing.T, dialect string, allowPrivate bool, clk *Clock) *Logged {
	t.Helper()
	logs := &LockedBuffer{}
	cfg := engine.Config{Keyring: NewKeyring(t, GenerateKey(t)), AllowPrivateTargets: allowPrivate,
		Logger: testlog.Tee(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Meter: &Meter{}}
	if clk != nil {
		cfg.Now = clk.Now
	}
	b := Setup(t, dialect, cfg)
	b.Clock = clk
	return &Logged{Bundle: b, Logs: logs}
}

// Meter is a svctype.Meter that keeps the sum of every value recorded, by metric name and
// label values (a gauge's last value is not kept apart): what tests read back.
type Meter struct {
	mu   sync.Mutex
	vals map[string]float64
}

// Record adds v under m's name and labels.
func (m *Meter) Record(d *svctype.MetricDesc, v float64, labels ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.vals == nil {
		m.vals = map[string]float64{}
	}
	m.vals[strings.Join(append([]string{d.Name}, labels...), "|")] += v
}

// Value is the sum recorded for the metric name with these label values.
func (m *Meter) Value(name string, labels ...string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.vals[strings.Join(append([]string{name}, labels...), "|")]
}

// Meter returns the engine's meter, when it is an enginetest.Meter (SetupLogged's).
func (b *Bundle) Meter() *Meter {
	m, _ := b.Eng.Core.Meter().(*Meter)
	return m
}

// Action registers an action.
func (b *Logged) Action(t *testing.T, org string, a svctype.Action) {
	t.Helper()
	_, err := b.Eng.CreateAction(b.Ctx, org, a)
	require.NoError(t, err)
}

// Config sets an org config value.
func (b *Logged) Config(t *testing.T, org, key, value string) {
	t.Helper()
	_, _, err := b.Eng.SetOrgConfig(b.Ctx, org, key, value)
	require.NoError(t, err)
}

// Everything is what a run leaves readable: status document, evidence, events, and the log.
func (b *Logged) Everything(t *testing.T, org, runID string) string {
	t.Helper()
	doc, err := b.Eng.RunStatus(b.Ctx, org, runID)
	require.NoError(t, err)
	ev, err := b.Eng.Evidence(b.Ctx, org, runID)
	require.NoError(t, err)
	events, err := b.Eng.RunEvents(b.Ctx, org, runID, svctype.ListOptions{Limit: 500})
	require.NoError(t, err)
	out, err := json.Marshal([]any{doc, ev, events})
	require.NoError(t, err)
	return string(out) + b.Logs.String()
}

// CallEffects lists the effects of a run's outside calls (kind "call"), in order.
func CallEffects(t *testing.T, b *Bundle, org, runID string) []svctype.Effect {
	t.Helper()
	ev, err := b.Eng.Evidence(b.Ctx, org, runID)
	require.NoError(t, err)
	var out []svctype.Effect
	for _, e := range ev.Effects {
		if e.Kind == "call" {
			out = append(out, e.Effect)
		}
	}
	return out
}

// CustomerTables creates the tables "customers" (email, name, tier) and "notes" (text, n)
// that the onboarding workflows of the tests write.
func (b *Bundle) CustomerTables(t *testing.T, org string) {
	t.Helper()
	_, err := b.Eng.CreateTable(b.Ctx, org, "customers", map[string]string{"email": "text", "name": "text", "tier": "text"})
	require.NoError(t, err)
	_, err = b.Eng.CreateTable(b.Ctx, org, "notes", map[string]string{"text": "text", "n": "number"})
	require.NoError(t, err)
}

// ExceptionTable creates the table "exceptions" that nway_match steps write their
// exceptions to.
func (b *Bundle) ExceptionTable(t *testing.T, org string) {
	t.Helper()
	_, err := b.Eng.CreateTable(b.Ctx, org, "exceptions", map[string]string{
		"run_id": "text", "match_key": "text", "classification": "text", "missing_legs": "text",
		"discrepancy_fields": "text", "details": "text", "status": "text", "provenance": "text",
	})
	require.NoError(t, err)
}

// SameArrays requires that each of keys holds, in runs a and d of org, a non-empty JSON
// array and the same elements in both (decoded, so that key order and number spelling do
// not count): what a step on bytes and the same step on decoded values must store.
func (b *Bundle) SameArrays(t *testing.T, org, a, d string, keys ...string) {
	t.Helper()
	for _, key := range keys {
		ca, err := b.St.GetContext(b.Ctx, org, a, key)
		require.NoError(t, err)
		cd, err := b.St.GetContext(b.Ctx, org, d, key)
		require.NoError(t, err)
		var va, vd []any
		require.NoError(t, json.Unmarshal(ca[key], &va), key)
		require.NoError(t, json.Unmarshal(cd[key], &vd), key)
		require.NotEmpty(t, va, key)
		require.Equal(t, vd, va, "%s: the same elements both ways", key)
	}
}
