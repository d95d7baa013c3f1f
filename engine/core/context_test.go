package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/internal/fixtures"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// readCounter is a store that records the context reads made on it directly (not in a
// transaction): the keys asked for, one entry per call.
type readCounter struct {
	engine.Store
	mu    sync.Mutex
	reads [][]string
}

func (r *readCounter) GetContext(ctx context.Context, orgID, runID string, keys ...string) (map[string]json.RawMessage, error) {
	r.mu.Lock()
	r.reads = append(r.reads, slices.Clone(keys))
	r.mu.Unlock()
	return r.Store.GetContext(ctx, orgID, runID, keys...)
}

// take returns the reads recorded so far and forgets them.
func (r *readCounter) take() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reads
	r.reads = nil
	return out
}

func setupCounting(t *testing.T, dialect string) (*enginetest.Bundle, *readCounter) {
	t.Helper()
	rc := &readCounter{Store: store.OpenTest(t, dialect)}
	eng, err := engine.New(engine.Config{Store: rc})
	require.NoError(t, err)
	return &enginetest.Bundle{Eng: eng, St: rc, Ctx: context.Background()}, rc
}

// reconciliation is a two-leg nway_match of n invoices, every one in both legs: its
// matchGroups is an array of n group rows sorted by match_key (INV-00000, INV-00001, ...).
func reconciliation(n int) (definition, input string) {
	var bank, erp strings.Builder
	for i := range n {
		if i > 0 {
			bank.WriteString(",")
			erp.WriteString(",")
		}
		fmt.Fprintf(&bank, `{"inv": "INV-%05d", "amount": %d}`, i, i)
		fmt.Fprintf(&erp, `{"inv": "INV-%05d", "amount": %d}`, i, i)
	}
	definition = `{"actions": [{"type": "nway_match", "properties": {
	    "sets": [{"key": "bank", "records": "@input.bank"}, {"key": "erp", "records": "@input.erp"}],
	    "matchOn": ["inv"], "tolerances": {"amount": {"type": "abs", "value": 0}}}}]}`
	return definition, `{"bank": [` + bank.String() + `], "erp": [` + erp.String() + `]}`
}

func matchKeys(t *testing.T, page json.RawMessage) []string {
	t.Helper()
	var groups []struct {
		MatchKey string `json:"match_key"`
	}
	require.NoError(t, json.Unmarshal(page, &groups))
	keys := make([]string, len(groups))
	for i, g := range groups {
		keys[i] = g.MatchKey
	}
	return keys
}

func invoices(from, to int) []string {
	out := []string{}
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("INV-%05d", i))
	}
	return out
}

// TestRunContextPagesAnArray reads a real run's matchGroups (1,050 groups) page by page
// and checks that the pages are the array, in order, with its length, and that each read
// asked the store for that one key only.
func TestRunContextPagesAnArray(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b, reads := setupCounting(t, dialect)
			def, input := reconciliation(1_050)
			w := b.Workflow(t, "o1", "recon", def)
			doc := b.Execute(t, "o1", w.ID, input)
			require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
			whole, err := json.Marshal(doc.Context["matchGroups"])
			require.NoError(t, err)
			reads.take()

			cases := []struct {
				name          string
				offset, limit int
				want          []string
				wantLimit     int
			}{
				{"default limit", 0, 0, invoices(0, 100), 100},
				{"first page", 0, 10, invoices(0, 10), 10},
				{"middle page", 500, 25, invoices(500, 525), 25},
				{"largest page", 0, 1000, invoices(0, 1000), 1000},
				{"short last page", 1000, 1000, invoices(1000, 1050), 1000},
				{"one element", 1049, 1, invoices(1049, 1050), 1},
				{"at the end", 1050, 100, []string{}, 100},
				{"past the end", 5000, 100, []string{}, 100},
			}
			for _, tc := range cases {
				v, err := b.Eng.RunContext(b.Ctx, "o1", doc.ID, "matchGroups", tc.offset, tc.limit)
				require.NoError(t, err, tc.name)
				require.True(t, v.Paged, tc.name)
				require.Equal(t, "matchGroups", v.Key)
				require.Equal(t, 1_050, v.Total, tc.name)
				require.Equal(t, tc.offset, v.Offset, tc.name)
				require.Equal(t, tc.wantLimit, v.Limit, tc.name)
				require.Equal(t, tc.want, matchKeys(t, v.Value), tc.name)
				require.Equal(t, [][]string{{"matchGroups"}}, reads.take(), "%s: only the key's row is read", tc.name)
			}

			// The pages, put together, are the array the status document holds.
			var all []json.RawMessage
			for offset := 0; ; offset += 400 {
				v, err := b.Eng.RunContext(b.Ctx, "o1", doc.ID, "matchGroups", offset, 400)
				require.NoError(t, err)
				var page []json.RawMessage
				require.NoError(t, json.Unmarshal(v.Value, &page))
				if len(page) == 0 {
					break
				}
				all = append(all, page...)
			}
			joined, err := json.Marshal(all)
			require.NoError(t, err)
			require.JSONEq(t, string(whole), string(joined))
		})
	}
}

