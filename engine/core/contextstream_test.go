package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/internal/fixtures"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// numbered returns n parts of per elements {"i":k} (the last may be short) and the array
// they make.
func numbered(n, per int) ([]json.RawMessage, string) {
	var parts []json.RawMessage
	var all []string
	for i := 0; i < n; i += per {
		var els []string
		for k := i; k < min(i+per, n); k++ {
			els = append(els, fmt.Sprintf(`{"i":%d}`, k))
		}
		parts = append(parts, json.RawMessage("["+strings.Join(els, ",")+"]"))
		all = append(all, els...)
	}
	return parts, "[" + strings.Join(all, ",") + "]"
}

// collect reads a stream's parts, joined back into one array, and the error it ended with.
func collect(ctx context.Context, st *engine.ContextStream) (string, int, error) {
	var els []string
	n := 0
	for p, err := range st.Parts(ctx) {
		if err != nil {
			return "", n, err
		}
		n++
		if inner := string(p[1 : len(p)-1]); inner != "" {
			els = append(els, inner)
		}
	}
	return "[" + strings.Join(els, ",") + "]", n, nil
}

// TestRunContextStream reads keys whole: an array in more parts than one read takes, in
// order, as stored; values stored whole; a key rewritten while it is read, which ends the
// stream in ErrContextChanged; and the misses, as RunContext has them.
func TestRunContextStream(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		def, input := reconciliation(3)
		w := b.Workflow(t, "o1", "recon", def)
		doc := b.Execute(t, "o1", w.ID, input)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)

		n := 3*engine.StreamPartsRead + 2 // parts: three reads and a short one
		parts, whole := numbered(n*4-1, 4)
		require.Len(t, parts, n)
		require.NoError(t, b.St.PutContextParts(b.Ctx, "o1", doc.ID, "big", storage.Parts(parts...), n*4-1, 4))
		st, err := b.Eng.RunContextStream(b.Ctx, "o1", doc.ID, "big")
		require.NoError(t, err)
		require.True(t, st.IsArray())
		require.Nil(t, st.Whole)
		require.Equal(t, n*4-1, st.Length)
		got, count, err := collect(b.Ctx, st)
		require.NoError(t, err)
		require.Equal(t, n, count, "each part as stored")
		require.Equal(t, whole, got)
		// A stream can be read again (CSV reads it twice: its header, then its rows).
		got, _, err = collect(b.Ctx, st)
		require.NoError(t, err)
		require.Equal(t, whole, got)

		// Rewritten after the first part was read: in parts of another size, or whole.
		for _, rewrite := range []func() error{
			func() error {
				p, _ := numbered(n*4-1, 2)
				return b.St.PutContextParts(b.Ctx, "o1", doc.ID, "big", storage.Parts(p...), n*4-1, 2)
			},
			func() error { return b.St.PutContext(b.Ctx, "o1", doc.ID, "big", json.RawMessage(`[1]`)) },
			func() error {
				p, _ := numbered(n*4, 4) // one element more, in as many parts
				return b.St.PutContextParts(b.Ctx, "o1", doc.ID, "big", storage.Parts(p...), n*4, 4)
			},
		} {
			require.NoError(t, b.St.PutContextParts(b.Ctx, "o1", doc.ID, "big", storage.Parts(parts...), n*4-1, 4))
			st, err := b.Eng.RunContextStream(b.Ctx, "o1", doc.ID, "big")
			require.NoError(t, err)
			var end error
			read := 0
			for _, err := range st.Parts(b.Ctx) {
				if err != nil {
					end = err
					break
				}
				if read++; read == 1 {
					require.NoError(t, rewrite())
				}
			}
			require.ErrorIs(t, end, engine.ErrContextChanged)
		}

		// Values stored whole: an array is its one part; any other value has none.
		st, err = b.Eng.RunContextStream(b.Ctx, "o1", doc.ID, "matchGroupCounts")
		require.NoError(t, err)
		require.False(t, st.IsArray())
		require.JSONEq(t, `{"groups": 3, "full": 3, "variance": 0, "missing_leg": 0, "orphan": 0}`, string(st.Whole))
		_, count, err = collect(b.Ctx, st)
		require.NoError(t, err)
		require.Zero(t, count)
		st, err = b.Eng.RunContextStream(b.Ctx, "o1", doc.ID, "matchOrphans")
		require.NoError(t, err)
		require.True(t, st.IsArray())
		got, count, err = collect(b.Ctx, st)
		require.NoError(t, err)
		require.Equal(t, 1, count)
		require.Equal(t, "[]", got)
		st, err = b.Eng.RunContextStream(b.Ctx, "o1", doc.ID, "__run_id")
		require.NoError(t, err)
		require.JSONEq(t, `"`+doc.ID+`"`, string(st.Whole))
		// A damaged array stored whole is refused before anything is sent.
		require.NoError(t, b.St.PutContext(b.Ctx, "o1", doc.ID, "damaged", json.RawMessage(`[{"a":1},`)))
		_, err = b.Eng.RunContextStream(b.Ctx, "o1", doc.ID, "damaged")
		require.ErrorContains(t, err, "not valid JSON")

		_, err = b.Eng.RunContextStream(b.Ctx, "o1", doc.ID, "nope")
		require.ErrorIs(t, err, engine.ErrNoContextKey)
		for _, at := range []struct{ org, run, key string }{
			{"o2", doc.ID, "big"}, {"o2", doc.ID, "matchGroupCounts"}, {"o2", doc.ID, "nope"}, {"o2", doc.ID, "__run_id"},
			{"o1", "run-nope", "big"}, {"o1", "run-nope", "__run_id"},
		} {
			st, err := b.Eng.RunContextStream(b.Ctx, at.org, at.run, at.key)
			require.ErrorIs(t, err, engine.ErrNotFound, "%+v", at)
			require.NotErrorIs(t, err, engine.ErrNoContextKey, "%+v", at)
			require.Nil(t, st)
		}
		_, err = b.Eng.RunContextStream(b.Ctx, "", doc.ID, "big")
		require.ErrorIs(t, err, engine.ErrInvalidOrg)
	})
}

