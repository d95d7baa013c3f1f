package fuzzbound_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/svcflow/svcflow/internal/fuzzbound"
)

// recorder keeps what Within reports instead of ending the test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// TestWithin: a call that returns passes; one that hangs is reported after Bound,
// without waiting for it.
func TestWithin(t *testing.T) {
	t.Parallel()
	r := &recorder{TB: t}
	ran := false
	fuzzbound.Within(r, "quick", func() { ran = true })
	if !ran || r.failed != "" {
		t.Fatalf("a returning call: ran %v, failed %q", ran, r.failed)
	}
	hang := make(chan struct{})
	defer close(hang)
	began := time.Now()
	fuzzbound.Within(r, "stuck", func() { <-hang })
	if took := time.Since(began); took < fuzzbound.Bound || took > fuzzbound.Bound+time.Second {
		t.Fatalf("Within returned after %v, want about %v", took, fuzzbound.Bound)
	}
	if want := fmt.Sprintf("stuck has not returned after %v", fuzzbound.Bound); r.failed != want {
		t.Fatalf("reported %q, want %q", r.failed, want)
	}
}
