package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/license"
)

// TestRotationKeysFromEnv: SVC_IDENTITY_KEY and SVC_LICENSE_PUBLIC_KEY take "new,old":
// the first signs (or is shown), the rest still verify; an error never quotes a key.
func TestRotationKeysFromEnv(t *testing.T) {
	t.Parallel()
	newID, oldID := strings.Repeat("n", 32), strings.Repeat("o", 40)
	enc := base64.StdEncoding.EncodeToString
	cur, prev, err := identityKeys(enc([]byte(newID)) + ", " + enc([]byte(oldID)))
	require.NoError(t, err)
	require.Equal(t, []byte(newID), cur)
	require.Equal(t, [][]byte{[]byte(oldID)}, prev)
	cur, prev, err = identityKeys(enc([]byte(newID)))
	require.NoError(t, err)
	require.Equal(t, []byte(newID), cur)
	require.Empty(t, prev)
	cur, _, err = identityKeys("")
	require.NoError(t, err)
	require.Nil(t, cur)
	short := enc([]byte("short"))
	_, _, err = identityKeys(enc([]byte(newID)) + "," + short)
	require.ErrorContains(t, err, "key 2")
	require.NotContains(t, err.Error(), short)

	k1, err := license.NewKey()
	require.NoError(t, err)
	k2, err := license.NewKey()
	require.NoError(t, err)
	p1, p2 := k1.Public().(ed25519.PublicKey), k2.Public().(ed25519.PublicKey)
	pub, previous, err := licensePublicKeys(license.EncodePublic(p1) + "," + license.EncodePublic(p2))
	require.NoError(t, err)
	require.Equal(t, p1, pub)
	require.Equal(t, []ed25519.PublicKey{p2}, previous)
	_, _, err = licensePublicKeys(license.EncodePublic(p1) + ",nope")
	require.ErrorContains(t, err, "key 2")
}