// BenchmarkRunContextStream reads 50,000 groups (37 MB) stored in parts whole, walking
// each element as the NDJSON answer does: B/element is what the stream allocates an
// element (the parts read from the store), peak-live-MiB the most the live heap held above
// its size before the read, sampled after each part: a stream holds StreamPartsRead
// parts, not the value.
func BenchmarkRunContextStream(b *testing.B) {
	groups := fixtures.MatchGroups(b, 50_000)
	var els []string
	gjson.ParseBytes(groups).ForEach(func(_, el gjson.Result) bool {
		els = append(els, el.Raw)
		return true
	})
	const per = 500
	var parts []json.RawMessage
	for i := 0; i < len(els); i += per {
		parts = append(parts, json.RawMessage("["+strings.Join(els[i:min(i+per, len(els))], ",")+"]"))
	}
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
			require.NoError(b, st.PutContextParts(ctx, "o1", run.ID, "matchGroups", storage.Parts(parts...), len(els), per))

			read := func(sample func()) {
				s, err := eng.RunContextStream(ctx, "o1", run.ID, "matchGroups")
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for p, err := range s.Parts(ctx) {
					if err != nil {
						b.Fatal(err)
					}
					gjson.Parse(unsafe.String(&p[0], len(p))).ForEach(func(_, _ gjson.Result) bool { n++; return true })
					sample()
				}
				if n != len(els) {
					b.Fatal(n)
				}
			}
			// Once, untimed: the live heap's peak above where it was, after each part (a
			// collection first: what the stream holds, not its garbage).
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			base, peak := ms.HeapAlloc, uint64(0)
			read(func() {
				var now runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&now)
				peak = max(peak, now.HeapAlloc-min(base, now.HeapAlloc))
			})
			runtime.ReadMemStats(&ms)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				read(func() {})
			}
			b.StopTimer()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-ms.TotalAlloc)/float64(b.N*len(els)), "B/element")
			b.ReportMetric(float64(peak)/(1<<20), "peak-live-MiB")
		})
	}
}
