package actions_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/actions"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

func validHTTP(name string) svctype.Action {
	return svctype.Action{
		Name: name, Kind: svctype.ActionHTTP, Description: "posts an order",
		URL: "https://api.example.com/orders/{{input.id}}", Headers: map[string]string{"Authorization": "orgconfig:api:orders"},
	}
}

func TestActionValidation(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	b.Eng.RegisterStep("my_kind", func(context.Context, *svctype.StepCall) (any, error) { return nil, nil })
	long := strings.Repeat("x", 101)

	tests := []struct {
		name   string
		action svctype.Action
		want   []string // pointers of the problems, in order
	}{
		{"no kind", svctype.Action{Name: "a"}, []string{"/kind"}},
		{"unknown kind", svctype.Action{Name: "a", Kind: "smtp"}, []string{"/kind"}},
		{"no name", svctype.Action{Kind: svctype.ActionLLM, Template: "hi"}, []string{"/action_name"}},
		{"long name", svctype.Action{Name: long, Kind: svctype.ActionLLM, Template: "hi"}, []string{"/action_name"}},
		{"name with a space", svctype.Action{Name: "a b", Kind: svctype.ActionLLM, Template: "hi"}, []string{"/action_name"}},
		{"name with a slash", svctype.Action{Name: "a/b", Kind: svctype.ActionLLM, Template: "hi"}, []string{"/action_name"}},
		{"loop", svctype.Action{Name: "loop", Kind: svctype.ActionLLM, Template: "hi"}, []string{"/action_name"}},
		{"built-in primitive", svctype.Action{Name: "custom-table", Kind: svctype.ActionLLM, Template: "hi"}, []string{"/action_name"}},
		{"spec primitive not in this build", svctype.Action{Name: "PbotApproval", Kind: svctype.ActionLLM, Template: "hi"}, []string{"/action_name"}},
		{"kind registered in the environment", svctype.Action{Name: "my_kind", Kind: svctype.ActionLLM, Template: "hi"}, []string{"/action_name"}},
		{"long description", svctype.Action{Name: "a", Kind: svctype.ActionLLM, Template: "hi", Description: strings.Repeat("d", 2001)}, []string{"/description"}},

		{"http without url", svctype.Action{Name: "a", Kind: svctype.ActionHTTP}, []string{"/url"}},
		{"http ftp url", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "ftp://example.com/x"}, []string{"/url"}},
		{"http relative url", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "/orders"}, []string{"/url"}},
		{"http url without host", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "https:///x"}, []string{"/url"}},
		{"http unparsable url", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "https://exa mple.com/"}, []string{"/url"}},
		{"http empty orgconfig url", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "orgconfig:"}, []string{"/url"}},
		{"http method", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "https://x.example", HTTPMethod: "FETCH"}, []string{"/http_method"}},
		{"http lower-case method", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "https://x.example", HTTPMethod: "get"}, []string{"/http_method"}},
		{"http header name", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "https://x.example", Headers: map[string]string{"Bad Header": "v", "a/b": "v"}},
			[]string{"/headers/Bad Header", "/headers/a~1b"}},
		{"http header value with CRLF", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "https://x.example", Headers: map[string]string{"X-A": "v\r\nX-Evil: 1"}}, []string{"/headers/X-A"}},
		{"http header empty orgconfig", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "https://x.example", Headers: map[string]string{"X-A": "orgconfig:"}}, []string{"/headers/X-A"}},
		{"http header empty orgconfig after a space", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "https://x.example", Headers: map[string]string{"X-A": "Bearer orgconfig:", "X-B": "Bearer orgconfig:api crm"}},
			[]string{"/headers/X-A", "/headers/X-B"}},
		{"http timeout above 300", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "https://x.example", TimeoutSeconds: 301}, []string{"/timeout_seconds"}},
		{"http negative timeout", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "https://x.example", TimeoutSeconds: -1}, []string{"/timeout_seconds"}},
		{"http with fields of other kinds", svctype.Action{Name: "a", Kind: svctype.ActionHTTP, URL: "https://x.example", Datasource: "orgconfig:db:x", MaxTokens: 5, Properties: map[string]any{}},
			[]string{"/datasource", "/max_tokens", "/properties"}},

		{"db without fields", svctype.Action{Name: "a", Kind: svctype.ActionDB}, []string{"/datasource", "/query"}},
		{"db literal connection string", svctype.Action{Name: "a", Kind: svctype.ActionDB, Datasource: "postgres://u:p@h/db", Query: "SELECT 1"}, []string{"/datasource"}},
		{"db orgconfig not under db:", svctype.Action{Name: "a", Kind: svctype.ActionDB, Datasource: "orgconfig:api:erp", Query: "SELECT 1"}, []string{"/datasource"}},
		{"db blank query", svctype.Action{Name: "a", Kind: svctype.ActionDB, Datasource: "orgconfig:db:erp", Query: "  "}, []string{"/query"}},
		{"db with a url", svctype.Action{Name: "a", Kind: svctype.ActionDB, Datasource: "orgconfig:db:erp", Query: "SELECT 1", URL: "https://x.example", Passthrough: true},
			[]string{"/url", "/passthrough"}},

		{"llm without template", svctype.Action{Name: "a", Kind: svctype.ActionLLM, Model: "m"}, []string{"/template"}},
		{"llm max_tokens above the bound", svctype.Action{Name: "a", Kind: svctype.ActionLLM, Template: "hi", MaxTokens: 100001}, []string{"/max_tokens"}},
		{"llm negative max_tokens", svctype.Action{Name: "a", Kind: svctype.ActionLLM, Template: "hi", MaxTokens: -3}, []string{"/max_tokens"}},
		{"llm long model", svctype.Action{Name: "a", Kind: svctype.ActionLLM, Template: "hi", Model: strings.Repeat("m", 201)}, []string{"/model"}},
		{"llm oversized template", svctype.Action{Name: "a", Kind: svctype.ActionLLM, Template: strings.Repeat("t", 65<<10)}, []string{"/template"}},
		{"llm with a query", svctype.Action{Name: "a", Kind: svctype.ActionLLM, Template: "hi", Query: "SELECT 1"}, []string{"/query"}},

		{"custom-table without properties", svctype.Action{Name: "a", Kind: svctype.ActionCustomTable}, []string{"/properties"}},
		{"custom-table without table", svctype.Action{Name: "a", Kind: svctype.ActionCustomTable, Properties: map[string]any{"operation": "read"}}, []string{"/properties/table"}},
		{"custom-table bad operation", svctype.Action{Name: "a", Kind: svctype.ActionCustomTable, Properties: map[string]any{"table": "t", "operation": "drop"}}, []string{"/properties/operation"}},
		{"custom-table read limit", svctype.Action{Name: "a", Kind: svctype.ActionCustomTable, Properties: map[string]any{"table": "t", "operation": "read", "limit": 20000.0}}, []string{"/properties/limit"}},
		{"custom-table with a template", svctype.Action{Name: "a", Kind: svctype.ActionCustomTable, Template: "x", Properties: map[string]any{"table": "t", "operation": "read"}}, []string{"/template"}},
		{"nway_match without sets", svctype.Action{Name: "a", Kind: svctype.ActionNWayMatch, Properties: map[string]any{"matchOn": []any{"id"}}}, []string{"/properties/sets"}},
		{"nway_match one leg", svctype.Action{Name: "a", Kind: svctype.ActionNWayMatch, Properties: map[string]any{
			"sets": []any{map[string]any{"key": "a", "records": "@input.a"}}, "matchOn": []any{"id"},
		}}, []string{"/properties/sets"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := b.Eng.CreateAction(b.Ctx, "org", tt.action)
			var ve *engine.ValidationError
			require.ErrorAs(t, err, &ve)
			got := make([]string, len(ve.Problems))
			for i, p := range ve.Problems {
				got[i] = p.Pointer
				require.NotEmpty(t, p.Message)
			}
			require.Equal(t, tt.want, got, "%v", err)
		})
	}
	page, err := b.Eng.ListActions(b.Ctx, "org", svctype.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, page.Items, "nothing invalid was stored")
}

