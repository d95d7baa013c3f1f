package secrets_test

import (
	"errors"
	"fmt"

	"github.com/svcflow/svcflow/engine/secrets"
)

// A value sealed for one organization's key opens there only; listings show it masked.
func Example() {
	key, _ := secrets.GenerateKey()
	kr, _ := secrets.NewKeyring(key)

	sealed, _, _ := kr.Seal("acme", "api:llm_api_key", []byte("sk-test-0123456789abcd"))
	plain, _ := kr.Open("acme", "api:llm_api_key", sealed)
	fmt.Println(string(plain))

	_, err := kr.Open("globex", "api:llm_api_key", sealed)
	fmt.Println(errors.Is(err, secrets.ErrDecrypt))

	fmt.Println(secrets.Mask("sk-test-0123456789abcd"))
	fmt.Println(secrets.Mask("short"))
	// Output:
	// sk-test-0123456789abcd
	// true
	// ••••••••abcd
	// ••••••••
}

// Rotation: a keyring holds the new key first and the old one after it, so it opens what
// the old key sealed and seals under the new one.
func ExampleKeyring_Seal() {
	oldKey, _ := secrets.GenerateKey()
	newKey, _ := secrets.GenerateKey()
	before, _ := secrets.NewKeyring(oldKey)
	sealed, _, _ := before.Seal("acme", "db:warehouse", []byte("postgres://u:p@db/wh"))

	during, _ := secrets.NewKeyring(newKey, oldKey)
	plain, _ := during.Open("acme", "db:warehouse", sealed)
	resealed, keyID, _ := during.Seal("acme", "db:warehouse", plain)
	fmt.Println(keyID == secrets.KeyID(newKey))

	_, err := before.Open("acme", "db:warehouse", resealed)
	fmt.Println(errors.Is(err, secrets.ErrUnknownKey))
	// Output:
	// true
	// true
}
