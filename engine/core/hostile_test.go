package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestHostileDefinitions (issue 21): definitions built to cost the service are refused with
// a problem located where the trouble is, and nothing is stored. Durations are logged, not
// asserted; a 10 MB definition costs its JSON decoding (bounded by the API's 10 MiB body
// limit), and the bounds of engine/expr are checked before any work on what they bound.
func TestHostileDefinitions(t *testing.T) {
	t.Parallel()
	st := store.OpenTest(t, "sqlite")
	c, err := core.New(core.Config{Store: st})
	require.NoError(t, err)
	ctx := context.Background()

	notNested := func(n int) string {
		return strings.Repeat(`{"not":`, n) + `{"exists":"@input.a"}` + strings.Repeat(`}`, n)
	}
	step := func(props string) string {
		return `{"actions":[{"type":"noop","properties":` + props + `}]}`
	}
	for _, tc := range []struct {
		name, definition, pointer, message string
	}{
		{
			name:       "a 10 MB template",
			definition: step(`{"text":"` + strings.Repeat("{{input.a}} ", 10_000_000/12) + `"}`),
			pointer:    "/definition/actions/0/properties/text", message: "template too large: 9999996 bytes, limit 65536",
		},
		{
			name:       "a condition nested 100,000 deep",
			definition: `{"condition":` + notNested(100_000) + `,"actions":[]}`,
			pointer:    "/definition", message: "is not valid JSON: invalid character '{' exceeded max depth",
		},
		{
			name:       "a condition nested 9,000 deep (within encoding/json's 10,000)",
			definition: `{"condition":` + notNested(9_000) + `,"actions":[]}`,
			pointer:    "/definition/condition", message: "conditions nest deeper than 64",
		},
		{
			name:       "a filter of 100,000 operators",
			definition: `{"actions":[{"type":"noop","properties":{},"filter":{"condition":{"or":[` + strings.Repeat(`{"exists":"@input.a"},`, 100_000) + `true]}}}]}`,
			pointer:    "/definition/actions/0/filter/condition", message: "at most 1000 operators and arguments",
		},
		{
			name:       "__proto__ in a condition",
			definition: `{"condition":{"exists":"@input.__proto__"},"actions":[]}`,
			pointer:    "/definition/condition", message: `reserved path segment "__proto__"`,
		},
		{
			name:       "constructor in a template",
			definition: step(`{"text":"Hello {{input.constructor.name}}"}`),
			pointer:    "/definition/actions/0/properties/text", message: `reserved path segment "constructor"`,
		},
		{
			name:       "prototype as a path",
			definition: step(`{"rows":["@input.list.prototype"]}`),
			pointer:    "/definition/actions/0/properties/rows/0", message: `reserved path segment "prototype"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := c.CreateWorkflow(ctx, "acme", core.WorkflowInput{Name: "hostile", Definition: []byte(tc.definition)})
			took := time.Since(start)
			var ve *core.ValidationError
			require.True(t, errors.As(err, &ve), "got %v", err)
			var messages []string
			for _, p := range ve.Problems {
				if p.Pointer == tc.pointer {
					messages = append(messages, p.Message)
				}
			}
			require.NotEmpty(t, messages, "no problem at %s: %v", tc.pointer, ve.Problems)
			require.Contains(t, strings.Join(messages, "\n"), tc.message)
			for _, p := range ve.Problems {
				require.Less(t, len(p.Message), 1000, "a problem must not echo the input")
			}
			t.Logf("%s (%d bytes): refused in %v", tc.name, len(tc.definition), took)
		})
	}

	page, err := c.ListWorkflows(ctx, "acme", svctype.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, page.Items, "a refused definition was stored")
	require.Equal(t, 64, expr.MaxDepth, "the messages above name the bound")
}
