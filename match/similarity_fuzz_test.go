package match

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// FuzzLCS compares the bit-parallel LCS kernels of lcs.go with the dynamic-programming
// definition on arbitrary text: the single-word ASCII form, the multi-word form on code
// points (non-ASCII and over 64 characters), and the ASCII path's one- and two-word forms
// on the codes of letters, digits and spaces. The seed corpus is in testdata/fuzz/FuzzLCS.
func FuzzLCS(f *testing.F) {
	for _, seed := range [][2]string{
		{"", ""},
		{"acme corp", "acme crop"},
		{"Café Müller", "cafe muller"},
		{"東京 株式会社", "株式会社 東京"},
		{strings.Repeat("ab", 40), strings.Repeat("ba", 33)},
		{strings.Repeat("x", 64), strings.Repeat("x", 63) + "y"},
		{strings.Repeat("é", 65), "e" + strings.Repeat("é", 130)},
		{"Zürich 東京 ÿĀ", "ZÜRICH 東 京 Āÿ"},
	} {
		f.Add(seed[0], seed[1])
	}
	// Long mixed text, where the multi-word form's carry between words matters: the
	// fuzzer's own inputs rarely grow past 64 characters on both sides.
	rng := rand.New(rand.NewPCG(35, 64))
	for _, alphabet := range []string{"abc", "aé東 ", "ab"} {
		letters := []rune(alphabet)
		text := func() string {
			r := make([]rune, 65+rng.IntN(100))
			for i := range r {
				r[i] = letters[rng.IntN(len(letters))]
			}
			return string(r)
		}
		f.Add(text(), text())
	}
	s := &simScratch{slots: map[rune]int32{}}
	f.Fuzz(func(t *testing.T, a, b string) {
		a, b = strings.ToValidUTF8(a, "?"), strings.ToValidUTF8(b, "?")
		want := naiveLCS([]rune(a), []rune(b))
		ascii := isASCII(a) && isASCII(b)
		require.Equal(t, want, s.lcs([]byte(a), []byte(b), ascii), "lcs %q %q", a, b)
		require.Equal(t, want, s.lcsBlocks([]byte(a), []byte(b)), "lcsBlocks %q %q", a, b)
		if utf8.RuneCountInString(a) <= 64 {
			require.Equal(t, want, s.lcsShort([]byte(a), []byte(b)), "lcsShort %q %q", a, b)
		}
		require.Equal(t, [256]uint64{}, s.pm, "the single-word forms leave their table zero")

		// The ASCII path's form, on codes: a and b as letters of both cases, digits and
		// spaces, of at most asciiMax bytes.
		wa, wb := smallWords(a), smallWords(b)
		if len(wa) > asciiMax || len(wb) > asciiMax {
			return
		}
		pa, pb := []rune(strings.ToLower(wa)), []rune(strings.ToLower(wb))
		require.Equal(t, naiveLCS(pa, pb), lcsCodes(codesOf(wa), codesOf(wb)), "lcsCodes %q %q", wa, wb)
	})
}

// FuzzSimilarity compares Similarity with the definition (naiveTokenSetRatio) and
// SimilarityAtLeast with Similarity around the score.
func FuzzSimilarity(f *testing.F) {
	for _, p := range similarityPairs {
		f.Add(p[0], p[1])
	}
	f.Add("Café Müller", "CAFE MULLER")
	f.Add("straße", "STRASSE")
	f.Add("", "x")
	f.Add("a a a", "a")
	// The ASCII path's shortcuts and ties: one side's words all in the other, repeats on
	// both sides, words sharing their first 8 bytes (ordered only by the rest), an 8-byte
	// word against a longer one, texts past 64 bytes (two words of bits), a non-ASCII word.
	f.Add("acme corp", "ACME CORP PAYMENT")
	f.Add("payment payment ref", "refund payment payment")
	f.Add("abcdefghia", "abcdefghiz abcdefghia x")
	f.Add("abcdefgh zz", "abcdefghi zz")
	f.Add(strings.Repeat("ab ", 30)+"abcdefghijklmnopqrs", strings.Repeat("ba ", 30)+"abcdefghijklmnopqrz")
	f.Add("Zürich AG 4821", "ZURICH AG 4821")
	// Prepared forms of each kind against each (SimilarityPrepared): a short ASCII text
	// against a non-ASCII one and against an ASCII one over asciiMax.
	f.Add("CAFE MULLER 4821", "Café Müller 4821")
	f.Add("acme corp", strings.Repeat("acme corp payment ", 8))
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 300 || len(b) > 300 {
			return // the definition's DP is quadratic
		}
		want := naiveTokenSetRatio(a, b)
		require.Equal(t, want, Similarity(a, b), "%q vs %q", a, b)
		require.Equal(t, want, SimilarityPrepared(Prepare(a), Prepare(b)), "prepared: %q vs %q", a, b)
		require.True(t, SimilarityAtLeast(a, b, float64(want)), "%q vs %q at %d", a, b, want)
		if want < 100 {
			require.False(t, SimilarityAtLeast(a, b, float64(want+1)), "%q vs %q at %d", a, b, want+1)
		}
	})
}

func naiveLCS(a, b []rune) int {
	return (len(a) + len(b) - naiveIndel(a, b)) / 2
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// smallWords maps s's bytes onto letters of both cases, digits and spaces.
func smallWords(s string) string {
	const alphabet = "abcXYZ019    "
	out := make([]byte, len(s))
	for i := range len(s) {
		out[i] = alphabet[int(s[i])%len(alphabet)]
	}
	return string(out)
}

// codesOf is the codes (asciiCodes) of the ASCII text s, a byte each.
func codesOf(s string) []byte {
	out := make([]byte, len(s))
	for i := range len(s) {
		out[i] = byte(asciiCodes(uint64(s[i])))
	}
	return out
}
