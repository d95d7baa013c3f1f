package gateway_test

import (
	"crypto/ed25519"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/gateway"
	"github.com/svcflow/svcflow/hosts/license"
)

const operatorToken = "the-operator-token-of-these-tests"

// TestOperatorAdministersTiersAndAccounts: tiers set each key's rate limit, a daily run
// quota and the features open; suspending an account stops its token and keys, resuming
// restores them; usage is summed per account.
func TestOperatorAdministersTiersAndAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{OperatorToken: operatorToken})
	mgmt, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	_, liveB, _ := b.signup(t, "other@platform.example", "cust-b")
	op := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		code, p, _ := b.call(t, method, path, operatorToken, body)
		return code, p
	}

	code, p, _ := b.call(t, "GET", "/admin/accounts", "", "")
	require.Equal(t, http.StatusUnauthorized, code)
	code, p, _ = b.call(t, "GET", "/admin/accounts", mgmt, "")
	require.Equal(t, http.StatusUnauthorized, code, "a management token is not the operator's")
	require.Equal(t, "unknown_operator_token", p["code"])
	code, p = op("GET", "/admin/accounts", "")
	require.Equal(t, http.StatusOK, code, p)
	accounts := p["items"].([]any)
	require.Len(t, accounts, 2)
	acct := ""
	for _, a := range accounts {
		if a.(map[string]any)["email"] == "ops@platform.example" {
			acct = a.(map[string]any)["id"].(string)
		}
	}
	require.NotEmpty(t, acct)

	code, p = op("PUT", "/admin/accounts/"+acct+"/tier", `{"tier": "nope"}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, "no such tier")
	code, p = op("PUT", "/admin/tiers/starter", `{"rate": 0.001, "burst": 3, "runs_per_day": 1, "features": ["agent_forms"]}`)
	require.Equal(t, http.StatusOK, code, p)
	code, p = op("PUT", "/admin/tiers/Bad Name", `{"rate": 1, "burst": 1}`)
	require.Equal(t, http.StatusUnprocessableEntity, code)
	code, p = op("PUT", "/admin/accounts/"+acct+"/tier", `{"tier": "starter"}`)
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, "starter", p["tier"])
	code, p = op("GET", "/admin/tiers", "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, p["items"], 1)

	// The tier's features: agents is not in it.
	code, p, _ = b.call(t, "GET", "/agents", live, "")
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "feature_not_in_tier", p["code"])
	code, _, _ = b.call(t, "GET", "/agents", liveB, "")
	require.Equal(t, http.StatusOK, code, "an account without a tier has every feature")

	// The quota: one run a day.
	code, wf, _ := b.call(t, "POST", "/workflows", live, `{"name": "noop", "definition": {"actions": [{"type": "PbotLog", "properties": {"message": "hi"}}]}}`)
	require.Equal(t, http.StatusCreated, code, wf)
	code, p, _ = b.call(t, "POST", "/workflows/"+wf["id"].(string)+"/execute", live, `{}`)
	require.Equal(t, http.StatusAccepted, code, p)
	code, p, h := b.call(t, "POST", "/workflows/"+wf["id"].(string)+"/execute", live, `{}`)
	require.Equal(t, http.StatusTooManyRequests, code, p)
	require.Equal(t, "quota_exceeded", p["code"])
	secs, err := strconv.Atoi(h.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, secs)
	require.LessOrEqual(t, secs, 86401, "until 00:00 UTC")

	// The tier's rate: a burst of 3 for this key, two spent by the calls above (the refused
	// ones take none), one by this, then none is left.
	code, _, _ = b.call(t, "GET", "/workflows", live, "")
	require.Equal(t, http.StatusOK, code)
	code, _, h = b.call(t, "GET", "/workflows", live, "")
	require.Equal(t, http.StatusTooManyRequests, code)
	require.NotEmpty(t, h.Get("Retry-After"))
	for range 5 {
		code, _, _ = b.call(t, "GET", "/workflows", liveB, "")
		require.Equal(t, http.StatusOK, code, "the other account keeps the deployment's defaults")
	}

	// Suspension stops the token and the keys at once (here) and resuming restores them.
	code, p = op("POST", "/admin/accounts/"+acct+"/suspend", "")
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, "suspended", p["status"])
	code, p, _ = b.call(t, "GET", "/gateway/account", mgmt, "")
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "account_suspended", p["code"])
	b.clock.add(time.Hour) // the bucket refills
	code, p, _ = b.call(t, "GET", "/workflows", live, "")
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "account_suspended", p["code"])
	code, p = op("POST", "/admin/accounts/"+acct+"/resume", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "active", p["status"])
	code, _, _ = b.call(t, "GET", "/workflows", live, "")
	require.Equal(t, http.StatusOK, code)
	code, p = op("POST", "/admin/accounts/acct_nope/suspend", "")
	require.Equal(t, http.StatusNotFound, code)

	// Usage across accounts.
	code, p = op("GET", "/admin/usage", "")
	require.Equal(t, http.StatusOK, code, p)
	byAcct := map[string]map[string]any{}
	for _, it := range p["items"].([]any) {
		byAcct[it.(map[string]any)["account_id"].(string)] = it.(map[string]any)
	}
	require.EqualValues(t, 1, byAcct[acct]["runs_started"])
	require.EqualValues(t, 2, byAcct[acct]["rate_limited"], "the refused execute and the refused list")
}

func TestOperatorRoutesNeedAToken(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{})
	code, p, _ := b.call(t, "GET", "/admin/accounts", operatorToken, "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, "admin_not_configured", p["code"])

	// The gateway documents its routes.
	code, doc, _ := b.call(t, "GET", "/openapi.json", "", "")
	require.Equal(t, http.StatusOK, code)
	paths := doc["paths"].(map[string]any)
	for _, route := range []string{"/sdk/auth/start", "/sdk/tasks/{taskId}/decide", "/admin/tiers/{tierName}", "/gateway/licenses", "/gateway/orgs/{orgId}/users/{email}"} {
		require.Contains(t, paths, route)
	}
	// Every operator route declares the operator's bearer token, every management route the
	// account's, as a security scheme: none takes an Authorization parameter.
	schemes := doc["components"].(map[string]any)["securitySchemes"].(map[string]any)
	for name, says := range map[string]string{"operatorToken": "SVC_OPERATOR_TOKEN", "managementToken": "management token"} {
		scheme := schemes[name].(map[string]any)
		require.Equal(t, "http", scheme["type"], name)
		require.Equal(t, "bearer", scheme["scheme"], name)
		require.Contains(t, scheme["description"], says, name)
	}
	byScheme := map[string]int{}
	for path, item := range paths {
		for _, op := range item.(map[string]any) {
			op := op.(map[string]any)
			scheme := ""
			switch {
			case strings.HasPrefix(path, "/admin/"):
				scheme = "operatorToken"
			case strings.HasPrefix(path, "/gateway/") && path != "/gateway/signup":
				scheme = "managementToken"
			default:
				// The other routes say so too (the SDK's publishable key or session, none for
				// a public one), through Authorization as it comes: integrator_test checks them.
				continue
			}
			byScheme[scheme]++
			require.Equal(t, []any{map[string]any{scheme: []any{}}}, op["security"], path)
			params, _ := op["parameters"].([]any)
			for _, p := range params {
				require.NotEqual(t, "Authorization", p.(map[string]any)["name"], path)
			}
		}
	}
	require.Equal(t, map[string]int{"operatorToken": 10, "managementToken": 16}, byScheme)
}

// TestOperatorTokenCheckedFirst: the operator token is checked before anything of the
// request is read, so a request without it learns nothing of what the route validates.
func TestOperatorTokenCheckedFirst(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{OperatorToken: operatorToken})
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/admin/tiers/Bad%20Name", `{"rate": -1}`},
		{"POST", "/admin/licenses", `{"seats": 0}`},
		{"PUT", "/admin/accounts/acct_x/tier", `{"tier": ` + strings.Repeat(" ", 1<<13) + `"x"}`},
		{"GET", "/admin/usage?from=yesterday", ""},
	} {
		for _, token := range []string{"", "svc_mgmt_not-the-operator"} {
			code, p, _ := b.call(t, c.method, c.path, token, c.body)
			require.Equal(t, http.StatusUnauthorized, code, c.path)
			require.Equal(t, "unknown_operator_token", p["code"], c.path)
		}
		code, p, _ := b.call(t, c.method, c.path, operatorToken, c.body)
		require.Contains(t, []int{http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge}, code, "%s: %v", c.path, p)
	}
	off := setup(t, gateway.Options{})
	code, p, _ := off.call(t, "PUT", "/admin/tiers/Bad%20Name", operatorToken, `{"rate": -1}`)
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, "admin_not_configured", p["code"])
}

// TestOperatorIssuesAndRevokesLicenses: an issued license verifies offline, shows in its
// account's list, and once revoked validates as revoked.
func TestOperatorIssuesAndRevokesLicenses(t *testing.T) {
	t.Parallel()
	key, err := license.NewKey()
	require.NoError(t, err)
	b := setup(t, gateway.Options{OperatorToken: operatorToken, LicenseSigningKey: key, LicenseKey: key.Public().(ed25519.PublicKey)})
	mgmt, _, _ := b.signup(t, "ops@platform.example", "cust-a")
	mgmtB, _, _ := b.signup(t, "other@platform.example", "cust-b")
	code, acct, _ := b.call(t, "GET", "/gateway/account", mgmt, "")
	require.Equal(t, http.StatusOK, code)

	code, p, _ := b.call(t, "POST", "/admin/licenses", operatorToken, `{"account_id": "`+acct["id"].(string)+`", "licensee": "Acme GmbH", "seats": 25, "features": ["agents"], "days": 30}`)
	require.Equal(t, http.StatusCreated, code, p)
	signed := p["license"].(string)
	l, err := license.Verify(signed, key.Public().(ed25519.PublicKey), time.Now())
	require.NoError(t, err, "verifies offline with the public key alone")
	require.Equal(t, "Acme GmbH", l.Licensee)
	require.Equal(t, 25, l.Seats)
	require.WithinDuration(t, time.Now().AddDate(0, 0, 30), l.ExpiresAt, time.Minute)
	code, p, _ = b.call(t, "POST", "/admin/licenses", operatorToken, `{"account_id": "acct_nope", "licensee": "X", "seats": 1}`)
	require.Equal(t, http.StatusUnprocessableEntity, code)
	code, p, _ = b.call(t, "POST", "/admin/licenses", operatorToken, `{"account_id": "`+acct["id"].(string)+`", "licensee": "X", "seats": 0}`)
	require.Equal(t, http.StatusUnprocessableEntity, code)

	code, p, _ = b.call(t, "GET", "/gateway/licenses", mgmt, "")
	require.Equal(t, http.StatusOK, code, p)
	require.Len(t, p["items"], 1)
	require.Equal(t, signed, p["items"].([]any)[0].(map[string]any)["license"])
	id := p["items"].([]any)[0].(map[string]any)["id"].(string)
	code, p, _ = b.call(t, "GET", "/gateway/licenses", mgmtB, "")
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, p["items"], "each account its own")

	validate := func() map[string]any {
		code, p, _ := b.call(t, "POST", "/licensing/validate", "", `{"license": "`+signed+`"}`)
		require.Equal(t, http.StatusOK, code, p)
		return p
	}
	require.Equal(t, true, validate()["valid"])
	code, p, _ = b.call(t, "POST", "/admin/licenses/"+id+"/revoke", operatorToken, "")
	require.Equal(t, http.StatusOK, code, p)
	require.NotEmpty(t, p["revoked_at"])
	v := validate()
	require.Equal(t, false, v["valid"])
	require.Equal(t, "revoked", v["reason"])
	code, _, _ = b.call(t, "POST", "/admin/licenses/lic_nope/revoke", operatorToken, "")
	require.Equal(t, http.StatusNotFound, code)
}
