package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/internal/fixtures"
	"github.com/svcflow/svcflow/engine/storage"
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

// ContextSlice records the key, and how many parts the store read (-1: the value whole).
func (r *readCounter) ContextSlice(ctx context.Context, orgID, runID, key string, from, to int) (storage.ContextSlice, error) {
	s, err := r.Store.ContextSlice(ctx, orgID, runID, key, from, to)
	n := -1
	if s.Parts != nil {
		n = len(s.Parts)
	}
	r.mu.Lock()
	r.reads = append(r.reads, []string{"slice", key, strconv.Itoa(n)})
	r.mu.Unlock()
	return s, err
}

func (r *readCounter) ContextBrief(ctx context.Context, orgID, runID string, maxBytes int64) (map[string]json.RawMessage, map[string]storage.ContextRef, error) {
	r.mu.Lock()
	r.reads = append(r.reads, []string{"brief"})
	r.mu.Unlock()
	return r.Store.ContextBrief(ctx, orgID, runID, maxBytes)
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

// TestRunContextPagesAnArray reads a real run's matchGroups page by page and checks that
// the pages are the array, in order, with its length, and that each read asked the store
// for that one key only: 600 groups (under LargeValueBytes) are stored whole; 3,000 (over
// it) in parts, of which a page reads only those that hold it.
func TestRunContextPagesAnArray(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		for _, n := range []int{600, 3_000} {
			t.Run(fmt.Sprintf("%s/%d", dialect, n), func(t *testing.T) {
				t.Parallel()
				testRunContextPages(t, dialect, n)
			})
		}
	}
}

func testRunContextPages(t *testing.T, dialect string, n int) {
	b, reads := setupCounting(t, dialect)
	def, input := reconciliation(n)
	w := b.Workflow(t, "o1", "recon", def)
	doc := b.Execute(t, "o1", w.ID, input)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	stored, err := b.St.GetContext(b.Ctx, "o1", doc.ID, "matchGroups")
	require.NoError(t, err)
	whole := stored["matchGroups"]
	require.Equal(t, invoices(0, n), matchKeys(t, whole), "the parts join back to the array")
	inParts := len(whole) > engine.LargeValueBytes
	require.Equal(t, n == 3_000, inParts)
	if inParts {
		// The status document refers to the value instead of holding it.
		ref, ok := doc.Context["matchGroups"].(map[string]any)
		require.True(t, ok, "%T", doc.Context["matchGroups"])
		require.EqualValues(t, n, ref["length"])
		require.EqualValues(t, true, ref["truncated"])
		require.Equal(t, "/runs/"+doc.ID+"/context/matchGroups", ref["result_reference"])
		require.Greater(t, ref["bytes"], int64(engine.LargeValueBytes))
	} else {
		require.Len(t, doc.Context["matchGroups"], n)
	}
	reads.take()

	cases := []struct {
		name          string
		offset, limit int
		want          []string
		wantLimit     int
	}{
		{"default limit", 0, 0, invoices(0, 100), 100},
		{"first page", 0, 10, invoices(0, 10), 10},
		{"middle page", n / 2, 25, invoices(n/2, n/2+25), 25},
		{"page of 1,000", 0, 1000, invoices(0, min(n, 1000)), 1000},
		{"largest page", 0, engine.MaxContextLimit, invoices(0, n), engine.MaxContextLimit},
		{"unaligned largest page", 7, 1000, invoices(7, min(n, 1007)), 1000},
		{"short last page", n - 50, 1000, invoices(n-50, n), 1000},
		{"one element", n - 1, 1, invoices(n-1, n), 1},
		{"at the end", n, 100, []string{}, 100},
		{"past the end", 5000, 100, []string{}, 100},
	}
	per := 0 // the elements of a part, when in parts
	if inParts {
		s, err := b.St.ContextSlice(b.Ctx, "o1", doc.ID, "matchGroups", 0, 1)
		require.NoError(t, err)
		per = s.Per
		require.Positive(t, per)
		reads.take()
	}
	for _, tc := range cases {
		v, err := b.Eng.RunContext(b.Ctx, "o1", doc.ID, "matchGroups", tc.offset, tc.limit)
		require.NoError(t, err, tc.name)
		require.True(t, v.Paged, tc.name)
		require.Equal(t, "matchGroups", v.Key)
		require.Equal(t, n, v.Total, tc.name)
		require.Equal(t, tc.offset, v.Offset, tc.name)
		require.Equal(t, tc.wantLimit, v.Limit, tc.name)
		require.Equal(t, tc.want, matchKeys(t, v.Value), tc.name)
		got := reads.take()
		require.Len(t, got, 1, "%s: one read", tc.name)
		require.Equal(t, []string{"slice", "matchGroups"}, got[0][:2], "%s: only the key is read", tc.name)
		parts, _ := strconv.Atoi(got[0][2])
		if inParts {
			want := 0 // the parts that hold the page's elements, and no other
			if to := min(tc.offset+tc.wantLimit, n); tc.offset < to {
				want = (to-1)/per - tc.offset/per + 1
			}
			require.Equal(t, want, parts, "%s: only the parts that hold the page", tc.name)
		} else {
			require.Equal(t, -1, parts, "%s: the value whole", tc.name)
		}
	}

	// The pages, put together, are the array.
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
			require.Equal(t, [][]string{{"brief"}}, reads.take(), "the context, in one read")
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

// TestLargeInputStoredOnce executes a run whose input is over LargeValueBytes: the input
// is stored once, as the context key input, and the run's row, its workflow_run_started
// and the status document refer to it; the run itself works on the whole input.
func TestLargeInputStoredOnce(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		def, input := reconciliation(5_000)
		require.Greater(t, len(input), engine.LargeValueBytes)
		w := b.Workflow(t, "o1", "recon", def)
		doc := b.Execute(t, "o1", w.ID, input)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		counts, err := b.Eng.RunContext(b.Ctx, "o1", doc.ID, "matchGroupCounts", 0, 0)
		require.NoError(t, err)
		require.JSONEq(t, `{"groups": 5000, "full": 5000, "variance": 0, "missing_leg": 0, "orphan": 0}`, string(counts.Value), "the run matched the whole input")

		ref := map[string]any{"result_reference": "/runs/" + doc.ID + "/context/input", "truncated": true}
		run, err := b.Eng.GetRun(b.Ctx, "o1", doc.ID)
		require.NoError(t, err)
		var stored map[string]any
		require.NoError(t, json.Unmarshal(run.Input, &stored))
		require.Equal(t, ref["result_reference"], stored["result_reference"])
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, []byte(input)))
		require.EqualValues(t, compact.Len(), stored["bytes"], "the input as stored: compacted")
		started := b.EventPayload(t, "o1", doc.ID, "workflow_run_started")
		require.Equal(t, stored, started["input_payload"])
		inDoc, ok := doc.Context["input"].(map[string]any)
		require.True(t, ok, "%T", doc.Context["input"])
		require.Equal(t, ref["result_reference"], inDoc["result_reference"])

		whole, err := b.Eng.RunContext(b.Ctx, "o1", doc.ID, "input", 0, 0)
		require.NoError(t, err)
		require.JSONEq(t, input, string(whole.Value))

		// A small input is carried whole, as before.
		small, smallIn := reconciliation(3)
		w2 := b.Workflow(t, "o1", "recon-small", small)
		doc2 := b.Execute(t, "o1", w2.ID, smallIn)
		run2, err := b.Eng.GetRun(b.Ctx, "o1", doc2.ID)
		require.NoError(t, err)
		require.JSONEq(t, smallIn, string(run2.Input))
	})
}
