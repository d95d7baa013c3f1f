package identity_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/identity"
)

var (
	key   = []byte("0123456789abcdef0123456789abcdef")
	other = []byte("fedcba9876543210fedcba9876543210")
	now   = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
)

func TestSignVerify(t *testing.T) {
	t.Parallel()
	tok, err := identity.Sign(key, identity.Identity{Subject: "ada@example.com", OrgID: "acme", Expires: now.Add(time.Minute)})
	require.NoError(t, err)

	id, err := identity.Verify(key, tok, now)
	require.NoError(t, err)
	require.Equal(t, "ada@example.com", id.Subject)
	require.Equal(t, "acme", id.OrgID)

	_, err = identity.Verify(other, tok, now)
	require.ErrorIs(t, err, identity.ErrSignature, "another key")
	_, err = identity.Verify(key, tok, now.Add(time.Minute))
	require.ErrorIs(t, err, identity.ErrExpired)
	long, err := identity.Sign(key, identity.Identity{Subject: "ada@example.com", OrgID: "acme", Expires: now.Add(identity.MaxLifetime + time.Second)})
	require.NoError(t, err)
	_, err = identity.Verify(key, long, now)
	require.ErrorIs(t, err, identity.ErrLifetime, "a token minted to last")

	// A token whose claims were swapped for another person's keeps its old signature.
	forged, err := identity.Sign(other, identity.Identity{Subject: "mallory@example.com", OrgID: "acme", Expires: now.Add(time.Hour)})
	require.NoError(t, err)
	claimsPart, _, _ := strings.Cut(forged, ".")
	_, sig, _ := strings.Cut(tok, ".")
	_, err = identity.Verify(key, claimsPart+"."+sig, now)
	require.ErrorIs(t, err, identity.ErrSignature)

	for _, bad := range []string{"", "no-dot", "a.b", "!!.!!", tok + "x"} {
		_, err = identity.Verify(key, bad, now)
		require.Error(t, err, bad)
	}
	_, err = identity.Verify(key[:31], tok, now)
	require.ErrorIs(t, err, identity.ErrShortKey)
	_, err = identity.Sign(key, identity.Identity{OrgID: "acme", Expires: now})
	require.Error(t, err, "no subject")
}
