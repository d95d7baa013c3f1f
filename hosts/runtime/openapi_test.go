package runtime_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/runtime"
)

// openapiFile is the committed document; `make openapi` regenerates it.
var openapiFile = filepath.Join("..", "..", "openapi", "openapi.yaml")

// TestOpenAPIUpToDate fails when the committed openapi/openapi.yaml differs from what the
// routes produce. UPDATE_OPENAPI=1 rewrites the file instead.
func TestOpenAPIUpToDate(t *testing.T) {
	t.Parallel()
	doc, err := runtime.OpenAPIYAML("dev")
	require.NoError(t, err)
	again, err := runtime.OpenAPIYAML("dev")
	require.NoError(t, err)
	require.Equal(t, string(doc), string(again), "the document must be deterministic")

	if os.Getenv("UPDATE_OPENAPI") == "1" {
		require.NoError(t, os.MkdirAll(filepath.Dir(openapiFile), 0o755))
		require.NoError(t, os.WriteFile(openapiFile, doc, 0o644))
		return
	}
	committed, err := os.ReadFile(openapiFile)
	if err != nil || !bytes.Equal(committed, doc) {
		t.Fatalf("openapi/openapi.yaml is out of date with the routes: run `make openapi` "+
			"(or UPDATE_OPENAPI=1 go test ./hosts/runtime/ -run TestOpenAPIUpToDate) and commit it (read error: %v)", err)
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
}

// TestRunStatusFilterKnowsEveryStatus reads the RunStatus constants from svctype's source
// and checks that GET /runs?status= accepts every one of them.
func TestRunStatusFilterKnowsEveryStatus(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "engine", "svctype")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var statuses []string
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".go" || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			gd, isGen := decl.(*ast.GenDecl)
			if !isGen || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, isIdent := vs.Type.(*ast.Ident); !isIdent || id.Name != "RunStatus" {
					continue
				}
				for _, v := range vs.Values {
					lit, isLit := v.(*ast.BasicLit)
					require.True(t, isLit, "RunStatus constants are string literals")
					s, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					statuses = append(statuses, s)
				}
			}
		}
	}
	require.NotEmpty(t, statuses)

	api := runtime.New(nil, runtime.Options{}).API()
	var enum []any
	for _, p := range api.OpenAPI().Paths["/runs"].Get.Parameters {
		if p.Name == "status" {
			enum = p.Schema.Enum
		}
	}
	for _, s := range statuses {
		require.Contains(t, enum, s, "GET /runs?status= does not accept run status %q", s)
	}
	require.Len(t, enum, len(statuses))
}
