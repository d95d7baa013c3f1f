package documents_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/svcflow/svcflow/engine/documents"
)

func ExampleExtract() {
	csv := "\xEF\xBB\xBFinvoice,customer,amount\nINV-1,\"Smith, John\",120.50\nINV-2,Acme,80\n"
	rows, err := documents.Extract("application/octet-stream", "march.csv", []byte(csv))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rows {
		fmt.Printf("%s %q %v\n", r["invoice"], r["customer"], r["amount"])
	}
	// Output:
	// INV-1 "Smith, John" 120.5
	// INV-2 "Acme" 80
}

func ExampleTooManyRowsError() {
	// 10,001 empty objects.
	json := "[" + strings.Repeat("{},", documents.MaxRows) + "{}]"
	_, err := documents.Extract("application/json", "", []byte(json))
	var tooMany *documents.TooManyRowsError
	fmt.Println(errors.As(err, &tooMany), err)
	// Output:
	// true 10001 rows; the limit is 10,000
}
