package outbound_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/svcflow/svcflow/engine/outbound"
)

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id": 42, "key": %q}`, r.Header.Get("Idempotency-Key"))
	}))
	defer srv.Close()

	// httptest listens on 127.0.0.1: only a client that allows private targets reaches it.
	client := outbound.NewClient(outbound.Options{AllowPrivateTargets: true})
	resp, err := client.Do(context.Background(), outbound.Request{
		Method:         http.MethodPost,
		URL:            srv.URL + "/customers",
		Headers:        map[string]string{"Authorization": "Bearer token-from-orgconfig"},
		Body:           map[string]any{"name": "Ada"},
		IdempotencyKey: "run-1:0:0",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Status, resp.Body, len(resp.Attempts))
	// Output: 201 map[id:42 key:run-1:0:0] 1
}

// A final answer outside 2xx is an error that carries the status and the start of the body,
// and the response too.
func ExampleClient_Do_status() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"error": "email is required"}`)
	}))
	defer srv.Close()

	client := outbound.NewClient(outbound.Options{AllowPrivateTargets: true})
	resp, err := client.Do(context.Background(), outbound.Request{Method: http.MethodPost, URL: srv.URL, Body: map[string]any{}})
	fmt.Println(errors.Is(err, outbound.ErrStatus), outbound.ErrorCode(err))
	fmt.Println(resp.Status, resp.Body)
	// Output:
	// true http_status
	// 422 map[error:email is required]
}

// Without AllowPrivateTargets, the cloud metadata address (and loopback, private,
// link-local...) is refused before anything is sent.
func ExampleClient_Do_guard() {
	client := outbound.NewClient(outbound.Options{})
	_, err := client.Do(context.Background(), outbound.Request{URL: "http://169.254.169.254/latest/meta-data/"})
	fmt.Println(errors.Is(err, outbound.ErrTargetNotAllowed), outbound.ErrorCode(err))
	fmt.Println(err)
	// Output:
	// true target_not_allowed
	// outbound: GET 169.254.169.254: target 169.254.169.254 not allowed: link-local address
}
