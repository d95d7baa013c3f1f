package actions_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/svcflow/svcflow/engine/actions"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/fuzzbound"
)

// FuzzActionReferences holds the two readers of orgconfig: in an action to each other: the
// check when an action is registered (CheckAction) and the run that resolves its headers
// (secretValue), over a real engine on SQLite. A header value is a reference when it
// starts with orgconfig:, or has one after a space ("Bearer orgconfig:api:crm"); the run
// asks org config for exactly that key and puts its value in place. Whatever the check
// accepts (as a header, a URL or a datasource), the run asks only for keys that can
// exist: non-empty, without white space.
//
//	go test ./engine/actions -run '^$' -fuzz '^FuzzActionReferences$' -fuzztime 30s
func FuzzActionReferences(f *testing.F) {
	for _, seed := range []string{
		"orgconfig:api:crm", "Bearer orgconfig:api:crm", "Bearer  orgconfig:api:crm", "orgconfig:", "Bearer orgconfig:",
		"Bearer orgconfig:api crm", "Bearer orgconfig:api:crm\t", "a orgconfig:b orgconfig:api:crm", "orgconfig:db:erp",
		"orgconfig:db:", "Bearer orgconfig:db:erp", "plain", "", "orgconfig", " orgconfig:api:crm", "Token {{input.t}}",
		"orgconfig:orgconfig:api:crm", "https://api.example.com/{{input.id}}",
	} {
		f.Add(seed)
	}
	values := map[string]string{"api:crm": "crm-secret-5f2b9c", "db:erp": "postgres://erp:hunter2@db/erp"}
	eng := enginetest.OrgConfigEngine(f, "acme", values)
	ctx := context.Background()

	f.Fuzz(func(t *testing.T, v string) {
		var asked []string
		call := &svctype.StepCall{Secret: func(ctx context.Context, key string) (string, error) {
			asked = append(asked, key)
			return eng.OrgConfigValue(ctx, "acme", key)
		}}
		var got string
		var err error
		fuzzbound.Within(t, "secretValue", func() { got, _, err = actions.SecretValue(ctx, call, v) })

		// What the run asks for, and what it makes of the answer.
		var prefix, key string
		isRef := true
		if k, ok := strings.CutPrefix(v, "orgconfig:"); ok {
			key = k
		} else if i := strings.Index(v, " orgconfig:"); i >= 0 {
			prefix, key = v[:i+1], v[i+len(" orgconfig:"):]
		} else {
			isRef = false
		}
		switch value, known := values[key]; {
		case !isRef:
			if len(asked) != 0 || err != nil || got != v {
				t.Fatalf("%q holds no reference, yet the run asked for %q and made %q, %v", v, asked, got, err)
			}
			return
		case len(asked) != 1 || asked[0] != key:
			t.Fatalf("%q: the run asked for %q, want [%q]", v, asked, key)
		case known:
			if err != nil || got != prefix+value {
				t.Fatalf("%q resolved to %q, %v; want %q", v, got, err, prefix+value)
			}
		case !errors.Is(err, svctype.ErrNotFound):
			t.Fatalf("%q resolved to %q, %v; want a not-found", v, got, err)
		case strings.Contains(err.Error(), values["api:crm"]) || strings.Contains(err.Error(), values["db:erp"]):
			t.Fatalf("an error carries a value: %v", err)
		}

		// A registration the check accepts never makes the run ask for a key that cannot be.
		possible := key != "" && !strings.ContainsAny(key, " \t\r\n")
		for field, a := range map[string]svctype.Action{
			"header":     {Name: "h", Kind: svctype.ActionHTTP, URL: "https://api.example.com/x", HTTPMethod: "POST", Headers: map[string]string{"Authorization": v}},
			"url":        {Name: "u", Kind: svctype.ActionHTTP, URL: v, HTTPMethod: "POST"},
			"datasource": {Name: "d", Kind: svctype.ActionDB, Datasource: v, Query: "SELECT 1"},
		} {
			if _, err := eng.CheckAction(a); err == nil && !possible && (field == "header" || strings.HasPrefix(v, "orgconfig:")) {
				t.Fatalf("the %s %q is accepted, but the run would ask for the key %q", field, v, key)
			}
		}
	})
}
