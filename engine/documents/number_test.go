package documents

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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

// ShortestNumber says a number cell is its own JSON only when it is: for numbers written
// in many forms (random digits, points, signs, exponents, zeros), a text it accepts is what
// encoding/json writes for the text's float64.
func TestShortestNumber(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	accepted := 0
	for range 400_000 {
		var b strings.Builder
		if rng.IntN(4) == 0 {
			b.WriteByte("-+"[rng.IntN(2)])
		}
		for range rng.IntN(18) {
			b.WriteByte(byte('0' + rng.IntN(10)*rng.IntN(2)))
		}
		if rng.IntN(2) == 0 {
			b.WriteByte('.')
			for range rng.IntN(18) {
				b.WriteByte(byte('0' + rng.IntN(10)*rng.IntN(2)))
			}
		}
		if rng.IntN(8) == 0 {
			b.WriteString("e" + strconv.Itoa(rng.IntN(40)-20))
		}
		s := b.String()
		f, err := strconv.ParseFloat(s, 64)
		want, _ := json.Marshal(f)
		if ShortestNumber(s) {
			accepted++
			require.NoError(t, err, s)
			require.Equal(t, string(want), s, "accepted %q", s)
		}
	}
	require.Greater(t, accepted, 10_000, "most plain numbers are accepted")
	for _, s := range []string{"0", "-0", "12.5", "0.000001", "123456789012345", "0.1"} {
		require.True(t, ShortestNumber(s), s)
	}
	for _, s := range []string{"12.50", "+1", ".5", "1.", "007", "1e3", "0.0000001", "1234567890123456", "1.0", ""} {
		require.False(t, ShortestNumber(s), s)
	}
}
