package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/store"
)

// TestDocumentsAsFilesAcrossProcesses: a runtime and a worker started with the same
// --documents-dir keep document content as files there, not in the database: the runtime
// writes the upload, the worker reads it for a doc: reference. --max-document-mib sets the
// upload limit: one byte past it is 413 naming it, and writes no file.
func TestDocumentsAsFilesAcrossProcesses(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dsn := store.NewTestDSN(t, "sqlite")
	docs := filepath.Join(t.TempDir(), "documents")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"migrate", "--db", dsn}, &out, &errOut), errOut.String())
	base := startProcess(t, bin, "", "runtime", "--db", dsn, "--runtime-addr", "127.0.0.1:0",
		"--documents-dir", docs, "--max-document-mib", "1").base
	startProcess(t, bin, "", "worker", "--db", dsn, "--documents-dir", docs)

	call := func(method, path, contentType string, body []byte) (int, map[string]any) {
		t.Helper()
		return orgCall(t, base, "acme", method, path, contentType, body)
	}
	upload := func(name string, content []byte) (int, map[string]any) {
		t.Helper()
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		fw, err := mw.CreateFormFile("file", name)
		require.NoError(t, err)
		_, err = fw.Write(content)
		require.NoError(t, err)
		require.NoError(t, mw.Close())
		return call(http.MethodPost, "/documents", mw.FormDataContentType(), body.Bytes())
	}
	files := func() map[string][]byte {
		t.Helper()
		found := map[string][]byte{}
		err := filepath.WalkDir(docs, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			found[path] = b
			return err
		})
		require.NoError(t, err)
		return found
	}

	var csv strings.Builder
	csv.WriteString("id,amount\n")
	for i := range 20 {
		fmt.Fprintf(&csv, "R-%d,%d.50\n", i, i)
	}
	code, doc := upload("ledger.csv", []byte(csv.String()))
	require.Equal(t, http.StatusCreated, code, "%v", doc)
	stored := files()
	require.Len(t, stored, 1, "the content is a file under --documents-dir")
	for _, b := range stored {
		require.Equal(t, csv.String(), string(b))
	}

	def := fmt.Sprintf(`{"name": "self-match", "definition": {"actions": [{"type": "matcher", "properties": {
		"left": "doc:%[1]s", "right": "doc:%[1]s", "matchOn": ["id"], "tolerance": 0,
		"outputMatched": "matched", "outputUnmatchedLeft": "ul", "outputUnmatchedRight": "ur"}}]}}`, doc["id"])
	code, w := call(http.MethodPost, "/workflows", "application/json", []byte(def))
	require.Equal(t, http.StatusCreated, code, "%v", w)
	code, runDoc := call(http.MethodPost, fmt.Sprintf("/workflows/%s/execute?wait=30s", w["id"]), "application/json", []byte(`{"input": {}}`))
	require.Equal(t, http.StatusOK, code, "%v", runDoc)
	require.Equal(t, "completed", runDoc["status"], "%v", runDoc)
	ctx, _ := runDoc["context"].(map[string]any)
	matched, _ := ctx["matched"].([]any)
	require.Len(t, matched, 20, "the worker read the file the runtime wrote: %v", runDoc)

	// The limit is --max-document-mib's: 1 MiB is taken, one byte more is not.
	code, _ = upload("exactly.bin", bytes.Repeat([]byte("x"), 1<<20))
	require.Equal(t, http.StatusCreated, code)
	code, p := upload("over.bin", bytes.Repeat([]byte("x"), 1<<20+1))
	require.Equal(t, http.StatusRequestEntityTooLarge, code, "%v", p)
	require.Equal(t, "body_too_large", p["code"])
	require.Contains(t, p["detail"], "1 MiB")
	require.Len(t, files(), 2, "a refused upload writes no file")
}
