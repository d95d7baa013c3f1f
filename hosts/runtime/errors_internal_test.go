package runtime

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
)

// TestKnownProblem: the one mapping gives each error the engine names its status and code
// whatever the route, the route's words only for what the error does not say (the detail of
// a 404 or 409, of a 413), and nil for an error it does not know (a 500 for problemFor).
func TestKnownProblem(t *testing.T) {
	t.Parallel()
	studio := failure{notFound: "project, process or bundle not found", conflictSaid: true}
	for _, tc := range []struct {
		name   string
		err    error
		f      failure
		status int
		code   string
		detail string
	}{
		{"not found in the route's words", fmt.Errorf("get: %w", engine.ErrNotFound), failure{notFound: "workflow not found"}, 404, "not_found", "workflow not found"},
		{"not found without words", engine.ErrNotFound, failure{}, 404, "not_found", "resource not found"},
		{"a missing context key", fmt.Errorf("%w: run r has no key %q", engine.ErrNoContextKey, "k"),
			failure{notFound: "run not found", noKey: `the run has no context key "k"`}, 404, "not_found", `the run has no context key "k"`},
		{"a missing context key, the route silent about keys", engine.ErrNoContextKey, failure{notFound: "run not found"}, 404, "not_found", "run not found"},
		{"an OAuth app not stored says which key", fmt.Errorf("%w: %q", engine.ErrNoOrgConfigKey, "oauth:google"), failure{notFound: "OAuth provider not found"},
			404, "not_found", `not found: no such org config key: "oauth:google"`},
		{"conflict in the route's words", engine.ErrConflict, failure{conflict: "the run has already ended"}, 409, "conflict", "the run has already ended"},
		{"conflict in the engine's words", fmt.Errorf("%w: a process named %q exists", engine.ErrConflict, "Onboarding"), studio,
			409, "conflict", `a process named "Onboarding" exists`},
		{"a published bundle, on any route", engine.ErrBundlePublished, failure{}, 409, "bundle_published", ""},
		{"a published bundle, in the studio's words", engine.ErrBundlePublished, studio, 409, "bundle_published", ""},
		{"a process not published", engine.ErrProcessNotPublished, studio, 409, "process_not_published", ""},
		{"no drafting model", engine.ErrNoDraftingModelKey, studio, 409, "model_not_configured", ""},
		{"a draft that failed twice", &engine.DraftFailedError{Problems: []string{"/dsl/x: wrong"}}, studio, 422, "generation_failed", ""},
		{"an OAuth state", engine.ErrOAuthState, failure{in: "query"}, 400, codeOAuthState, engine.ErrOAuthState.Error()},
		{"a provider's refusal", fmt.Errorf("%w: slack: exchanging the code: invalid_grant", engine.ErrOAuthProvider), failure{}, 502, codeOAuthProvider, ""},
		{"an owned workflow", &engine.WorkflowOwnedError{ProcessID: "p1", ProcessName: "Onboarding"}, failure{conflict: "ignored"}, 409, "workflow_owned_by_process", ""},
		{"validation", engine.Invalid("/name", "required"), failure{}, 422, codeValidation, "validation failed"},
		{"a cursor", engine.ErrInvalidCursor, failure{in: "query"}, 400, codeInvalidCursor, ""},
		{"no master key", engine.ErrNoMasterKey, failure{}, 503, codeMasterKeyMissing, ""},
		{"the schema behind", fmt.Errorf("store: 1 of 9 migrations not applied: %w", engine.ErrSchemaBehind), failure{}, 503, codeMigrationsPending, ""},
		{"an upload too large", &multipartError{&http.MaxBytesError{Limit: 10}}, failure{tooLarge: "a document upload is at most 1 MiB"},
			413, codeBodyTooLarge, "a document upload is at most 1 MiB"},
		{"an upload that is not multipart", &multipartError{http.ErrNotMultipart}, failure{}, 415, codeUnsupportedMedia, ""},
		{"an upload that does not parse", &multipartError{errors.New("multipart: NextPart: EOF")}, failure{}, 400, codeMalformedMultipart, ""},
		{"a problem goes through", newProblem(http.StatusGone, "create_from_ai_gone", "retired"), studio, 410, "create_from_ai_gone", "retired"},
	} {
		p := knownProblem(tc.err, tc.f)
		require.NotNil(t, p, tc.name)
		require.Equal(t, tc.status, p.Status, tc.name)
		require.Equal(t, tc.code, p.Code, tc.name)
		if tc.detail != "" {
			require.Equal(t, tc.detail, p.Detail, tc.name)
		}
	}
	require.Nil(t, knownProblem(errors.New("connection refused"), failure{notFound: "x"}))
	require.Equal(t, codeStoreUnavailable, notReady(errors.New("connection refused")).Code)
	require.Equal(t, codeMigrationsPending, notReady(engine.ErrSchemaBehind).Code)
}
