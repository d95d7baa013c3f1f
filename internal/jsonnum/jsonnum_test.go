package jsonnum_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/svcflow/svcflow/internal/jsonnum"
)

func TestCmp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"123456789012345678901234567891", "123456789012345678901234567890", 1},
		{"123456789012345678901234567890", "123456789012345678901234567891", -1},
		{"1", "1.0", 0},
		{"1e2", "100", 0},
		{"100", "1E+2", 0},
		{"0", "-0.0", 0},
		{"-1", "0", -1},
		{"-2", "-1", -1},
		{"0.1000000000000000055511151231257827", "0.1", 1},
		{"0.001", "0.01", -1},
		{"1e-400", "0", 1},
		{"-1e-400", "0", -1},
		{"99", "100", -1},
		{"12.5", "12.50", 0},
		{"1e400", "1e399", 1},
	} {
		got, ok := jsonnum.Cmp(tc.a, tc.b)
		require.True(t, ok, tc.a)
		require.Equal(t, tc.want, got, "%s vs %s", tc.a, tc.b)
	}
	_, ok := jsonnum.Cmp("1x", "1")
	require.False(t, ok)
	_, ok = jsonnum.Cmp("", "1")
	require.False(t, ok)
}

func TestCmpFloat(t *testing.T) {
	t.Parallel()
	c, ok := jsonnum.CmpFloat("0.1", 0.1)
	require.True(t, ok)
	require.Equal(t, 0, c)
	c, _ = jsonnum.CmpFloat("0.1000000000000000055511151231257827", 0.1)
	require.Equal(t, 1, c)
	c, _ = jsonnum.CmpFloat("1e400", 1e308)
	require.Equal(t, 1, c)
}

func TestAppendKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1":                                      "1",
		"1.0":                                    "1",
		"1e2":                                    "100",
		"1.5":                                    "1.5",
		"1e21":                                   "1e+21",
		"123456789012345678901234567891":         "123456789012345678901234567891",
		"1234567890123456789012345678910e-1":     "123456789012345678901234567891",
		"0.1000000000000000055511151231257827":   "0.1000000000000000055511151231257827",
		"-0.10000000000000000555111512312578270": "-0.1000000000000000055511151231257827",
		"1e-400":                                 "1e-400",
		"12345678901234567890123456789.5e100":    "1.23456789012345678901234567895e+128",
	} {
		require.Equal(t, want, string(jsonnum.AppendKey(nil, in)), in)
	}
}

func TestOutOfRange(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"n":1e400}`:                        "/n",
		`{"a":[1,2,{"b/c":-1E+999}]}`:        "/a/2/b~1c",
		`[0,"1e400",1e400]`:                  "/2",
		`{"s":"x\"1e400","m":{"k":[1e309]}}`: "/m/k/0",
	} {
		got, found := jsonnum.OutOfRange([]byte(in))
		require.True(t, found, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{`{"n":1e308}`, `{"n":1e-400}`, `{"t":true,"f":false,"e":"1e400"}`, `123456789012345678901234567891`} {
		_, found := jsonnum.OutOfRange([]byte(in))
		require.False(t, found, in)
	}
}

func TestUnmarshal(t *testing.T) {
	t.Parallel()
	var v any
	require.NoError(t, jsonnum.Unmarshal([]byte(`{"n":123456789012345678901234567891}`), &v))
	require.Equal(t, "123456789012345678901234567891", string(v.(map[string]any)["n"].(interface{ String() string }).String()))
	require.Error(t, jsonnum.Unmarshal([]byte(`{} {}`), &v))
}
