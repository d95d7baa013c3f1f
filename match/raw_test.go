package match

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/match/internal/gen"
)

// marshalRecords writes records as one JSON array, as encoding/json writes each.
func marshalRecords(t testing.TB, recs []Record) []byte {
	t.Helper()
	out := []byte{'['}
	for i, r := range recs {
		if i > 0 {
			out = append(out, ',')
		}
		b, err := json.Marshal(r)
		require.NoError(t, err)
		out = append(out, b...)
	}
	return append(out, ']')
}

func rawRecords(t testing.TB, data string) *RawRecords {
	t.Helper()
	r, err := NewRawRecords([]byte(data))
	require.NoError(t, err)
	return r
}

// TestRawMatchesMapsOnGeneratedData: on the seeded noisy set, raw records give exactly the
// pairs and unmatched records of maps, for each kind of matcher, and the outputs written
// from the bytes are the bytes encoding/json writes for Match's outputs.
func TestRawMatchesMapsOnGeneratedData(t *testing.T) {
	t.Parallel()
	n := 50_000
	if testing.Short() {
		n = 5_000
	}
	set := gen.NewTwoWay(gen.Standard(3, n))
	rawL, err := NewRawRecords(marshalRecords(t, set.Left))
	require.NoError(t, err)
	rawR, err := NewRawRecords(marshalRecords(t, set.Right))
	require.NoError(t, err)
	require.Equal(t, len(set.Left), rawL.Len())
	require.Equal(t, len(set.Right), rawR.Len())

	tests := []struct {
		name string
		opts MatchOptions
	}{
		{"key, tolerance, window, fuzzy", MatchOptions{MatchOn: []string{"counterparty"}, Tolerance: f64(0.05), DateWindowDays: f64(3), FuzzyThreshold: f64(50)}},
		{"key, tolerance, window", MatchOptions{MatchOn: []string{"counterparty"}, Tolerance: f64(0.05), DateWindowDays: f64(3)}},
		{"composite key with the date, tolerance", MatchOptions{MatchOn: []string{"counterparty", "date"}, Tolerance: f64(0.01)}},
		{"key and amount as a key, window", MatchOptions{MatchOn: []string{"counterparty", "amount"}, DateWindowDays: f64(1)}},
		{"key only", MatchOptions{MatchOn: []string{"counterparty"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := Match(set.Left, set.Right, tt.opts)
			require.NoError(t, err)
			got, err := MatchDatasets(rawL, rawR, tt.opts)
			require.NoError(t, err)
			require.Greater(t, len(want.Matched), n/4)

			require.Len(t, got.Pairs, len(want.Matched))
			for i, p := range want.Matched {
				require.Equal(t, IndexPair{p.LeftIndex, p.RightIndex}, got.Pairs[i], "pair %d", i)
			}
			require.Equal(t, want.Policy, got.Policy)
			require.Len(t, got.UnmatchedLeft, len(want.UnmatchedLeft))
			require.Len(t, got.UnmatchedRight, len(want.UnmatchedRight))

			// The outputs, element by element, are encoding/json's bytes for Match's.
			wm, wl, wr := want.Outputs()
			gm, gl, gr := got.Outputs()
			for _, o := range []struct {
				want []any
				got  Output
			}{{wm, gm}, {wl, gl}, {wr, gr}} {
				require.Equal(t, len(o.want), o.got.Len())
				var el []byte
				for k, v := range o.want {
					b, err := json.Marshal(v)
					require.NoError(t, err)
					el, err = o.got.AppendElement(el[:0], k)
					require.NoError(t, err)
					require.Equal(t, string(b), string(el), "element %d", k)
				}
			}
		})
	}
}

// TestRecordsDatasetIsMatch: MatchDatasets on Records is Match.
func TestRecordsDatasetIsMatch(t *testing.T) {
	t.Parallel()
	set := gen.NewTwoWay(gen.Standard(5, 3_000))
	opts := MatchOptions{MatchOn: []string{"counterparty"}, Tolerance: f64(0.05), DateWindowDays: f64(3), FuzzyThreshold: f64(50)}
	want, err := Match(set.Left, set.Right, opts)
	require.NoError(t, err)
	got, err := MatchDatasets(Records(set.Left), Records(set.Right), opts)
	require.NoError(t, err)
	require.Len(t, got.Pairs, len(want.Matched))
	for i, p := range want.Matched {
		require.Equal(t, IndexPair{p.LeftIndex, p.RightIndex}, got.Pairs[i])
	}
	m, _, _ := got.Outputs()
	var buf bytes.Buffer
	_, err = m.WriteTo(&buf)
	require.NoError(t, err)
	wm, _, _ := want.Outputs()
	wb, err := json.Marshal(wm)
	require.NoError(t, err)
	require.Equal(t, string(wb), buf.String())
}

// TestRawValuesReadAsDecoded: every field of each record reads, raw, as the same key
// text, number, minor units, date and description text as the value encoding/json
// decodes (as float64, and as json.Number).
func TestRawValuesReadAsDecoded(t *testing.T) {
	t.Parallel()
	records := []string{
		`{"a": "12.50", "b": 12.5, "c": " 12.5 ", "d": "1e3", "e": 1000, "f": 1E3, "g": 1000.0}`,
		`{"a": null, "b": true, "c": false, "d": "", "e": -0, "f": 0.145, "g": -0.145, "h": 1.005}`,
		`{"a": 1e21, "b": 1e-7, "c": 123456789012345678, "d": 0.1, "e": "NaN", "f": "Inf", "g": "0x10"}`,
		`{"a": {"z": 1.0, "a": [1, "x", null], "m": {"b": 2, "a": 1}}, "b": { "a" : [ 1 , "x" , null ] , "z":1 , "m":{"a":1,"b":2.0}}}`,
		`{"a": [], "b": {}, "c": [{"k": "v"}], "d": {"k": "a\"b\\c<>&"}}`,
		`{"a": "caf\u00e9", "b": "café", "c": "\ud83d\ude00", "d": "\ud800", "e": "tab\there", "f": "a\/b"}`,
		`{"a": "2024-03-01", "b": "2024-03-01T23:30:00-05:00", "c": "2024-02-30", "d": "2024-3-1", "e": 20240301}`,
		`{"a": "INV|1", "b": "back\\slash", "c": "  spaced  ", "d": "UPPER", "e": "\u0041"}`,
		"{\"a\": \"bad \xff byte\", \"b\": \"ok\"}",
		`{"a": 1, "a": 2, "b": {"x": 1, "x": 2}, "b": {"x": 3, "x": 4}}`,
		`{"am\u006funt": 5, "a": 7, "\u0061": 8}`,
		`{"a": 1e400, "b": -1e400, "c": "1e400"}`,
	}
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "amount", "missing"}
	for _, rec := range records {
		raw := rawRecords(t, "["+rec+"]")
		vals := make([]Value, len(names))
		raw.Fields(0, names, vals)

		var asNumber map[string]any
		dec := json.NewDecoder(strings.NewReader(rec))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&asNumber), rec)
		var asFloat map[string]any
		floatErr := json.Unmarshal([]byte(rec), &asFloat)
		if floatErr != nil { // 1e400 does not fit a float64: the record reads with json.Number only
			asFloat = nil
		}

		for j, name := range names {
			for k, decoded := range []map[string]any{asNumber, asFloat} {
				if decoded == nil {
					continue
				}
				v, where := vals[j], fmt.Sprintf("%s field %q", rec, name)
				// Keys as json.Number gives them: a number is a key by its digits, and
				// 123456789012345678 is not the float64 nearest it.
				if k == 0 {
					wantKey, wantKeyOK := keyText(nil, decoded[name])
					gotKey, gotKeyOK := valueKey(nil, v)
					require.Equal(t, wantKeyOK, gotKeyOK, where)
					require.Equal(t, string(wantKey), string(gotKey), where)
				}
				wantNum, wantNumOK := number(decoded[name])
				gotNum, gotNumOK := valueNumber(v)
				require.Equal(t, wantNumOK, gotNumOK, where)
				require.Equal(t, wantNum, gotNum, where)
				if wantNumOK {
					wm, wok := minorUnits(wantNum)
					gm, gok := minorUnits(gotNum)
					require.Equal(t, wok, gok, where)
					require.Equal(t, wm, gm, where)
				}
				wantDay, wantDayOK := day(decoded[name])
				gotDay, gotDayOK := valueDay(v)
				require.Equal(t, wantDayOK, gotDayOK, where)
				require.Equal(t, wantDay, gotDay, where)
				if k == 0 {
					require.Equal(t, text(decoded[name]), valueText(v), where)
				}
			}
		}
		if floatErr != nil {
			require.Contains(t, rec, "1e400")
		}
	}
}

