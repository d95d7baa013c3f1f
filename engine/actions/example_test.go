package actions_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// An organization registers an http action; a registration that mixes in another kind's
// field is refused with the field named.
func ExampleActions_CreateAction() {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite::memory:")
	if err != nil {
		panic(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		panic(err)
	}
	eng, _ := engine.New(engine.Config{Store: st})

	a, err := eng.CreateAction(ctx, "acme", svctype.Action{
		Name: "notify-crm", Kind: svctype.ActionHTTP, URL: "https://crm.example.com/api/contacts",
		Headers: map[string]string{"Authorization": "orgconfig:api:crm_token"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Name, a.Kind, a.HTTPMethod)

	_, err = eng.CreateAction(ctx, "acme", svctype.Action{
		Name: "lookup", Kind: svctype.ActionDB, Datasource: "orgconfig:db:erp", Query: "SELECT 1", URL: "https://x.example",
	})
	var ve *engine.ValidationError
	if errors.As(err, &ve) {
		fmt.Println(ve.Problems[0].Pointer)
	}

	found, _ := eng.LookupAction(ctx, "acme", "notify-crm")
	fmt.Println(found.URL)
	// Output:
	// notify-crm http POST
	// /url
	// https://crm.example.com/api/contacts
}
