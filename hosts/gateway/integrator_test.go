package gateway_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/gateway"
	"github.com/svcflow/svcflow/hosts/runtime"
)

// TestIntegratorOpenAPIUpToDate fails when a committed integrator document
// (openapi/integrator.yaml, 3.1, or openapi/integrator-3.0.yaml, its downgrade) differs
// from what the gateway's and the runtime's routes produce. UPDATE_OPENAPI=1 rewrites the
// files instead.
func TestIntegratorOpenAPIUpToDate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		gen  func(string) ([]byte, error)
	}{
		{filepath.Join("..", "..", "openapi", "integrator.yaml"), gateway.IntegratorYAML},
		{integrator30File, gateway.Integrator30YAML},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			t.Parallel()
			doc, err := tc.gen("dev")
			require.NoError(t, err)
			again, err := tc.gen("dev")
			require.NoError(t, err)
			require.Equal(t, string(doc), string(again), "the document must be deterministic")
			if os.Getenv("UPDATE_OPENAPI") == "1" {
				require.NoError(t, os.WriteFile(tc.file, doc, 0o644))
				return
			}
			committed, err := os.ReadFile(tc.file)
			if err != nil || !bytes.Equal(committed, doc) {
				t.Fatalf("%s is out of date with the routes: run `make openapi` "+
					"(or UPDATE_OPENAPI=1 go test ./hosts/gateway/ -run TestIntegratorOpenAPIUpToDate) and commit it (read error: %v)", tc.file, err)
			}
		})
	}
}

// TestIntegratorDocument: every runtime route is in the integrator's document as the
// gateway serves it (no X-Org-Id; the runtime key, or none on a public form), every
// operation names its credential, and every 429 declares Retry-After.
func TestIntegratorDocument(t *testing.T) {
	t.Parallel()
	doc, err := gateway.IntegratorOpenAPI("1.2.3")
	require.NoError(t, err)
	require.Equal(t, "1.2.3", doc.Info.Version)
	for _, name := range []string{gateway.SchemeRuntimeKey, gateway.SchemeManagement, gateway.SchemePublishable, gateway.SchemeSession, gateway.SchemeOperator} {
		require.Contains(t, doc.Components.SecuritySchemes, name)
	}

	rt := runtime.New(nil, runtime.Options{}).API().OpenAPI()
	for path, item := range rt.Paths {
		for method, op := range operationsOf(item) {
			got := operationsOf(doc.Paths[path])[method]
			require.NotNil(t, got, "%s %s is not in the integrator document", method, path)
			if op.OperationID != got.OperationID {
				continue // the gateway answers it itself (health, probes)
			}
			for _, p := range got.Parameters {
				require.NotEqual(t, runtime.OrgHeader, p.Name, "%s %s: the gateway sets X-Org-Id", method, path)
			}
			want := gateway.SchemeRuntimeKey
			if strings.HasPrefix(path, "/forms/public/") {
				want = gateway.SchemeSession // or none
			}
			require.Contains(t, schemesOf(got.Security), want, "%s %s", method, path)
			for _, status := range []string{"401", "403", "429", "502"} {
				require.Contains(t, got.Responses, status, "%s %s: the gateway may answer %s", method, path, status)
			}
		}
	}
	for path, item := range doc.Paths {
		for method, op := range operationsOf(item) {
			require.NotNil(t, op.Security, "%s %s declares no security: say which credential it takes (security: [] for none)", method, path)
			for _, p := range op.Parameters {
				require.NotEqual(t, "Authorization", p.Name, "%s %s: its security names the credential", method, path)
			}
			if r := op.Responses["429"]; r != nil {
				require.Contains(t, r.Headers, "Retry-After", "%s %s: a 429 says when to retry", method, path)
			}
		}
	}
}

func schemesOf(sec []map[string][]string) []string {
	var out []string
	for _, req := range sec {
		for name := range req {
			out = append(out, name)
		}
	}
	return out
}

func operationsOf(item *huma.PathItem) map[string]*huma.Operation {
	out := map[string]*huma.Operation{}
	if item == nil {
		return out
	}
	for m, op := range map[string]*huma.Operation{"GET": item.Get, "PUT": item.Put, "POST": item.Post, "DELETE": item.Delete, "PATCH": item.Patch} {
		if op != nil {
			out[m] = op
		}
	}
	return out
}
