package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLastTurn: the organization a PostgreSQL claim took its last job from, which the next
// claim starts after, is the one a round robin over the claimed jobs ends on.
func TestLastTurn(t *testing.T) {
	t.Parallel()
	jobs := func(orgs ...string) []jobModel {
		var ms []jobModel
		for _, o := range orgs {
			ms = append(ms, jobModel{OrgID: o})
		}
		return ms
	}
	for _, c := range []struct {
		name    string
		claimed []jobModel
		lastOrg string
		want    string
	}{
		{"from the start: a b c a b", jobs("a", "a", "b", "b", "c"), "", "b"},
		{"after b: c a", jobs("a", "c"), "b", "a"},
		{"after b: c a c", jobs("c", "a", "c"), "b", "c"},
		{"after c, one organization: a a", jobs("a", "a"), "c", "a"},
		{"after a: b c a", jobs("a", "b", "c"), "a", "a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, lastTurn(c.claimed, c.lastOrg))
		})
	}
}
