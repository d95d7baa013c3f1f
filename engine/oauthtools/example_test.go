package oauthtools_test

import (
	"context"
	"fmt"

	"github.com/svcflow/svcflow/engine/oauthtools"
	"github.com/svcflow/svcflow/engine/outbound"
)

// noConnections is a token source of an organization that connected nothing.
type noConnections struct{}

func (noConnections) AccessToken(_ context.Context, _, provider, _ string) (string, string, error) {
	return "", "", fmt.Errorf("no %s account is connected to this organization", provider)
}

// Each tool is a step kind with an IO half; the engine registers them bound to its own
// connections. A tool's properties are checked at create time.
func ExampleKinds() {
	kinds := oauthtools.Kinds(noConnections{}, outbound.NewClient(outbound.Options{}), oauthtools.DefaultAPIs())
	for _, name := range oauthtools.Names {
		fmt.Println(name, oauthtools.Provider(name), kinds[name].IO != nil)
	}
	problems := kinds[oauthtools.GmailSend].Validate(map[string]any{"to": "ada@example.com"})
	for _, p := range problems {
		fmt.Println(p.Pointer, p.Message)
	}
	// Output:
	// gmail_send google true
	// google_sheets_append_row google true
	// microsoft_teams_post_message microsoft true
	// slack_post_message slack true
	// /subject required by gmail_send
	// /body required by gmail_send
}
