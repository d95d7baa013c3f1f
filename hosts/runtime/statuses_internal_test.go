package runtime

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// constantsByType reads the string constants of the Go files in dir (tests aside), by the
// name of their type.
func constantsByType(t *testing.T, dir string) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string][]string{}
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
				id, isIdent := vs.Type.(*ast.Ident)
				if !isIdent {
					continue
				}
				for _, v := range vs.Values {
					if lit, isLit := v.(*ast.BasicLit); isLit && lit.Kind == token.STRING {
						s, err := strconv.Unquote(lit.Value)
						require.NoError(t, err)
						out[id.Name] = append(out[id.Name], s)
					}
				}
			}
		}
	}
	return out
}

// TestStatusSetsKnowEveryValue reads the status constants from the source (svctype's, and
// the agent package's Status, which hosts do not import) and checks that each set of the
// contract holds exactly them: a status added to the engine cannot be missing from the
// enum that every answer and filter of it declares.
func TestStatusSetsKnowEveryValue(t *testing.T) {
	t.Parallel()
	consts := constantsByType(t, filepath.Join("..", "..", "engine", "svctype"))
	consts["AgentStatus"] = constantsByType(t, filepath.Join("..", "..", "agent"))["Status"]
	require.Len(t, StatusSets, 9)
	for _, set := range StatusSets {
		values := consts[set.goType.Name()]
		require.NotEmpty(t, values, "no constants of %s", set.goType)
		require.ElementsMatch(t, values, set.Values, "the set %s is not %s's constants", set.Name, set.goType)
	}
}
