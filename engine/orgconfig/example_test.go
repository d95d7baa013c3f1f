package orgconfig_test

import (
	"context"
	"fmt"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Org config: values are sealed with the engine's keyring; listings mask them, and only
// OrgConfigValue (for execution) returns the plaintext.
func Example() {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite::memory:")
	if err != nil {
		panic(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		panic(err)
	}
	key, _ := secrets.GenerateKey() // a service reads it from SVC_MASTER_KEY or a key file
	kr, _ := secrets.NewKeyring(key)
	eng, _ := engine.New(engine.Config{Store: st, Keyring: kr})

	_, created, _ := eng.SetOrgConfig(ctx, "acme", "api:llm_api_key", "sk-test-0123456789abcd")
	fmt.Println(created)
	page, _ := eng.ListOrgConfig(ctx, "acme", svctype.ListOptions{})
	fmt.Println(page.Items[0].Key, page.Items[0].Masked)
	v, _ := eng.OrgConfigValue(ctx, "acme", "api:llm_api_key")
	fmt.Println(v)
	_, err = eng.OrgConfigValue(ctx, "acme", "api:missing")
	fmt.Println(err)
	// Output:
	// true
	// api:llm_api_key ••••••••abcd
	// sk-test-0123456789abcd
	// not found: no such org config key: "api:missing"
}
