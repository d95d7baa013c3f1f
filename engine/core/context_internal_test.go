package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/svcflow/svcflow/engine/internal/fixtures"
	"github.com/svcflow/svcflow/engine/storage"
)

func TestPageArray(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		raw           string
		offset, limit int
		page          string // "" when not an array
		total         int
	}{
		{"object", `{"a": [1, 2]}`, 0, 10, "", 0},
		{"string", `"[not an array]"`, 0, 10, "", 0},
		{"number", `12`, 0, 10, "", 0},
		{"null", `null`, 0, 10, "", 0},
		{"empty", `[]`, 0, 10, `[]`, 0},
		{"first page", `[1,2,3,4,5]`, 0, 2, `[1,2]`, 5},
		{"middle page", `[1,2,3,4,5]`, 2, 2, `[3,4]`, 5},
		{"last short page", `[1,2,3,4,5]`, 4, 2, `[5]`, 5},
		{"at the end", `[1,2,3,4,5]`, 5, 2, `[]`, 5},
		{"past the end", `[1,2,3,4,5]`, 500, 2, `[]`, 5},
		{"whole", `[1,2,3]`, 0, 1000, `[1,2,3]`, 3},
		// PostgreSQL's jsonb text has spaces; an array may hold anything that looks like
		// a delimiter inside strings.
		{"spaced, nested", " \n[ {\"a\": [1, 2]} , \"],[\" ,\t[[]], \"\\\"]\" ]", 1, 2, `["],[",[[]]]`, 4},
		{"offset near max int", `[1]`, int(^uint(0) >> 1), 1000, `[]`, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			page, total, isArray, err := pageArray(json.RawMessage(tc.raw), tc.offset, tc.limit)
			require.NoError(t, err)
			require.Equal(t, tc.page != "", isArray)
			if !isArray {
				require.Nil(t, page)
				return
			}
			require.Equal(t, tc.total, total)
			require.JSONEq(t, tc.page, string(page))
		})
	}

	for _, bad := range []string{`[1, 2`, `[1 2]`, `[}`} {
		_, _, _, err := pageArray(json.RawMessage(bad), 0, 10)
		require.Error(t, err, bad)
	}
}

// TestPageArrayAgreesWithSlicing pages real group rows and compares every page with
// slicing the decoded array.
func TestPageArrayAgreesWithSlicing(t *testing.T) {
	t.Parallel()
	const n = 600
	raw := fixtures.MatchGroups(t, n)
	for _, at := range []struct{ offset, limit int }{{0, 100}, {100, 1000}, {550, 1000}, {n - 1, 1}, {n, 10}} {
		want, _, _, err := pageArrayRawSlice(raw, at.offset, at.limit)
		require.NoError(t, err)
		var got []json.RawMessage
		require.NoError(t, json.Unmarshal(want, &got))
		require.Len(t, got, min(at.limit, max(0, n-at.offset)))
		ways := map[string]func(json.RawMessage, int, int) (json.RawMessage, int, bool, error){"decoder": pageArray, "split": pageArraySplit}
		for name, way := range ways {
			page, total, isArray, err := way(raw, at.offset, at.limit)
			require.NoError(t, err, name)
			require.True(t, isArray, name)
			require.Equal(t, n, total, name)
			require.Equal(t, string(want), string(page), "%s: offset %d limit %d", name, at.offset, at.limit)
		}
	}
}

// pageArrayRawSlice is the other way to cut a page, measured against pageArray: decode
// the whole array into []json.RawMessage and slice it.
func pageArrayRawSlice(raw json.RawMessage, offset, limit int) (json.RawMessage, int, bool, error) {
	if !bytes.HasPrefix(bytes.TrimLeft(raw, " \t\r\n"), []byte("[")) {
		return nil, 0, false, nil
	}
	var all []json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, 0, true, err
	}
	from := min(offset, len(all))
	to := from + min(limit, len(all)-from)
	page, err := json.Marshal(all[from:to])
	return page, len(all), true, err
}

// BenchmarkPageArray cuts pages of 100 out of 50,000 group rows (37 MB of JSON) three ways:
// the decoder walk RunContext uses, []json.RawMessage, and the hand-written splitter.
func BenchmarkPageArray(b *testing.B) {
	raw := fixtures.MatchGroups(b, 50_000)
	b.Logf("50,000 groups: %.1f MB", float64(len(raw))/1e6)
	ways := []struct {
		name string
		fn   func(json.RawMessage, int, int) (json.RawMessage, int, bool, error)
	}{{"gjson", pageArray}, {"rawslice", pageArrayRawSlice}, {"split", pageArraySplit}}
	for _, way := range ways {
		for _, offset := range []int{0, 25_000, 50_000} {
			b.Run(fmt.Sprintf("%s/offset=%d", way.name, offset), func(b *testing.B) {
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				for b.Loop() {
					_, total, _, err := way.fn(raw, offset, 100)
					if err != nil || total != 50_000 {
						b.Fatalf("total %d, err %v", total, err)
					}
				}
			})
		}
	}
}

