package documents

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
)

// referenceNumber is the regular expression isNumber replaced, kept as the definition the
// hand-written check must agree with.
var referenceNumber = regexp.MustCompile(`^[+-]?([0-9]*)(\.[0-9]*)?([eE][+-]?[0-9]+)?$`)

func isNumberByPattern(s string) bool {
	m := referenceNumber.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	intPart, frac := m[1], m[2]
	if intPart == "" && len(frac) <= 1 {
		return false
	}
	if len(intPart) > 1 && intPart[0] == '0' {
		return false
	}
	if len(intPart) > 15 {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func TestIsNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "+1": true, "12.50": true, ".5": true, "5.": true, "1e5": true,
		"1.5E-3": true, "-.5e+2": true, "999999999999999": true,
		"": false, ".": false, "+": false, "-": false, "e5": false, ".e5": false, "1e": false,
		"1e+": false, "007": false, "01.5": false, "1234567890123456": false, "1e400": false,
		"NaN": false, "Inf": false, "1,5": false, " 1": false, "1 ": false, "1.2.3": false,
		"0x10": false, "١": false, "1_000": false,
	} {
		if got := isNumber(s); got != want {
			t.Errorf("isNumber(%q) = %v, want %v", s, got, want)
		}
		if ref := isNumberByPattern(s); ref != want {
			t.Errorf("the reference pattern says %v for %q, the table %v", ref, s, want)
		}
	}
}

// TestIsNumberAgreesWithThePattern draws strings from the characters a number is made of
// (and a few it is not) and holds isNumber to the regular expression it replaced.
func TestIsNumberAgreesWithThePattern(t *testing.T) {
	const alphabet = "0123456789+-.eE x"
	rng := rand.New(rand.NewPCG(20, 26))
	buf := make([]byte, 0, 24)
	for range 300_000 {
		buf = buf[:0]
		for range rng.IntN(20) {
			buf = append(buf, alphabet[rng.IntN(len(alphabet))])
		}
		s := string(buf)
		if got, want := isNumber(s), isNumberByPattern(s); got != want {
			t.Fatalf("isNumber(%q) = %v, the pattern %v", s, got, want)
		}
	}
}

func FuzzIsNumber(f *testing.F) {
	for _, s := range []string{"0", "-1.5e3", ".5", "007", "1e400", "12345678901234567"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isNumber(s), isNumberByPattern(s); got != want {
			t.Fatalf("isNumber(%q) = %v, the pattern %v", s, got, want)
		}
	})
}