// TestRawFieldsKinds: what a raw field is, and which of duplicate keys wins.
func TestRawFieldsKinds(t *testing.T) {
	t.Parallel()
	raw := rawRecords(t, ` [ {"s": "x", "n": -1.50, "t": true, "z": null, "o": {"k": 1}, "a": [1],`+
		` "dup": 1, "dup": "last", "caf\u00e9": "escaped key", "e": "caf\u00e9"} ] `)
	names := []string{"s", "n", "t", "z", "o", "a", "dup", "café", "e", "none"}
	vals := make([]Value, len(names))
	raw.Fields(0, names, vals)
	require.Equal(t, []Value{
		{Kind: KindString, Text: "x"},
		{Kind: KindNumber, Text: "-1.50"},
		{Kind: KindBool, Text: "true"},
		{Kind: KindNull},
		{Kind: KindObject, Text: `{"k": 1}`},
		{Kind: KindArray, Text: `[1]`},
		{Kind: KindString, Text: "last"}, // the last of duplicate keys, as encoding/json
		{Kind: KindString, Text: "escaped key"},
		{Kind: KindString, Text: "café"},
		{},
	}, vals)
	// The same name asked twice is given twice.
	two := make([]Value, 2)
	raw.Fields(0, []string{"s", "s"}, two)
	require.Equal(t, two[0], two[1])
}

