package gateway_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/gateway"
	"github.com/svcflow/svcflow/hosts/runtime"
)

// runtimeRoute is one operation of the runtime's router.
type runtimeRoute struct {
	method, path, id string
	// org: the operation takes X-Org-Id.
	org bool
}

// runtimeRoutes lists the runtime's operations from its router, so that a test that walks
// them covers a new route without being edited.
func runtimeRoutes(t *testing.T) []runtimeRoute {
	t.Helper()
	var out []runtimeRoute
	for path, item := range runtime.New(nil, runtime.Options{}).API().OpenAPI().Paths {
		for method, op := range map[string]*huma.Operation{
			http.MethodGet: item.Get, http.MethodPost: item.Post, http.MethodPut: item.Put,
			http.MethodPatch: item.Patch, http.MethodDelete: item.Delete,
		} {
			if op == nil {
				continue
			}
			r := runtimeRoute{method: method, path: path, id: op.OperationID}
			for _, p := range op.Parameters {
				r.org = r.org || (p.In == "header" && p.Name == runtime.OrgHeader)
			}
			out = append(out, r)
		}
	}
	require.NotEmpty(t, out)
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// TestGatewayNeverForwardsAClientsOrganization walks every runtime route: called through
// the gateway with organization A's key, while the client names organization B in
// X-Org-Id (once, twice, comma-joined, in either order, in lower case) and claims a
// signed-in person in X-Svc-Identity, the runtime receives exactly one X-Org-Id, A's, and
// no identity (a public route receives no X-Org-Id but A's). Paths that climb out of the
// public form routes (../, %2e%2e) reach nothing with an organization either. Together
// with the runtime's own route walk (hosts/runtime TestTenancyFromRouteList: with A's
// X-Org-Id, B's resources are 404), no route lets a gateway client reach another
// organization.
func TestGatewayNeverForwardsAClientsOrganization(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{Rate: 1e6, Burst: 1e6})
	_, live, _ := b.signup(t, "a@platform.example", "cust-a")
	b.signup(t, "b@platform.example", "cust-b")

	spoofs := [][]string{
		{"X-Org-Id: cust-b"},
		{"X-Org-Id: cust-b", "X-Org-Id: cust-a"},
		{"X-Org-Id: cust-a", "X-Org-Id: cust-b"},
		{"X-Org-Id: cust-b,cust-a"},
		{"x-org-id: cust-b"},
	}
	sent := 0
	for _, r := range runtimeRoutes(t) {
		path := r.path
		for {
			i := strings.IndexByte(path, '{')
			if i < 0 {
				break
			}
			j := strings.IndexByte(path[i:], '}')
			path = path[:i] + "spoofed-id" + path[i+j+1:]
		}
		for _, spoof := range spoofs {
			headers := append([]string{"X-Svc-Identity: v1.forged.token"}, spoof...)
			body := ""
			if r.method != http.MethodGet && r.method != http.MethodDelete {
				body = `{}`
			}
			b.mu.Lock()
			before := len(b.reached)
			b.mu.Unlock()
			code, p, _ := b.callHeaders(t, r.method, path, live, body, headers...)
			sent++
			b.mu.Lock()
			reached := b.reached[before:]
			orgs := b.orgSeen[before:]
			ids := b.identitySeen[before:]
			b.mu.Unlock()
			if len(reached) == 0 && !r.org {
				continue // a public route the gateway answers itself (its probes)
			}
			require.Len(t, reached, 1, "%s %s %v: the gateway forwards each runtime route of an organization (answer %d %v)", r.method, path, spoof, code, p)
			if r.org || orgs[0] != "" {
				// A public route called with a key carries the key's organization,
				// which it does not read.
				require.Equal(t, "cust-a", orgs[0], "%s (%s %s) with %v", r.id, r.method, path, spoof)
			}
			require.Empty(t, ids[0], "%s: a client's X-Svc-Identity reached the runtime", r.id)
		}
	}
	require.Greater(t, sent, 100, "every route, every spoof")

	// Climbing out of the public form routes: no key, A's organization claimed.
	for _, path := range []string{"/forms/public/../workflows", "/forms/public/%2e%2e/workflows", "/forms/public/x/..%2f..%2fworkflows"} {
		b.mu.Lock()
		before := len(b.reached)
		b.mu.Unlock()
		code, p, _ := b.callHeaders(t, http.MethodGet, path, "", "", "X-Org-Id: cust-a")
		b.mu.Lock()
		orgs := b.orgSeen[before:]
		b.mu.Unlock()
		for _, o := range orgs {
			require.Empty(t, o, "%s reached the runtime with X-Org-Id %q", path, o)
		}
		require.NotEqual(t, http.StatusOK, code, "%s: %v", path, p)
	}
}

// callHeaders is call with headers sent as given: repeated names are sent repeatedly, a
// name in lower case in lower case.
func (b *bundle) callHeaders(t *testing.T, method, path, token, body string, headers ...string) (int, map[string]any, http.Header) {
	t.Helper()
	req := b.request(t, method, path, token, body)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header[k] = append(req.Header[k], v)
	}
	return b.send(t, req)
}
