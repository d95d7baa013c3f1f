package uploads_test

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/fuzzbound"
)

// FuzzDocReference resolves doc: tokens through the run core's evaluator, as a step's
// properties are, against a real engine on SQLite holding one document of two versions
// for acme and one for another organization. "{mine}" and "{theirs}" in the input stand
// for the two documents' ids. A token resolves exactly when it names acme's document and
// no version or version 1 or 2 (decimal digits only), to that version's rows; anything
// else is an error, never another organization's rows, and every call returns within
// fuzzbound.Bound.
//
//	go test ./engine/docs -run '^$' -fuzz '^FuzzDocReference$' -fuzztime 30s
func FuzzDocReference(f *testing.F) {
	for _, seed := range []string{
		"doc:{mine}", "doc:{mine}@1", "doc:{mine}@2", "doc:{mine}@3", "doc:{mine}@0", "doc:{mine}@01",
		"doc:{mine}@+1", "doc:{mine}@-1", "doc:{mine}@1@2", "doc:{mine}@", "doc:{mine}@1 ", "doc:{mine}@١",
		"doc:{mine}@99999999999999999999", "doc:{mine}@18446744073709551617", "doc: {mine}", "doc:{mine}{{x}}",
		"doc:{theirs}", "doc:{theirs}@1", "doc:", "doc:@1", "doc:doc_nope", "doc:../../etc/passwd",
		"doc:doc:{mine}", "DOC:{mine}", "@input.doc", "{{doc}}", "orgconfig:x", "",
	} {
		f.Add(seed)
	}
	st := store.OpenTest(f, "sqlite")
	eng, err := engine.New(engine.Config{Store: st})
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	upload := func(org, name, contentType, content string) string {
		d, err := eng.UploadDocument(ctx, org, engine.DocumentUpload{Name: name, ContentType: contentType, Content: []byte(content)})
		if err != nil {
			f.Fatal(err)
		}
		return d.ID
	}
	mine := upload("acme", "rows.csv", "text/csv", "n\n1\n")
	if _, err := eng.AddDocumentVersion(ctx, "acme", mine, []byte(`[{"n": 2}]`), "application/json"); err != nil {
		f.Fatal(err)
	}
	theirs := upload("rival", "theirs.csv", "text/csv", "n\nrival\n")
	versions := map[uint64][]any{
		1: {map[string]any{"n": 1.0}},
		2: {map[string]any{"n": 2.0}},
	}
	acme := svctype.WithOrg(ctx, "acme")
	eval := eng.Evaluator()

	f.Fuzz(func(t *testing.T, token string) {
		token = strings.NewReplacer("{mine}", mine, "{theirs}", theirs).Replace(token)
		var got any
		var err error
		fuzzbound.Within(t, "Resolve", func() { got, err = eval.Resolve(acme, token, nil) })

		ref, isDoc := strings.CutPrefix(token, "doc:")
		if !isDoc {
			if err != nil {
				t.Fatalf("%q is no doc: token, yet resolving it failed: %v", token, err)
			}
			return
		}
		var want []any
		if id, ver, versioned := strings.Cut(ref, "@"); id == mine {
			switch n, perr := strconv.ParseUint(ver, 10, 64); {
			case !versioned:
				want = versions[2]
			case perr == nil:
				want = versions[n]
			}
		}
		if want == nil {
			if err == nil {
				t.Fatalf("%q resolved to %v; want an error", token, got)
			}
			if strings.Contains(err.Error(), "rival") {
				t.Fatalf("the error for %q shows another organization's content: %v", token, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q did not resolve: %v", token, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q resolved to %v; want %v", token, got, want)
		}
	})
}