// TestMatchDatasetsKeys: keys that are equal as decoded JSON pair up, raw.
func TestMatchDatasetsKeys(t *testing.T) {
	t.Parallel()
	left := rawRecords(t, `[
		{"id": "L1", "k": "caf\u00e9"},
		{"id": "L2", "k": 1001},
		{"id": "L3", "k": {"b": [1.0, "x"], "a": null}},
		{"id": "L4", "k": null},
		{"id": "L5"},
		{"id": "L6", "k": "first", "k": "last"},
		{"id": "L7", "k": "12.50"}
	]`)
	right := rawRecords(t, `[
		{"id": "R1", "k": "café"},
		{"id": "R2", "k": "1001"},
		{"id": "R3", "k": { "a": null, "b": [1, "x"] }},
		{"id": "R4", "k": null},
		{"id": "R5"},
		{"id": "R6", "k": "last"},
		{"id": "R7", "k": 12.5}
	]`)
	res, err := MatchDatasets(left, right, MatchOptions{MatchOn: []string{"k"}})
	require.NoError(t, err)
	// "12.50" is the string as it is, 12.5 the number's shortest form: not one key.
	require.Equal(t, []IndexPair{{0, 0}, {1, 1}, {2, 2}, {5, 5}}, res.Pairs)
	require.Equal(t, []int{3, 4, 6}, res.UnmatchedLeft)
	require.Equal(t, []int{3, 4, 6}, res.UnmatchedRight)

	// The same with maps.
	decode := func(r *RawRecords) []Record {
		var out []Record
		require.NoError(t, json.Unmarshal(r.data, &out))
		return out
	}
	want, err := Match(decode(left), decode(right), MatchOptions{MatchOn: []string{"k"}})
	require.NoError(t, err)
	require.Len(t, want.Matched, len(res.Pairs))
	for i, p := range want.Matched {
		require.Equal(t, IndexPair{p.LeftIndex, p.RightIndex}, res.Pairs[i])
	}

	m, ul, ur := res.Outputs()
	var buf bytes.Buffer
	_, err = m.WriteTo(&buf)
	require.NoError(t, err)
	require.True(t, json.Valid(buf.Bytes()))
	require.Contains(t, buf.String(), `{"left":{"id": "L1", "k": "caf\u00e9"},"right":{"id": "R1", "k": "café"}}`,
		"records are written as they came, escapes and spaces kept")
	b, err := ul.AppendArray(nil, 0, ul.Len())
	require.NoError(t, err)
	require.Equal(t, `[{"id": "L4", "k": null},{"id": "L5"},{"id": "L7", "k": "12.50"}]`, string(b))
	b, err = ur.AppendArray(nil, 1, 2)
	require.NoError(t, err)
	require.Equal(t, `[{"id": "R5"}]`, string(b))
}

// TestMatchDatasetsAmounts: amounts and dates read from numbers, numeric strings and
// timestamps, raw, as from maps.
func TestMatchDatasetsAmounts(t *testing.T) {
	t.Parallel()
	left := rawRecords(t, `[
		{"id": "L1", "amount": 0.1, "date": "2024-03-01"},
		{"id": "L2", "amount": "0.145", "date": "2024-03-01T23:30:00-05:00"},
		{"id": "L3", "amount": 1e2, "date": "2024-03-05"},
		{"id": "L4", "amount": "n/a", "date": "2024-03-01"}
	]`)
	right := rawRecords(t, `[
		{"id": "R1", "amount": "100.00", "date": "2024-03-07"},
		{"id": "R2", "amount": 0.15, "date": "2024-03-02"},
		{"id": "R3", "amount": 0.30, "date": "2024-03-01"},
		{"id": "R4", "amount": null, "date": "2024-03-01"}
	]`)
	opts := MatchOptions{Tolerance: f64(0.2), DateWindowDays: f64(2)}
	res, err := MatchDatasets(left, right, opts)
	require.NoError(t, err)
	require.Equal(t, []IndexPair{{0, 2}, {1, 1}, {2, 0}}, res.Pairs)
}

func TestNewRawRecordsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		data string
		want string // "" when it is accepted; then n records
		n    int
	}{
		{data: `[]`, n: 0},
		{data: " \n[ ] \n", n: 0},
		{data: "\xEF\xBB\xBF[{\"a\":1}]", n: 1},
		{data: `[{}, {"a": [1, {"b": "}"}]}, {"c": "\"{"}]`, n: 3},
		{data: ``, want: "not valid JSON"},
		{data: `[{"a": 1}`, want: "not valid JSON"},
		{data: `[{"a": 1}] x`, want: "not valid JSON"},
		{data: `{"a": 1}`, want: "want an array of objects"},
		{data: `"x"`, want: "want an array of objects"},
		{data: `[{"a": 1}, 2]`, want: "element 1 is not an object"},
		{data: `[[]]`, want: "element 0 is not an object"},
	}
	for _, tt := range tests {
		r, err := NewRawRecords([]byte(tt.data))
		if tt.want == "" {
			require.NoError(t, err, tt.data)
			require.Equal(t, tt.n, r.Len(), tt.data)
			continue
		}
		require.Error(t, err, tt.data)
		require.True(t, errors.Is(err, ErrInvalidRecords), tt.data)
		require.Contains(t, err.Error(), tt.want, tt.data)
	}
}

// TestOutputInParts: an output written in parts of a few elements, each a JSON array,
// holds the elements WriteTo writes at once, through several of its buffer's flushes.
func TestOutputInParts(t *testing.T) {
	t.Parallel()
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range 3000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id": %d, "k": "K%d", "pad": %q}`, i, i%7, strings.Repeat("x", i%50))
	}
	sb.WriteByte(']')
	raw := rawRecords(t, sb.String())
	res, err := MatchDatasets(raw, raw, MatchOptions{MatchOn: []string{"k"}})
	require.NoError(t, err)
	m, _, _ := res.Outputs()
	require.Equal(t, 3000, m.Len())

	var whole bytes.Buffer
	w := &countingWriter{w: &whole}
	n, err := m.WriteTo(w)
	require.NoError(t, err)
	require.Equal(t, int64(whole.Len()), n)
	require.Greater(t, w.writes, 2)

	var all []json.RawMessage
	require.NoError(t, json.Unmarshal(whole.Bytes(), &all))
	require.Len(t, all, 3000)
	for from := 0; from < m.Len(); from += 128 {
		part, err := m.AppendArray(nil, from, min(from+128, m.Len()))
		require.NoError(t, err)
		var els []json.RawMessage
		require.NoError(t, json.Unmarshal(part, &els))
		for k, el := range els {
			require.Equal(t, string(all[from+k]), string(el))
		}
	}
}

type countingWriter struct {
	w      *bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.w.Write(p)
}

// Numbers are keys by their digits: two 30-digit account numbers that one float64 holds
// both of are two keys, on raw records and on records decoded with UseNumber; 1.0 and 1
// are still one.
func TestMatchOnBigNumbersIsExact(t *testing.T) {
	t.Parallel()
	left := rawRecords(t, `[{"acct": 123456789012345678901234567891}, {"acct": 1.0}]`)
	right := rawRecords(t, `[{"acct": 123456789012345678901234567890}, {"acct": 1}, {"acct": 1234567890123456789012345678910e-1}]`)
	res, err := MatchDatasets(left, right, MatchOptions{MatchOn: []string{"acct"}})
	require.NoError(t, err)
	require.Equal(t, []IndexPair{{0, 2}, {1, 1}}, res.Pairs)

	decode := func(r *RawRecords) []Record {
		var out []Record
		dec := json.NewDecoder(bytes.NewReader(r.data))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&out))
		return out
	}
	got, err := Match(decode(left), decode(right), MatchOptions{MatchOn: []string{"acct"}})
	require.NoError(t, err)
	require.Len(t, got.Matched, 2)
	require.Equal(t, 0, got.Matched[0].LeftIndex)
	require.Equal(t, 2, got.Matched[0].RightIndex)
}
