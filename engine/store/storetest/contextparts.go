package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
)

// testContextParts stores an array of 10 elements in parts of 3 (3, 3, 3, 1) and reads it
// back whole, by slices, and in brief; puts the key whole again; and checks that another
// organization reads none of it.
func testContextParts(t *testing.T, b *bundle) {
	r := b.run(t, orgA, "wf", time.Time{})
	els := make([]string, 10)
	for i := range els {
		els[i] = fmt.Sprintf(`{"i":%d,"s":"%s"}`, i, strings.Repeat("x", i))
	}
	var parts []json.RawMessage
	for i := 0; i < len(els); i += 3 {
		parts = append(parts, json.RawMessage("["+strings.Join(els[i:min(i+3, len(els))], ",")+"]"))
	}
	whole := "[" + strings.Join(els, ",") + "]"
	require.NoError(t, b.s.PutContext(b.ctx, orgA, r.ID, "small", json.RawMessage(`{"a":1}`)))
	require.NoError(t, b.s.PutContext(b.ctx, orgA, r.ID, "big", json.RawMessage(`"first written whole"`)))
	require.NoError(t, b.s.PutContextParts(b.ctx, orgA, r.ID, "big", storage.Parts(parts...), 10, 3))

	got, err := b.s.GetContext(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	require.JSONEq(t, whole, string(got["big"]), "joined back whole")

	// The parts are taken one at a time: each may be made in the bytes of the one before
	// (the core encodes a large output that way), and a sequence that fails part way
	// writes nothing.
	reused := func(yield func(json.RawMessage, error) bool) {
		var buf []byte
		for _, p := range parts {
			buf = append(buf[:0], p...)
			if !yield(buf, nil) {
				return
			}
		}
	}
	require.NoError(t, b.s.PutContextParts(b.ctx, orgA, r.ID, "big", reused, 10, 3))
	got, err = b.s.GetContext(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	require.JSONEq(t, whole, string(got["big"]), "each part stored before the next was made")
	failing := func(yield func(json.RawMessage, error) bool) {
		if yield(json.RawMessage(`["half"]`), nil) {
			yield(nil, errors.New("encoding failed"))
		}
	}
	require.ErrorContains(t, b.s.PutContextParts(b.ctx, orgA, r.ID, "big", failing, 2, 1), "encoding failed")
	got, err = b.s.GetContext(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	require.JSONEq(t, whole, string(got["big"]), "a failed sequence changed nothing")
	require.JSONEq(t, `{"a":1}`, string(got["small"]))
	one, err := b.s.GetContext(b.ctx, orgA, r.ID, "big")
	require.NoError(t, err)
	require.JSONEq(t, whole, string(one["big"]))

	for _, tc := range []struct {
		from, to   int
		start      int
		partsRead  int
		firstInRes string
	}{
		{0, 1, 0, 1, els[0]},
		{2, 4, 0, 2, els[0]},
		{3, 6, 3, 1, els[3]},
		{4, 10, 3, 3, els[3]},
		{9, 100, 9, 1, els[9]},
	} {
		s, err := b.s.ContextSlice(b.ctx, orgA, r.ID, "big", tc.from, tc.to)
		require.NoError(t, err)
		require.True(t, s.Found)
		require.Nil(t, s.Whole)
		require.Equal(t, 10, s.Length)
		require.Equal(t, 3, s.Per)
		require.Equal(t, tc.start, s.Start, "[%d, %d)", tc.from, tc.to)
		require.Len(t, s.Parts, tc.partsRead, "[%d, %d)", tc.from, tc.to)
		var first []json.RawMessage
		require.NoError(t, json.Unmarshal(s.Parts[0], &first))
		require.JSONEq(t, tc.firstInRes, string(first[0]))
	}
	past, err := b.s.ContextSlice(b.ctx, orgA, r.ID, "big", 10, 20)
	require.NoError(t, err)
	require.True(t, past.Found)
	require.Empty(t, past.Parts)
	require.NotNil(t, past.Parts, "an array in parts, no element asked")
	require.Equal(t, 10, past.Length)
	// What a whole answer streamed out needs before it reads a part: how many, and of what.
	require.Equal(t, 3, past.Per)
	require.Equal(t, 4, past.Count)
	require.Equal(t, int64(len(strings.Join(partStrings(parts), ""))), past.Size)

	// The parts by their numbers, as stored, in order; a range past the last is an error,
	// not a shorter answer.
	for _, tc := range []struct{ first, last int }{{0, 3}, {1, 2}, {3, 3}, {0, 0}} {
		got, err := b.s.ContextParts(b.ctx, orgA, r.ID, "big", tc.first, tc.last)
		require.NoError(t, err)
		require.Equal(t, partStrings(parts[tc.first:tc.last+1]), partStrings(got), "parts %d..%d", tc.first, tc.last)
	}
	for _, tc := range []struct{ first, last int }{{2, 4}, {4, 4}, {-1, 0}, {2, 1}} {
		_, err := b.s.ContextParts(b.ctx, orgA, r.ID, "big", tc.first, tc.last)
		require.Error(t, err, "parts %d..%d", tc.first, tc.last)
	}
	_, err = b.s.ContextParts(b.ctx, orgB, r.ID, "big", 0, 0)
	require.Error(t, err, "another organization reads no part of org A's run")
	_, err = b.s.ContextParts(b.ctx, orgA, r.ID, "small", 0, 0)
	require.Error(t, err, "a value stored whole has no parts")

	s, err := b.s.ContextSlice(b.ctx, orgA, r.ID, "small", 0, 10)
	require.NoError(t, err)
	require.Equal(t, storage.ContextSlice{Found: true, Whole: json.RawMessage(`{"a":1}`)}, s)
	s, err = b.s.ContextSlice(b.ctx, orgA, r.ID, "absent", 0, 10)
	require.NoError(t, err)
	require.False(t, s.Found)

	small, large, err := b.s.ContextBrief(b.ctx, orgA, r.ID, 100)
	require.NoError(t, err)
	require.Equal(t, map[string]json.RawMessage{"small": json.RawMessage(`{"a":1}`)}, small)
	require.Equal(t, map[string]storage.ContextRef{"big": {Size: int64(len(strings.Join(partStrings(parts), ""))), Length: 10, Parts: true}}, large)
	// A value over the size is described, not read.
	require.NoError(t, b.s.PutContext(b.ctx, orgA, r.ID, "text", json.RawMessage(`"`+strings.Repeat("y", 200)+`"`)))
	small, large, err = b.s.ContextBrief(b.ctx, orgA, r.ID, 100)
	require.NoError(t, err)
	require.NotContains(t, small, "text")
	require.Equal(t, storage.ContextRef{Size: 202}, large["text"])
	small, large, err = b.s.ContextBrief(b.ctx, orgA, r.ID, 202)
	require.NoError(t, err)
	require.Contains(t, small, "text", "at the size, read")
	require.NotContains(t, large, "text")

	// Fewer parts over more: the array is the new one.
	require.NoError(t, b.s.PutContextParts(b.ctx, orgA, r.ID, "big", storage.Parts(json.RawMessage(`[1,2]`), json.RawMessage(`[3]`)), 3, 2))
	got, err = b.s.GetContext(b.ctx, orgA, r.ID, "big")
	require.NoError(t, err)
	require.JSONEq(t, `[1,2,3]`, string(got["big"]))
	// Whole again: one row again.
	require.NoError(t, b.s.PutContext(b.ctx, orgA, r.ID, "big", json.RawMessage(`[7]`)))
	got, err = b.s.GetContext(b.ctx, orgA, r.ID, "big")
	require.NoError(t, err)
	require.JSONEq(t, `[7]`, string(got["big"]))
	s, err = b.s.ContextSlice(b.ctx, orgA, r.ID, "big", 0, 10)
	require.NoError(t, err)
	require.Equal(t, json.RawMessage(`[7]`), s.Whole)
	require.Nil(t, s.Parts)

	// Another organization reads nothing of org A's run, and writes nothing into it.
	require.NoError(t, b.s.PutContextParts(b.ctx, orgA, r.ID, "big", storage.Parts(parts...), 10, 3))
	s, err = b.s.ContextSlice(b.ctx, orgB, r.ID, "big", 0, 10)
	require.NoError(t, err)
	require.False(t, s.Found)
	small, large, err = b.s.ContextBrief(b.ctx, orgB, r.ID, 100)
	require.NoError(t, err)
	require.Empty(t, small)
	require.Empty(t, large)
	require.NoError(t, b.s.PutContextParts(b.ctx, orgB, r.ID, "big", storage.Parts(json.RawMessage(`["evil"]`)), 1, 1))
	got, err = b.s.GetContext(b.ctx, orgA, r.ID, "big")
	require.NoError(t, err)
	require.JSONEq(t, whole, string(got["big"]), "org B's write is its own")
}

func partStrings(parts []json.RawMessage) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out
}

// testLoadRun: storage.LoadRun reads what GetRun and GetContext read (a value stored in
// parts joined whole), a run without context with none, and another organization's run or
// an unknown one not at all.
func testLoadRun(t *testing.T, b *bundle) {
	bare := b.run(t, orgA, "wf", time.Time{})
	run, raw, err := storage.LoadRun(b.ctx, b.s, orgA, bare.ID)
	require.NoError(t, err)
	want, err := b.s.GetRun(b.ctx, orgA, bare.ID)
	require.NoError(t, err)
	require.Equal(t, want, run)
	require.Empty(t, raw)

	r := b.run(t, orgA, "wf", time.Time{})
	require.NoError(t, b.s.PutContext(b.ctx, orgA, r.ID, "small", json.RawMessage(`{"a":1}`)))
	require.NoError(t, b.s.PutContext(b.ctx, orgA, r.ID, "n", json.RawMessage(`2`)))
	require.NoError(t, b.s.PutContextParts(b.ctx, orgA, r.ID, "big",
		storage.Parts(json.RawMessage(`[1,2]`), json.RawMessage(`[3]`)), 3, 2))
	run, raw, err = storage.LoadRun(b.ctx, b.s, orgA, r.ID)
	require.NoError(t, err)
	want, err = b.s.GetRun(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	require.Equal(t, want, run)
	require.Len(t, raw, 3)
	require.JSONEq(t, `{"a":1}`, string(raw["small"]))
	require.JSONEq(t, `2`, string(raw["n"]))
	require.JSONEq(t, `[1,2,3]`, string(raw["big"]), "joined back whole")

	for _, c := range []struct{ org, id string }{{orgB, r.ID}, {orgA, "no-such-run"}} {
		_, _, err := storage.LoadRun(b.ctx, b.s, c.org, c.id)
		require.ErrorIs(t, err, storage.ErrNotFound)
	}
}
