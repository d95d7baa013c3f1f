package engine

import (
	"encoding/json"
	"testing"
)

// MatchGroupsJSON exposes the benchmark data to the external tests.
func MatchGroupsJSON(tb testing.TB, n int) json.RawMessage { return matchGroupsJSON(tb, n) }
