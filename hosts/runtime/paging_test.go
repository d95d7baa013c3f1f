package runtime_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/runtime"
)

// listRoutes are the operations whose 200 answer is a list (DESIGN.md, "lists"): a GET whose
// response body schema has both items and next_cursor. Found from the router's own route
// list, so a list route added tomorrow is in it without anyone editing this file; a GET
// answering something else (a run's status, a context value paged by offset) is not.
func listRoutes(api huma.API) []routeOp {
	var out []routeOp
	for _, ro := range routeOps(api) {
		if ro.method != http.MethodGet {
			continue
		}
		s := responseSchema(api, ro.op, "200")
		if s == nil {
			continue
		}
		_, items := s.Properties["items"]
		_, next := s.Properties["next_cursor"]
		if items && next {
			out = append(out, ro)
		}
	}
	return out
}

// responseSchema is the JSON schema of an operation's answer for status, $ref resolved.
func responseSchema(api huma.API, o *huma.Operation, status string) *huma.Schema {
	resp := o.Responses[status]
	if resp == nil {
		return nil
	}
	mt := resp.Content["application/json"]
	if mt == nil || mt.Schema == nil {
		return nil
	}
	s := mt.Schema
	if s.Ref != "" {
		s = api.OpenAPI().Components.Schemas.SchemaFromRef(s.Ref)
	}
	return s
}

func queryParam(o *huma.Operation, name string) *huma.Param {
	for _, p := range o.Parameters {
		if p.In == "query" && p.Name == name {
			return p
		}
	}
	return nil
}

// TestListRoutesPage walks every list route of the router: each declares ?limit= (default
// 50, at most 500) and ?cursor=, hands back a cursor that opens the next page, and answers a
// cursor it never issued with 400 and a problem code.
func TestListRoutesPage(t *testing.T) {
	t.Parallel()
	api := runtime.New(nil, runtime.Options{}).API()
	lists := listRoutes(api)
	found := map[string]bool{}
	for _, ro := range lists {
		found[ro.op.OperationID] = true
	}
	// The detector itself must see the lists that exist today.
	for _, id := range []string{"list-workflows", "list-runs", "list-custom-tables", "read-custom-table-rows", "list-actions", "list-oauth-connections", "list-webhooks", "list-webhook-deliveries"} {
		require.True(t, found[id], "%s is a list route but the schema detector missed it", id)
	}

	b := setup(t)
	fx := buildTenancyFixture(t, b)
	for _, ro := range lists {
		t.Run(ro.op.OperationID, func(t *testing.T) {
			limit := queryParam(ro.op, "limit")
			require.NotNil(t, limit, "%s %s answers {items, next_cursor} but declares no ?limit=", ro.method, ro.path)
			require.NotNil(t, limit.Schema)
			require.EqualValues(t, 50, limit.Schema.Default, "?limit= defaults to 50")
			require.NotNil(t, limit.Schema.Maximum)
			require.Equal(t, float64(500), *limit.Schema.Maximum, "?limit= is at most 500")
			require.NotNil(t, queryParam(ro.op, "cursor"), "%s %s answers {items, next_cursor} but declares no ?cursor=", ro.method, ro.path)

			path := ro.path
			for _, p := range ro.op.Parameters {
				if p.In != "path" {
					continue
				}
				v, ok := fx.pathValue(p.Name)
				require.True(t, ok, "no fixture value for path parameter {%s} of %s", p.Name, ro.path)
				path = strings.ReplaceAll(path, "{"+p.Name+"}", v)
			}

			// A cursor it issued opens the next page.
			first := ok[list[json.RawMessage]](t, b.do(t, http.MethodGet, path+"?limit=1", orgA, nil), http.StatusOK)
			if first.NextCursor != "" {
				ok[list[json.RawMessage]](t, b.do(t, http.MethodGet, path+"?limit=1&cursor="+url.QueryEscape(first.NextCursor), orgA, nil), http.StatusOK)
			}

			// One it never issued is the caller's mistake: 400, with a code to switch on.
			for _, bogus := range []string{"bogus", "%%%", strings.Repeat("A", 2000)} {
				p := problem(t, b.do(t, http.MethodGet, path+"?cursor="+url.QueryEscape(bogus), orgA, nil), http.StatusBadRequest, "invalid_cursor")
				require.NotEmpty(t, p.Errors)
				require.Equal(t, "query.cursor", p.Errors[0].Location)
			}
		})
	}
}
