package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
)

func TestOAuthAPIsFromEnv(t *testing.T) {
	t.Parallel()
	apis, named, err := oauthAPIs("")
	require.NoError(t, err)
	require.Empty(t, named)
	require.Equal(t, engine.OAuthAPIs{}, apis, "unset: the real APIs")

	apis, named, err = oauthAPIs("slack=http://127.0.0.1:9/slack/api/, graph=https://graph.proxy.example/v1.0")
	require.NoError(t, err)
	require.Equal(t, []string{"slack", "graph"}, named)
	require.Equal(t, engine.OAuthAPIs{Slack: "http://127.0.0.1:9/slack/api", Graph: "https://graph.proxy.example/v1.0"}, apis)

	for _, bad := range []string{
		"teams=https://x.example",                         // unknown name
		"https://slack.example",                           // no name
		"slack=ftp://x.example",                           // scheme
		"slack=https://user:pw@x.example",                 // credentials
		"slack=https://x.example/?a=1",                    // query
		"slack=https://a.example,slack=https://b.example", // twice
	} {
		_, _, err := oauthAPIs(bad)
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), "pw@", "the value is not quoted")
	}
}
