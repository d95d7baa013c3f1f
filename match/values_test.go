package match

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMinorUnits(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in   float64
		want int64
		ok   bool
	}{
		{0, 0, true}, {0.3, 30, true}, {0.1 + 0.2, 30, true}, {19.99, 1999, true}, {-19.99, -1999, true},
		{0.145, 15, true}, {-0.145, -15, true}, {1.005, 101, true}, {2.675, 268, true}, {0.125, 13, true},
		{0.1249, 12, true}, {1e14, 1e16, true}, {math.NaN(), 0, false}, {math.Inf(1), 0, false}, {1e16, 0, false},
	}
	for _, tt := range tests {
		got, ok := minorUnits(tt.in)
		require.Equal(t, tt.ok, ok, "%v", tt.in)
		require.Equal(t, tt.want, got, "%v", tt.in)
	}
	require.Equal(t, int64(10), toleranceMinor(0.1))
	require.Equal(t, int64(29), toleranceMinor(0.29))
	require.Equal(t, int64(0), toleranceMinor(0.005))
	require.Equal(t, int64(1<<62), toleranceMinor(1e300))
}

func TestNumber(t *testing.T) {
	t.Parallel()

	type myInt int16
	ok := []any{1.5, 3, int64(4), int32(5), float32(0.5), uint8(7), myInt(8), json.Number("2.50"), " 12.5 ", "-3", "1e3"}
	for _, v := range ok {
		_, good := number(v)
		require.True(t, good, "%#v", v)
	}
	bad := []any{nil, "", "abc", "NaN", "Inf", "0x10", "1,5", true, []any{1.0}, map[string]any{}, json.Number("x"), math.NaN()}
	for _, v := range bad {
		_, good := number(v)
		require.False(t, good, "%#v", v)
	}
}

func TestDay(t *testing.T) {
	t.Parallel()

	epoch := func(s string) int32 {
		tm, err := time.Parse(time.DateOnly, s)
		require.NoError(t, err)
		return int32(tm.Unix() / 86400)
	}
	tests := []struct {
		in   any
		want string
	}{
		{"2024-02-29", "2024-02-29"},
		{"1970-01-01", "1970-01-01"},
		{"1969-12-31", "1969-12-31"},
		{"0001-01-01", "0001-01-01"},
		{"2024-03-01T23:30:00-05:00", "2024-03-01"},
		{"2024-03-01T00:30:00+14:00", "2024-03-01"},
		{"2024-03-01T10:00:00.123Z", "2024-03-01"},
		{time.Date(2024, 5, 6, 23, 0, 0, 0, time.FixedZone("x", -3600)), "2024-05-06"},
	}
	for _, tt := range tests {
		d, ok := day(tt.in)
		require.True(t, ok, "%v", tt.in)
		require.Equal(t, epoch(tt.want), d, "%v", tt.in)
		require.Equal(t, tt.want, dayString(d))
	}
	for _, bad := range []any{"2023-02-29", "2024-13-01", "2024-00-10", "2024-1-01", "01/02/2024", "2024-01-01 junk", "", 20240101.0, nil} {
		_, ok := day(bad)
		require.False(t, ok, "%v", bad)
	}
}

func TestKeyTextAndCanonical(t *testing.T) {
	t.Parallel()

	text := func(v any) string {
		b, ok := keyText(nil, v)
		require.True(t, ok)
		return string(b)
	}
	require.Equal(t, "1001", text(1001.0))
	require.Equal(t, "1001", text(json.Number("1001.0")))
	require.Equal(t, "1001", text(1001))
	require.Equal(t, " A-1 ", text(" A-1 "), "strings are not normalised")
	require.Equal(t, "0.5", text(0.5))
	require.Equal(t, "1e-7", text(1e-7))
	require.Equal(t, "1e+21", text(1e21))
	require.Equal(t, "true", text(true))
	require.Equal(t, `{"a":[1,"x"],"b":null}`, text(map[string]any{"b": nil, "a": []any{1.0, "x"}}))
	_, ok := keyText(nil, nil)
	require.False(t, ok)

	got := string(appendCanonical(nil, map[string]any{
		"z": "<tag> & \"quote\"\n\x01", "a": json.Number("1.50"), "m": map[string]string{"y": "1", "x": "2"}, "i": 3, "f": 2.5e-9, "bad": "\xff",
	}))
	require.Equal(t, `{"a":1.5,"bad":"`+"\ufffd"+`","f":2.5e-9,"i":3,"m":{"x":"2","y":"1"},"z":"<tag> & \"quote\"\n\u0001"}`, got)
	require.True(t, json.Valid([]byte(got)))
}

func TestExactSumIsOrderIndependent(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(1, 1))
	var s exactSum
	for range 200 {
		vals := make([]float64, 2+rng.IntN(20))
		for i := range vals {
			vals[i] = (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(12)-4))
		}
		s.reset()
		for _, v := range vals {
			s.add(v)
		}
		want := s.value()
		rng.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
		s.reset()
		for _, v := range vals {
			s.add(v)
		}
		require.Equal(t, want, s.value())
	}
	s.reset()
	for _, v := range []float64{1e100, 1.0, -1e100} {
		s.add(v)
	}
	require.Equal(t, 1.0, s.value(), "exact, unlike a running float sum")
	s.reset()
	s.add(0.1)
	s.add(0.2)
	require.Equal(t, 0.30000000000000004, s.value(), "correctly rounded, as math.fsum")
}
