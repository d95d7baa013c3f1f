package orgconfig_test

import (
	"context"
	"errors"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/fuzzbound"
)

// keyRule restates the documented key rule (docs/decisions.md, org config): 1-200
// characters of letters, digits and : _ - . /; the "/"-separated segments are checked
// on their own.
var keyRule = regexp.MustCompile(`^[A-Za-z0-9:_.\-/]{1,200}$`)

// FuzzOrgConfig drives org config keys and orgconfig: references through a real engine on
// SQLite. A key is stored exactly when the documented rule allows it, reads back its
// value, and is then a path segment no client normalises away; a refused key is a
// problem at /key that never quotes the value. orgconfig:<key> resolves to acme's value
// for acme's two keys and to ErrNoKey (a not found) for anything else, never to another
// organization's value, and no error carries a value.
//
//	go test ./engine/orgconfig -run '^$' -fuzz '^FuzzOrgConfig$' -fuzztime 30s
func FuzzOrgConfig(f *testing.F) {
	for _, seed := range []string{
		"api:crm", "db:erp", "api:llm_api_key", "a/b/c", "a//b", "/a", "a/", "a/./b", "a/../b", ".", "..",
		"...", "a.b", "API:CRM", "api:crm ", " api:crm", "api crm", "api:crm\n", "api:crm\x00", "é", "a%2fb",
		strings.Repeat("k", 200), strings.Repeat("k", 201), "", "orgconfig:api:crm", "api:rival",
	} {
		f.Add(seed)
	}
	values := map[string]string{"api:crm": "crm-secret-5f2b9c", "db:erp": "postgres://erp:hunter2@db/erp"}
	eng := enginetest.OrgConfigEngine(f, "acme", values)
	ctx := context.Background()
	const rivalValue = "rival-secret-88e1d0"
	for _, k := range []string{"api:crm", "api:rival"} {
		if _, _, err := eng.SetOrgConfig(ctx, "rival", k, rivalValue); err != nil {
			f.Fatal(err)
		}
	}
	noValue := func(t *testing.T, err error, plain ...string) {
		t.Helper()
		for _, p := range append(plain, rivalValue, values["api:crm"], values["db:erp"]) {
			if strings.Contains(err.Error(), p) {
				t.Fatalf("an error carries a value: %v", err)
			}
		}
	}

	f.Fuzz(func(t *testing.T, k string) {
		// The key as a key of its own, in an organization of its own.
		const value = "fuzz-value-0c41"
		var err error
		fuzzbound.Within(t, "SetOrgConfig", func() { _, _, err = eng.SetOrgConfig(ctx, "fuzz", k, value) })
		allowed := keyRule.MatchString(k)
		for _, seg := range strings.Split(k, "/") {
			allowed = allowed && seg != "" && seg != "." && seg != ".."
		}
		switch {
		case allowed && err != nil:
			t.Fatalf("key %q follows the rule but was refused: %v", k, err)
		case !allowed && err == nil:
			t.Fatalf("key %q breaks the rule but was stored", k)
		case err != nil:
			var ve *core.ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Pointer != "/key" {
				t.Fatalf("refusing key %q: %v, want one problem at /key", k, err)
			}
			noValue(t, err, value)
		default:
			if clean := path.Clean("/org-config/" + k); clean != "/org-config/"+k {
				t.Fatalf("stored key %q is normalised to %q as a path", k, clean)
			}
			var got string
			fuzzbound.Within(t, "OrgConfigValue", func() { got, err = eng.OrgConfigValue(ctx, "fuzz", k) })
			if err != nil || got != value {
				t.Fatalf("key %q reads back %q, %v", k, got, err)
			}
			if err := eng.DeleteOrgConfig(ctx, "fuzz", k); err != nil {
				t.Fatalf("deleting key %q: %v", k, err)
			}
		}

		// The key in a reference, and the input as a reference.
		for _, ref := range []string{"orgconfig:" + k, k} {
			var got string
			fuzzbound.Within(t, "ResolveOrgConfig", func() { got, err = eng.ResolveOrgConfig(ctx, "acme", ref) })
			name, isRef := strings.CutPrefix(ref, "orgconfig:")
			want, known := values[name]
			switch {
			case !isRef:
				if err != nil || got != ref {
					t.Fatalf("%q is no reference, yet resolved to %q, %v", ref, got, err)
				}
			case known:
				if err != nil || got != want {
					t.Fatalf("%q resolved to %q, %v; want acme's value", ref, got, err)
				}
			default:
				if !errors.Is(err, svctype.ErrNotFound) {
					t.Fatalf("%q resolved to %q, %v; want ErrNoKey", ref, got, err)
				}
				noValue(t, err)
				if len(err.Error()) > 1024 {
					t.Fatalf("the error for a %d-byte reference is %d bytes: it echoes the input", len(ref), len(err.Error()))
				}
			}
		}
	})
}
