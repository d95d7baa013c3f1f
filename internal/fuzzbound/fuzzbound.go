// Package fuzzbound is the watchdog every fuzz target of the module puts around one call
// on one input. Go's fuzzer does not time an input out: a call that hangs stalls the
// worker until -fuzztime ends and the run reports PASS. Within fails the input instead,
// naming it.
package fuzzbound

import (
	"testing"
	"time"
)

// Bound is how long one call may take on one fuzz input. Inputs are a few KiB, on which
// every call the targets make (parsing, extracting, signing, a read in an in-memory
// database) takes well under a millisecond: a call near the bound is a hang or a blow-up,
// not a slow machine.
const Bound = 2 * time.Second

// Within runs fn and fails the input when fn has not returned after Bound. It does not
// wait for a call that hangs: the failure names the input, which a hang would not.
func Within(t testing.TB, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(Bound):
		t.Fatalf("%s has not returned after %v", what, Bound)
	}
}
