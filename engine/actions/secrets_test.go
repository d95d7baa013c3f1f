package actions_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/testlog"
)

// Secrets too short for the old 6-byte floor: each is sent in a header and echoed back by
// the target in a 500 body, as "name=value;" so that the test can look for it exactly.
var shortSecrets = map[string]string{"key": "k3Y9z", "pin": "7z", "tag": "q"}

// TestHTTPActionRedactsShortSecretsFromAnswers: whatever its length, no org config value
// the request carried is in the run's reason, events, evidence or the log when the target
// echoes it in an error answer (Everything JSON-escapes quotes, hence the "name=value;"
// shape); on SQLite and PostgreSQL.
func TestHTTPActionRedactsShortSecretsFromAnswers(t *testing.T) {
	t.Parallel()
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := actionSetup(t, d, true)
			srv, seen := recordingServer(t, func(w http.ResponseWriter) {})
			srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = fmt.Fprintf(w, "refused: key=%s; pin=%s; tag=%s; a quick note",
					r.Header.Get("X-Api-Key"), r.Header.Get("X-Pin"), r.Header.Get("X-Tag"))
			})
			for name, v := range shortSecrets {
				b.Config(t, "org-a", "api:"+name, v)
			}
			b.Action(t, "org-a", svctype.Action{Name: "echo", Kind: svctype.ActionHTTP, URL: srv.URL + "/echo", HTTPMethod: "POST",
				Headers: map[string]string{"X-Api-Key": "orgconfig:api:key", "X-Pin": "orgconfig:api:pin", "X-Tag": "Tag orgconfig:api:tag"}})
			w := b.Workflow(t, "org-a", "echo", `{"actions": [{"type": "echo", "properties": {}}]}`)
			doc := b.Execute(t, "org-a", w.ID, `{}`)
			require.Equal(t, svctype.RunFailed, doc.Status)
			require.Empty(t, seen(), "the recording handler was replaced")
			// POST: a 500 is not retried, so the test waits for no backoff.
			require.Contains(t, doc.Reason, "refused: key=[redacted]; pin=[redacted]; tag=Tag [redacted]; a quick note",
				"each secret is blanked as a whole token; the letter q inside \"quick\" is left alone")

			all := b.Everything(t, "org-a", doc.ID)
			require.NotContains(t, all, shortSecrets["key"])
			for name, v := range shortSecrets {
				require.NotContains(t, all, name+"="+v)
			}
		})
	}
}

// TestHTTPActionNamesAnOrgConfigURLNeverItsValue: an org config value used as an action's
// URL that is not a usable URL fails the run naming the key; its text (the part before
// the first ':' of a value that is no URL, the host of an ftp:// one) is in none of the
// run's reason, events, evidence or the log. On SQLite and PostgreSQL.
func TestHTTPActionNamesAnOrgConfigURLNeverItsValue(t *testing.T) {
	t.Parallel()
	values := []struct {
		name, value string
		hidden      []string
	}{
		{"not a URL", "secrettoken123:xyz", []string{"secrettoken123"}},
		{"ftp", "ftp://internal-host.example/x", []string{"internal-host.example", "ftp"}},
		{"refused address", "http://10.11.12.13:8080/x", []string{"10.11.12.13"}},
		{"GET query", "http://[::1:bad/x", []string{"::1:bad"}},
	}
	for _, v := range values {
		for _, h := range v.hidden {
			testlog.Secret(h)
		}
	}
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := actionSetup(t, d, false)
			for i, v := range values {
				name := fmt.Sprintf("target-%d", i)
				b.Config(t, "org-a", "api:target", v.value)
				method := "POST"
				if v.name == "GET query" {
					method = "GET"
				}
				b.Action(t, "org-a", svctype.Action{Name: name, Kind: svctype.ActionHTTP, URL: "orgconfig:api:target", HTTPMethod: method})
				w := b.Workflow(t, "org-a", name, `{"actions": [{"type": "`+name+`", "properties": {"q": "x"}}]}`)
				doc := b.Execute(t, "org-a", w.ID, `{}`)
				require.Equal(t, svctype.RunFailed, doc.Status, v.name)
				require.Contains(t, doc.Reason, "orgconfig:api:target", v.name)
				all := b.Everything(t, "org-a", doc.ID)
				for _, h := range v.hidden {
					require.NotContains(t, strings.ToLower(all), strings.ToLower(h), v.name)
				}
			}
		})
	}
}

// TestLLMActionNamesTheBaseURLKey: an api:llm_base_url that is not a URL fails an llm
// action naming the key, never quoting the value. On SQLite and PostgreSQL.
func TestLLMActionNamesTheBaseURLKey(t *testing.T) {
	t.Parallel()
	testlog.Secret("secrettoken123")
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := actionSetup(t, d, false)
			b.Config(t, "org-a", "api:llm_api_key", llmAPIKeyValue)
			b.Config(t, "org-a", "api:llm_base_url", "secrettoken123:xyz")
			b.Action(t, "org-a", svctype.Action{Name: "summarise", Kind: svctype.ActionLLM, Template: "Summarise {{input.text}}"})
			w := b.Workflow(t, "org-a", "llm", `{"actions": [{"type": "summarise", "properties": {}}]}`)
			doc := b.Execute(t, "org-a", w.ID, `{"text": "hello"}`)
			require.Equal(t, svctype.RunFailed, doc.Status)
			require.Contains(t, doc.Reason, "org config api:llm_base_url: llm: base URL is not an http(s) URL")
			all := b.Everything(t, "org-a", doc.ID)
			require.NotContains(t, all, "secrettoken123")
			require.NotContains(t, all, llmAPIKeyValue)
		})
	}
}