// pageArraySplit is a third way, measured only (docs/decisions.md, "Run context by key"):
// find the elements' bounds by hand (strings skipped with IndexByte, depth counted) and
// check the page's elements with json.Valid. It trusts the array to be valid JSON outside
// the page, which the engine's own writes are.
func pageArraySplit(raw json.RawMessage, offset, limit int) (json.RawMessage, int, bool, error) {
	b := bytes.TrimLeft(raw, " \t\r\n")
	if len(b) == 0 || b[0] != '[' {
		return nil, 0, false, nil
	}
	out := []byte{'['}
	i, total := 1, 0
	for {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
		if i < len(b) && b[i] == ']' && total == 0 {
			break
		}
		start, depth := i, 0
	el:
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				for {
					j := bytes.IndexByte(b[i+1:], '"')
					if j < 0 {
						return nil, 0, true, fmt.Errorf("unterminated string")
					}
					i += 1 + j
					k := i - 1
					for k > start && b[k] == '\\' {
						k--
					}
					if (i-1-k)%2 == 0 {
						break
					}
				}
			case '[', '{':
				depth++
			case ']', '}':
				if depth == 0 {
					break el
				}
				depth--
			case ',':
				if depth == 0 {
					break el
				}
			}
		}
		if i >= len(b) {
			return nil, 0, true, fmt.Errorf("unterminated array")
		}
		if total >= offset && total-offset < limit {
			e := bytes.TrimRight(b[start:i], " \t\r\n")
			if !json.Valid(e) {
				return nil, 0, true, fmt.Errorf("element %d is not valid JSON", total)
			}
			if total > offset {
				out = append(out, ',')
			}
			out = append(out, e...)
		}
		total++
		if b[i] == ']' {
			break
		}
		i++
	}
	return append(out, ']'), total, true, nil
}

// TestPagePartsAgreesWithSlicing cuts arrays into parts of several lengths, as the store
// holds them, and compares every page pageParts makes (parts copied whole, parts walked,
// the short last part) with slicing the array.
func TestPagePartsAgreesWithSlicing(t *testing.T) {
	t.Parallel()
	const n = 23
	els := make([]string, n)
	for i := range els {
		els[i] = fmt.Sprintf(`{"i":%d,"s":"],[ \"%d\""}`, i, i)
	}
	for _, per := range []int{1, 2, 5, 10, 22, 23, 50} {
		var parts []json.RawMessage
		for i := 0; i < n; i += per {
			parts = append(parts, json.RawMessage("["+strings.Join(els[i:min(i+per, n)], ",")+"]"))
		}
		for offset := 0; offset <= n+1; offset++ {
			for _, limit := range []int{1, 2, 3, 5, 10, 20, 100} {
				to := min(offset+limit, n)
				first, last := offset/per, (to-1)/per
				slice := storage.ContextSlice{Found: true, Length: n, Per: per, Parts: []json.RawMessage{}}
				if offset < to {
					slice.Parts, slice.Start = parts[first:last+1], first*per
				}
				page, err := pageParts(slice, offset, limit)
				require.NoError(t, err)
				want := "[]"
				if offset < to {
					want = "[" + strings.Join(els[offset:to], ",") + "]"
				}
				require.Equal(t, want, string(page), "per %d offset %d limit %d", per, offset, limit)
			}
		}
	}
	for _, bad := range []string{`[1,2`, `{"a":1}`, `x`, `[1 2]`} {
		slice := storage.ContextSlice{Found: true, Length: 4, Per: 2, Parts: []json.RawMessage{json.RawMessage(bad)}}
		_, err := pageParts(slice, 1, 1)
		require.Error(t, err, bad)
	}
}

func TestPartLength(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ avg, n, want int }{
		{260, 50_000, 500},    // a matcher's pairs: 504 by size
		{100, 50_000, 1000},   // 1,310 by size
		{40, 50_000, 2000},    // 3,276
		{20, 50_000, 5000},    // 6,553
		{10, 50_000, 10_000},  // 13,107
		{2, 100_000, 50_000},  // 65,536
		{1, 200_000, 100_000}, // 131,072
		{600, 50_000, 200},    // 218
		{1200, 50_000, 100},   // 109
		{2000, 50_000, 65},    // under 100: as it is
		{10, 700, 700},        // never more than the array
		{1 << 20, 10, 1},
		{0, 10, 10},
	} {
		require.Equal(t, tc.want, partLength(tc.avg, tc.n), "avg %d, n %d", tc.avg, tc.n)
	}
}