func TestActionValidKinds(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	tests := []struct {
		name   string
		action svctype.Action
		check  func(t *testing.T, a *svctype.Action)
	}{
		{"http defaults to POST", validHTTP("order"), func(t *testing.T, a *svctype.Action) {
			require.Equal(t, "POST", a.HTTPMethod)
		}},
		{"http every field", svctype.Action{
			Name: "get.order-2_x", Kind: svctype.ActionHTTP, URL: "orgconfig:api:orders_url", HTTPMethod: "GET",
			Headers:     map[string]string{"Authorization": "Bearer literal-is-allowed", "X-Key": "orgconfig:api:key", "X-Run": "{{__run_id}}"},
			Passthrough: true, RetryNonIdempotent: true, TimeoutSeconds: 300,
		}, func(t *testing.T, a *svctype.Action) {
			require.Equal(t, "GET", a.HTTPMethod)
			require.Equal(t, 300, a.TimeoutSeconds)
			require.True(t, a.Passthrough)
		}},
		{"db", svctype.Action{Name: "lookup", Kind: svctype.ActionDB, Datasource: "orgconfig:db:erp", Query: "SELECT * FROM invoices WHERE id = $1"}, nil},
		{"llm", svctype.Action{Name: "summarise", Kind: svctype.ActionLLM, Template: "Summarise {{input.text}}", Model: "gpt-x", MaxTokens: 100000}, nil},
		{"custom-table", svctype.Action{Name: "save-note", Kind: svctype.ActionCustomTable, Properties: map[string]any{
			"table": "notes", "operation": "upsert", "keys": []any{"id"}, "values": []any{"@input.id"}, "fields": map[string]any{"text": "@input.text"},
		}}, nil},
		{"nway_match", svctype.Action{Name: "recon", Kind: svctype.ActionNWayMatch, Properties: map[string]any{
			"sets":    []any{map[string]any{"key": "bank", "records": "@input.bank"}, map[string]any{"key": "erp", "records": "@input.erp"}},
			"matchOn": []any{"invoice"},
		}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := b.Eng.CreateAction(b.Ctx, "org", tt.action)
			require.NoError(t, err)
			require.Equal(t, "org", a.OrgID)
			require.False(t, a.CreatedAt.IsZero())
			require.Equal(t, a.CreatedAt, a.UpdatedAt)
			got, err := b.Eng.GetAction(b.Ctx, "org", tt.action.Name)
			require.NoError(t, err)
			require.Equal(t, a, got, "stored as returned")
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

func TestActionLifecycle(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		a, err := b.Eng.CreateAction(b.Ctx, "acme", validHTTP("order"))
		require.NoError(t, err)
		_, err = b.Eng.CreateAction(b.Ctx, "acme", svctype.Action{Name: "order", Kind: svctype.ActionLLM, Template: "x"})
		require.ErrorIs(t, err, engine.ErrConflict)
		_, err = b.Eng.CreateAction(b.Ctx, "other", validHTTP("order"))
		require.NoError(t, err, "names are per organization")

		for _, n := range []string{"b", "c", "a"} {
			_, err := b.Eng.CreateAction(b.Ctx, "acme", svctype.Action{Name: n, Kind: svctype.ActionLLM, Template: "hi " + n})
			require.NoError(t, err)
		}
		page, err := b.Eng.ListActions(b.Ctx, "acme", svctype.ListOptions{Limit: 3})
		require.NoError(t, err)
		require.Len(t, page.Items, 3)
		require.Equal(t, []string{"a", "b", "c"}, []string{page.Items[0].Name, page.Items[1].Name, page.Items[2].Name})
		page, err = b.Eng.ListActions(b.Ctx, "acme", svctype.ListOptions{Limit: 3, Cursor: page.NextCursor})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		require.Equal(t, "order", page.Items[0].Name)
		require.Empty(t, page.NextCursor)

		// PUT replaces the whole registration; the body's name, when given, is the path's.
		r, err := b.Eng.ReplaceAction(b.Ctx, "acme", "order", svctype.Action{Kind: svctype.ActionDB, Datasource: "orgconfig:db:erp", Query: "SELECT 1"})
		require.NoError(t, err)
		require.Equal(t, "order", r.Name)
		require.True(t, r.CreatedAt.Equal(a.CreatedAt), "created_at kept")
		got, err := b.Eng.GetAction(b.Ctx, "acme", "order")
		require.NoError(t, err)
		require.Equal(t, svctype.ActionDB, got.Kind)
		require.Empty(t, got.URL)
		require.Empty(t, got.Description, "absent from the replacement, absent after it")

		_, err = b.Eng.ReplaceAction(b.Ctx, "acme", "order", validHTTP("renamed"))
		var ve *engine.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "/action_name", ve.Problems[0].Pointer)
		_, err = b.Eng.ReplaceAction(b.Ctx, "acme", "order", svctype.Action{Kind: svctype.ActionDB, Datasource: "postgres://x"})
		require.ErrorAs(t, err, &ve)
		_, err = b.Eng.ReplaceAction(b.Ctx, "acme", "missing", validHTTP("missing"))
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.ReplaceAction(b.Ctx, "nobody", "order", validHTTP("order"))
		require.ErrorIs(t, err, engine.ErrNotFound, "another org's action is not found")

		require.ErrorIs(t, b.Eng.DeleteAction(b.Ctx, "nobody", "order"), engine.ErrNotFound)
		require.NoError(t, b.Eng.DeleteAction(b.Ctx, "acme", "order"))
		require.ErrorIs(t, b.Eng.DeleteAction(b.Ctx, "acme", "order"), engine.ErrNotFound)
		_, err = b.Eng.GetAction(b.Ctx, "acme", "order")
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.GetAction(b.Ctx, "other", "order")
		require.NoError(t, err, "the other org's namesake stays")

		_, err = b.Eng.CreateAction(b.Ctx, "bad org!", validHTTP("x"))
		require.ErrorIs(t, err, engine.ErrInvalidOrg)
		_, err = b.Eng.LookupAction(b.Ctx, "", "x")
		require.ErrorIs(t, err, engine.ErrInvalidOrg)
	})
}

// actionReads is a store that counts the action reads made on it directly.
type actionReads struct {
	engine.Store
	n atomic.Int64
}

func (s *actionReads) GetAction(ctx context.Context, orgID, name string) (*svctype.Action, error) {
	s.n.Add(1)
	return s.Store.GetAction(ctx, orgID, name)
}

// TestLookupActionCache: lookups are served from the cache; a write through the engine is
// seen by its next lookup; a write by another engine (another process) is seen once the
// entry is ActionCacheTTL old, never later.
func TestLookupActionCache(t *testing.T) {
	t.Parallel()
	st := &actionReads{Store: store.OpenTest(t, "sqlite")}
	eng, err := engine.New(engine.Config{Store: st})
	require.NoError(t, err)
	other, err := engine.New(engine.Config{Store: st}) // a second process on the same database
	require.NoError(t, err)
	var mu sync.Mutex
	clock := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	actions.SetCacheClock(eng.Actions, now)
	ctx := context.Background()

	_, err = eng.LookupAction(ctx, "acme", "order")
	require.ErrorIs(t, err, engine.ErrNotFound)
	_, err = eng.CreateAction(ctx, "acme", validHTTP("order"))
	require.NoError(t, err)
	st.n.Store(0)

	for range 10 {
		a, err := eng.LookupAction(ctx, "acme", "order")
		require.NoError(t, err)
		require.Equal(t, "acme", a.OrgID)
		require.Equal(t, "https://api.example.com/orders/{{input.id}}", a.URL)
	}
	require.EqualValues(t, 1, st.n.Load(), "one read, then the cache")
	_, err = eng.LookupAction(ctx, "other-org", "order")
	require.ErrorIs(t, err, engine.ErrNotFound, "the cache is per organization")

	// A write through this engine is seen at once.
	repl := validHTTP("order")
	repl.URL = "https://api.example.com/v2/orders"
	_, err = eng.ReplaceAction(ctx, "acme", "order", repl)
	require.NoError(t, err)
	a, err := eng.LookupAction(ctx, "acme", "order")
	require.NoError(t, err)
	require.Equal(t, "https://api.example.com/v2/orders", a.URL)

	// Another process's write is seen when the entry expires.
	repl.URL = "https://api.example.com/v3/orders"
	_, err = other.ReplaceAction(ctx, "acme", "order", repl)
	require.NoError(t, err)
	a, err = eng.LookupAction(ctx, "acme", "order")
	require.NoError(t, err)
	require.Equal(t, "https://api.example.com/v2/orders", a.URL, "within the TTL the cached value may serve")
	advance(engine.ActionCacheTTL)
	a, err = eng.LookupAction(ctx, "acme", "order")
	require.NoError(t, err)
	require.Equal(t, "https://api.example.com/v3/orders", a.URL, "not past the TTL")

	require.NoError(t, other.DeleteAction(ctx, "acme", "order"))
	advance(engine.ActionCacheTTL)
	_, err = eng.LookupAction(ctx, "acme", "order")
	require.ErrorIs(t, err, engine.ErrNotFound, "a deletion elsewhere is seen within the TTL too")

	// A deletion here is seen at once.
	_, err = eng.CreateAction(ctx, "acme", validHTTP("gone"))
	require.NoError(t, err)
	_, err = eng.LookupAction(ctx, "acme", "gone")
	require.NoError(t, err)
	require.NoError(t, eng.DeleteAction(ctx, "acme", "gone"))
	_, err = eng.LookupAction(ctx, "acme", "gone")
	require.ErrorIs(t, err, engine.ErrNotFound)
}

// TestLookupActionConcurrent: lookups racing with writes through the same engine never keep
// a value older than the last write once the writes stop.
func TestLookupActionConcurrent(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	_, err := b.Eng.CreateAction(b.Ctx, "acme", validHTTP("order"))
	require.NoError(t, err)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := b.Eng.LookupAction(b.Ctx, "acme", "order"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var last string
	for i := range 50 {
		a := validHTTP("order")
		last = fmt.Sprintf("https://api.example.com/v%d", i)
		a.URL = last
		_, err := b.Eng.ReplaceAction(b.Ctx, "acme", "order", a)
		require.NoError(t, err)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	a, err := b.Eng.LookupAction(b.Ctx, "acme", "order")
	require.NoError(t, err)
	require.Equal(t, last, a.URL)
}
