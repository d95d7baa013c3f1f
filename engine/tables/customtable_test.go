package tables

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateCustomTable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		props    map[string]any
		pointers []string
	}{
		{"write ok", map[string]any{"table": "t", "operation": "write", "fields": map[string]any{"a": 1.0}}, nil},
		{"upsert ok", map[string]any{"table": "t", "operation": "upsert", "keys": []any{"id"}, "values": []any{"@input.id"}}, nil},
		{"values from a path", map[string]any{"table": "t", "operation": "upsert", "keys": []any{"id"}, "values": "@input.ids"}, nil},
		{"values a plain string", map[string]any{"table": "t", "operation": "upsert", "keys": []any{"id"}, "values": "ids"}, []string{"/values"}},
		{"read ok", map[string]any{"table": "t", "operation": "read", "where": map[string]any{"a": "x"}, "limit": 5.0}, nil},
		{"no table", map[string]any{"operation": "read"}, []string{"/table"}},
		{"bad operation", map[string]any{"table": "t", "operation": "delete"}, []string{"/operation"}},
		{"upsert without keys", map[string]any{"table": "t", "operation": "upsert"}, []string{"/keys"}},
		{"values misaligned", map[string]any{"table": "t", "operation": "upsert", "keys": []any{"a", "b"}, "values": []any{1.0}}, []string{"/values"}},
		{"empty key name", map[string]any{"table": "t", "operation": "upsert", "keys": []any{""}, "values": []any{1.0}}, []string{"/keys/0"}},
		{"fields not a map", map[string]any{"table": "t", "operation": "write", "fields": "x"}, []string{"/fields"}},
		{"where not a map", map[string]any{"table": "t", "operation": "read", "where": []any{}}, []string{"/where"}},
		{"negative limit", map[string]any{"table": "t", "operation": "read", "limit": -1.0}, []string{"/limit"}},
		{"fractional limit", map[string]any{"table": "t", "operation": "read", "limit": 1.5}, []string{"/limit"}},
		{"limit at the maximum", map[string]any{"table": "t", "operation": "read", "limit": 10000.0}, nil},
		{"limit over the maximum", map[string]any{"table": "t", "operation": "read", "limit": 10001.0}, []string{"/limit"}},
		{"limit zero", map[string]any{"table": "t", "operation": "read", "limit": 0.0}, []string{"/limit"}},
		{"limit from a path", map[string]any{"table": "t", "operation": "read", "limit": "@input.n"}, nil},
		{"limit a plain string", map[string]any{"table": "t", "operation": "read", "limit": "5"}, []string{"/limit"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, p := range validateCustomTable(tc.props) {
				got = append(got, p.Pointer)
			}
			require.Equal(t, tc.pointers, got)
		})
	}
}
