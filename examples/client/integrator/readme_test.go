package integrator_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeShowsTheExample: README.md's Go client example is example_test.go's, which the
// compiler checks.
func TestReadmeShowsTheExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	require.NoError(t, err)
	shown := regexp.MustCompile("(?s)```go\nimport \"github.com/svcflow/svcflow/examples/client/integrator\"\n\n(.*?)```").FindSubmatch(readme)
	require.NotNil(t, shown, "README.md has no Go example importing examples/client/integrator")
	example, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	kept := regexp.MustCompile(`(?s)// README begin\n(.*?)\s*// README end`).FindSubmatch(example)
	require.NotNil(t, kept)
	lines := strings.Split(string(kept[1]), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "\t")
	}
	require.Equal(t, strings.TrimSpace(string(shown[1])), strings.TrimSpace(strings.Join(lines, "\n")))
}