func TestRunContextWholeValuesAndMisses(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		def, input := reconciliation(3)
		w := b.Workflow(t, "o1", "recon", def)
		doc := b.Execute(t, "o1", w.ID, input)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)

		// An object is whole, whatever offset and limit say.
		v, err := b.Eng.RunContext(b.Ctx, "o1", doc.ID, "matchGroupCounts", 2, 1)
		require.NoError(t, err)
		require.False(t, v.Paged)
		require.Zero(t, v.Total)
		require.JSONEq(t, `{"groups": 3, "full": 3, "variance": 0, "missing_leg": 0, "orphan": 0}`, string(v.Value))
		v, err = b.Eng.RunContext(b.Ctx, "o1", doc.ID, "input", 0, 0)
		require.NoError(t, err)
		require.False(t, v.Paged)
		require.JSONEq(t, input, string(v.Value))
		// The fixed key the status document adds has no row, and is answered all the same.
		v, err = b.Eng.RunContext(b.Ctx, "o1", doc.ID, "__run_id", 0, 0)
		require.NoError(t, err)
		require.JSONEq(t, `"`+doc.ID+`"`, string(v.Value))
		// An empty array is a page.
		v, err = b.Eng.RunContext(b.Ctx, "o1", doc.ID, "matchOrphans", 0, 0)
		require.NoError(t, err)
		require.True(t, v.Paged)
		require.Zero(t, v.Total)
		require.JSONEq(t, `[]`, string(v.Value))

		// A key the run does not have, and a run that is not the org's, are not found; only
		// the first is ErrNoContextKey.
		_, err = b.Eng.RunContext(b.Ctx, "o1", doc.ID, "nope", 0, 0)
		require.ErrorIs(t, err, engine.ErrNoContextKey)
		require.ErrorIs(t, err, engine.ErrNotFound)
		for _, at := range []struct{ org, run, key string }{
			{"o2", doc.ID, "matchGroups"}, {"o2", doc.ID, "nope"}, {"o2", doc.ID, "__run_id"},
			{"o1", "run-nope", "matchGroups"}, {"o1", "run-nope", "__run_id"},
		} {
			v, err := b.Eng.RunContext(b.Ctx, at.org, at.run, at.key, 0, 0)
			require.ErrorIs(t, err, engine.ErrNotFound, "%+v", at)
			require.NotErrorIs(t, err, engine.ErrNoContextKey, "%+v", at)
			require.Nil(t, v)
		}
		_, err = b.Eng.RunContext(b.Ctx, "", doc.ID, "matchGroups", 0, 0)
		require.ErrorIs(t, err, engine.ErrInvalidOrg)

		for _, bad := range []struct {
			offset, limit int
			pointer       string
		}{
			{-1, 10, "/offset"}, {0, -1, "/limit"}, {0, engine.MaxContextLimit + 1, "/limit"},
		} {
			_, err := b.Eng.RunContext(b.Ctx, "o1", doc.ID, "matchGroups", bad.offset, bad.limit)
			var ve *engine.ValidationError
			require.ErrorAs(t, err, &ve, "%+v", bad)
			require.Equal(t, bad.pointer, ve.Problems[0].Pointer)
		}
	})
}

// TestRunStatusWithoutContext: OmitContext leaves the context out and never reads it.
func TestRunStatusWithoutContext(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b, reads := setupCounting(t, dialect)
			def, input := reconciliation(3)
			w := b.Workflow(t, "o1", "recon", def)
			full := b.Execute(t, "o1", w.ID, input)
			require.Equal(t, svctype.RunCompleted, full.Status, full.Reason)
			reads.take()

			doc, err := b.Eng.RunStatusWith(b.Ctx, "o1", full.ID, engine.StatusOptions{OmitContext: true})
			require.NoError(t, err)
			require.Empty(t, reads.take(), "no context read")
			require.Nil(t, doc.Context)
			raw, err := json.Marshal(doc)
			require.NoError(t, err)
			require.NotContains(t, string(raw), `"context"`)
			require.Equal(t, full.Status, doc.Status)
			require.Equal(t, full.Steps, doc.Steps)

			doc, err = b.Eng.RunStatusWith(b.Ctx, "o1", full.ID, engine.StatusOptions{})
			require.NoError(t, err)
			require.Equal(t, [][]string{nil}, reads.take(), "the whole context, in one read")
			require.Equal(t, full.Context, doc.Context)
			require.Equal(t, full.ID, doc.Context["__run_id"])

			_, err = b.Eng.RunStatusWith(b.Ctx, "o2", full.ID, engine.StatusOptions{OmitContext: true})
			require.ErrorIs(t, err, engine.ErrNotFound)
		})
	}
}

// BenchmarkRunContext reads a page of 100 from the middle of a 50,000-group matchGroups
// key, store read included, and the status document with and without its context.
func BenchmarkRunContext(b *testing.B) {
	groups := fixtures.MatchGroups(b, 50_000)
	for _, dialect := range enginetest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			st := store.OpenTest(b, dialect)
			eng, err := engine.New(engine.Config{Store: st})
			require.NoError(b, err)
			ctx := context.Background()
			w, err := eng.CreateWorkflow(ctx, "o1", engine.WorkflowInput{Name: "big", Definition: json.RawMessage(`{"actions": []}`)})
			require.NoError(b, err)
			run, err := eng.Execute(ctx, "o1", w.ID, nil, engine.ExecuteOptions{})
			require.NoError(b, err)
			require.NoError(b, st.PutContext(ctx, "o1", run.ID, "matchGroups", groups))

			b.Run("page", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					v, err := eng.RunContext(ctx, "o1", run.ID, "matchGroups", 25_000, 100)
					if err != nil || v.Total != 50_000 {
						b.Fatal(v, err)
					}
				}
			})
			for _, omit := range []bool{false, true} {
				b.Run(fmt.Sprintf("status/context=%t", !omit), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := eng.RunStatusWith(ctx, "o1", run.ID, engine.StatusOptions{OmitContext: omit}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
