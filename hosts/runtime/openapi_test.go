package runtime_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/runtime"
)

// The committed documents; `make openapi` regenerates them.
var (
	openapiFile   = filepath.Join("..", "..", "openapi", "openapi.yaml")
	openapi30File = filepath.Join("..", "..", "openapi", "openapi-3.0.yaml")
)

// TestOpenAPIUpToDate fails when a committed document (openapi/openapi.yaml, the 3.1
// contract, or openapi/openapi-3.0.yaml, Huma's 3.0 downgrade of it) differs from what the
// routes produce. UPDATE_OPENAPI=1 rewrites the files instead.
func TestOpenAPIUpToDate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		gen  func(string) ([]byte, error)
	}{
		{openapiFile, runtime.OpenAPIYAML},
		{openapi30File, runtime.OpenAPI30YAML},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			t.Parallel()
			doc, err := tc.gen("dev")
			require.NoError(t, err)
			again, err := tc.gen("dev")
			require.NoError(t, err)
			require.Equal(t, string(doc), string(again), "the document must be deterministic")

			if os.Getenv("UPDATE_OPENAPI") == "1" {
				require.NoError(t, os.MkdirAll(filepath.Dir(tc.file), 0o755))
				require.NoError(t, os.WriteFile(tc.file, doc, 0o644))
				return
			}
			committed, err := os.ReadFile(tc.file)
			if err != nil || !bytes.Equal(committed, doc) {
				t.Fatalf("%s is out of date with the routes: run `make openapi` "+
					"(or UPDATE_OPENAPI=1 go test ./hosts/runtime/ -run TestOpenAPIUpToDate) and commit it (read error: %v)", tc.file, err)
			}
		})
	}
}

func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	doc, err := runtime.OpenAPIYAML("1.2.3")
	require.NoError(t, err)
	s := string(doc)
	require.Contains(t, s, "openapi: 3.1.0")
	require.Contains(t, s, "title: svcflow runtime")
	require.Contains(t, s, "version: 1.2.3")
	require.Contains(t, s, "application/problem+json")

	doc30, err := runtime.OpenAPI30YAML("1.2.3")
	require.NoError(t, err)
	s = string(doc30)
	require.Contains(t, s, "openapi: 3.0.3")
	require.Contains(t, s, "version: 1.2.3")
	require.Contains(t, s, "nullable: true", "3.1's type: [T, \"null\"] becomes nullable")
	require.NotContains(t, s, `- "null"`, "3.0 has no null type")
	require.NotContains(t, s, "contentMediaType", "a JSON Schema keyword of 3.1")
	require.NotContains(t, s, "contentEncoding", "a JSON Schema keyword of 3.1")
	// examples/client's test validates the whole 3.0 document with kin-openapi, which also
	// refuses a $ref with siblings.
}

// The runtime serves the documents it is generated to: /openapi-3.0.yaml is the finished
// downgrade, not Huma's own (which keeps a $ref's siblings and 3.1's contentMediaType).
func TestServedOpenAPIDocuments(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for path, want := range map[string]func(string) ([]byte, error){
		"/openapi.yaml":     runtime.OpenAPIYAML,
		"/openapi-3.0.yaml": runtime.OpenAPI30YAML,
	} {
		doc, err := want("test")
		require.NoError(t, err)
		rec := b.do(t, http.MethodGet, path, "", nil)
		require.Equal(t, http.StatusOK, rec.Code, path)
		require.Equal(t, "application/openapi+yaml", rec.Header().Get("Content-Type"), path)
		require.Equal(t, string(doc), rec.Body.String(), path)
	}
	rec := b.do(t, http.MethodGet, "/openapi-3.0.json", "", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	require.Equal(t, "3.0.3", doc["openapi"])
	require.NotContains(t, rec.Body.String(), "contentMediaType")
}

// TestSchemaNamesAreIdentifiers: every component schema is named by a Go type of the
// runtime. An anonymous body would be named by Huma after its operation
// ("Get-agent-traceResponse"), which client generators turn into the name of their own
// per-operation response type, and the generated client does not compile.
func TestSchemaNamesAreIdentifiers(t *testing.T) {
	t.Parallel()
	api := runtime.New(nil, runtime.Options{}).API()
	ident := regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	for name := range api.OpenAPI().Components.Schemas.Map() {
		require.Regexp(t, ident, name, "schema %q: give the body a named type", name)
	}
}
