package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/identity"
)

// TestPausesSurviveRestarts runs the real binary as a runtime and a worker process against
// one database. A run started by a signed-in person's submission to a public external form
// pauses at an approval; every process is stopped and new ones started; the approval and
// then the form pause are answered over HTTP, and the run completes with the person's data.
// A paused run is rows, not a goroutine.
func TestPausesSurviveRestarts(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	key := []byte("restart-test-identity-key-0123456789")
	env := append(os.Environ(), envIdentityKey+"="+base64.StdEncoding.EncodeToString(key))

	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			dsn := store.NewTestDSN(t, dialect)
			dir := t.TempDir() // the master key file of a SQLite database lives beside it
			start := func() (runtime, worker *process) {
				return startProcessEnv(t, bin, dir, env, "runtime", "--db", dsn, "--runtime-addr", "127.0.0.1:0"),
					startProcessEnv(t, bin, dir, env, "worker", "--db", dsn)
			}
			rt, wk := start()
			call := func(method, path, org, body string, headers ...string) (int, map[string]any) {
				t.Helper()
				req, err := http.NewRequest(method, rt.base+path, strings.NewReader(body))
				require.NoError(t, err)
				if org != "" {
					req.Header.Set("X-Org-Id", org)
				}
				req.Header.Set("Content-Type", "application/json")
				for _, h := range headers {
					name, value, _ := strings.Cut(h, ": ")
					req.Header.Set(name, value)
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				var m map[string]any
				_ = json.Unmarshal(b, &m)
				return resp.StatusCode, m
			}
			must := func(want int) func(int, map[string]any) map[string]any {
				return func(code int, m map[string]any) map[string]any {
					t.Helper()
					require.Equal(t, want, code, "%v", m)
					return m
				}
			}
			waitStatus := func(runID, want string) {
				t.Helper()
				require.Eventually(t, func() bool {
					_, doc := call("GET", "/runs/"+runID+"/status", "acme", "")
					return doc["status"] == want
				}, 20*time.Second, 20*time.Millisecond, "run %s never became %s", runID, want)
			}

			must(201)(call("POST", "/custom-tables", "acme", `{"name": "refunds", "fields": {"email": "text", "iban": "text", "who": "text"}}`))
			w := must(201)(call("POST", "/workflows", "acme", `{"name": "refund", "definition": {"actions": [
				{"type": "PbotApproval", "properties": {"approver_role": "finance", "comment": "Refund for {{input.email}}"}},
				{"type": "PbotForm", "properties": {"expected_keys": ["iban"], "ttl_seconds": 3600}},
				{"type": "custom-table", "properties": {"table": "refunds", "operation": "write",
					"fields": {"email": "@input.email", "iban": "@iban", "who": "@__submitted_by"}}}]}}`))
			f := must(201)(call("POST", "/external-forms", "acme", fmt.Sprintf(`{"name": "Refunds", "is_public": true,
				"trigger_workflow_id": %q, "settings": {"requireAuth": true},
				"schema": {"version": "form_schema_v1", "pages": [{"id": "p", "fields": [{"key": "email", "type": "email", "label": "Email", "required": true}]}]}}`, w["id"])))
			formID := f["id"].(string)

			must(401)(call("POST", "/forms/public/"+formID+"/submit", "", `{"email": "ada@example.com"}`))
			tok, err := identity.Sign(key, identity.Identity{Subject: "ada@example.com", OrgID: "acme", Expires: time.Now().Add(time.Minute)})
			require.NoError(t, err)
			sub := must(201)(call("POST", "/forms/public/"+formID+"/submit", "", `{"email": "ada@example.com"}`, identity.Header+": "+tok))
			runID := sub["triggered_run_id"].(string)
			waitStatus(runID, "paused")
			apr := must(200)(call("GET", "/approvals/"+runID, "acme", ""))
			require.Equal(t, "Refund for ada@example.com", apr["comment"])

			// Every process goes; new ones find the pause where it was.
			require.NoError(t, rt.stop())
			require.NoError(t, wk.stop())
			rt, _ = start()
			must(200)(call("POST", "/approvals/"+runID+"/0", "acme", `{"approved": true, "comment": "ok"}`))
			require.Eventually(t, func() bool {
				code, _ := call("GET", "/forms/"+runID+"/1", "acme", "")
				return code == 200
			}, 20*time.Second, 20*time.Millisecond)
			waitStatus(runID, "paused")
			must(200)(call("POST", "/forms/"+runID+"/1/submit", "acme", `{"data": {"iban": "DE02 1203"}}`))
			waitStatus(runID, "completed")
			rows := must(200)(call("GET", "/custom-tables/refunds/rows", "acme", ""))
			data := rows["items"].([]any)[0].(map[string]any)["data"].(map[string]any)
			require.Equal(t, map[string]any{"email": "ada@example.com", "iban": "DE02 1203", "who": "ada@example.com"}, data)
		})
	}
}
