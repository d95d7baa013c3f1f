package match

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// TestSimilarityReference checks Similarity against values of rapidfuzz's
// fuzz.token_set_ratio(a, b, processor=utils.default_process), truncated to an integer.
// "doc" marks a value printed in rapidfuzz's or fuzzywuzzy's own documentation; the others
// were computed by hand from the algorithm (sect = common words, ab/ba = words of one side
// only, lengths in characters; ratio = 100*(1 - dist/lensum)) and checked with a
// transcription of rapidfuzz's fuzz_py.token_set_ratio over a plain dynamic-programming
// Indel distance.
func TestSimilarityReference(t *testing.T) {
	t.Parallel()

	tests := []struct {
		a, b string
		want int
		how  string
	}{
		{"fuzzy was a bear", "fuzzy fuzzy was a bear", 100, "doc: 100.0 (same word set)"},
		{"fuzzy was a bear but not a dog", "fuzzy was a bear", 100, "doc: 100.0 (one side's words are all in the other)"},
		{"fuzzy was a bear but not a dog", "fuzzy was a bear but not a cat", 92, "doc: 92.3076923076923; sect 'a bear but fuzzy not was' = 24, ab 'dog' 3, ba 'cat' 3: ratio(sect, sect+' dog') = 100*(1-4/52)"},
		{"new york mets", "new york meats", 96, "sect 'new york' 8, 'mets' vs 'meats' indel 1, lensum 13+14: 100*(1-1/27) = 96.296"},
		{"new york mets vs atlanta braves", "atlanta braves vs new york mets", 100, "fuzzywuzzy README example: word order is ignored"},
		{"this is a test", "this is a test!", 100, "'!' is processed away"},
		{"ACME Corp.", "acme corp", 100, "case and punctuation are processed away"},
		{"Invoice 4821 ACME Corp office supplies", "ACME CORP PAYMENT REF 4821", 70, "sect '4821 acme corp' 14, ba 'payment ref' 11: ratio(sect, sect+' payment ref') = 100*(1-12/40)"},
		{"apple", "apple", 100, "identical"},
		{"apple", "orange", 36, "no common word: ratio('apple','orange'), lcs 'ae' 2, dist 7 of 11: 36.36"},
		{"", "apple", 0, "an empty side scores 0"},
		{"!!!", "???", 0, "no word left after processing scores 0, not 100"},
		{"amazon", "amazn", 90, "dist 1 of 11: 90.91"},
		{"Invoice 48213 Acme Corp office supplies", "invoice 48213 acme crop office supplies", 97, "sect 34, 'corp' vs 'crop' lcs 3 dist 2, lensum 39+39: 97.44; ratio(sect, sect+' corp') = 100*(1-5/73) = 93.15"},
		{"Café Müller", "cafe muller", 81, "code points: 'café müller' vs 'cafe muller' lcs 9 dist 4 of 22: 81.82"},
		{"CAFÉ MÜLLER", "café müller", 100, "Unicode lower-casing"},
		{"straße", "STRASSE", 76, "ß is kept, not folded: 'straße' vs 'strasse' lcs 5 dist 3 of 13: 76.92"},
		{"foo_bar", "foo bar", 100, "'_' is not alphanumeric: it separates words"},
		{"payment 1", "payment 2", 88, "sect 'payment' 7, '1' vs '2' dist 2 of 18: 88.89; ratio(sect, sect+' 1') = 100*(1-2/16) = 87.5"},
		{"abc", "abd", 66, "dist 2 of 6: 66.67 truncated, not rounded"},
	}
	for _, tt := range tests {
		t.Run(tt.a+"|"+tt.b, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Similarity(tt.a, tt.b), tt.how)
			require.Equal(t, tt.want, Similarity(tt.b, tt.a), "symmetric")
		})
	}
}

// TestSimilarityMatchesNaive compares Similarity with a direct transcription of the
// definition (word sets, sorted joins, dynamic-programming Indel distance, floating point
// as rapidfuzz computes it) on random strings, long and non-ASCII ones included, so both
// LCS paths are covered.
func TestSimilarityMatchesNaive(t *testing.T) {
	t.Parallel()

	words := []string{"acme", "acne", "corp", "crop", "invoice", "inv", "payment", "ref", "4821", "48213",
		"office", "offce", "supplies", "müller", "muller", "café", "straße", "ΑΘΗΝΑ", "αθηνα", "x", "a",
		"consulting", "consultant", "consultants", "corporation", "corporations", "reimbursement", "reimbursements",
		"electricity", "abcdefgh", "abcdefghi", "abcdefgh1"}
	seps := []string{" ", "  ", ", ", ".", "-", "_", "/"}
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func() string {
		n := rng.IntN(14)
		var sb strings.Builder
		for i := range n {
			if i > 0 {
				sb.WriteString(seps[rng.IntN(len(seps))])
			}
			w := words[rng.IntN(len(words))]
			if rng.IntN(4) == 0 {
				w = strings.ToUpper(w)
			}
			sb.WriteString(w)
		}
		return sb.String()
	}
	for range 5000 {
		a, b := gen(), gen()
		require.Equal(t, naiveTokenSetRatio(a, b), Similarity(a, b), "%q vs %q", a, b)
	}
	// Words across the 64-byte chunks of the ASCII tokenizer, and over 64 characters
	// (the multi-word LCS).
	long := []string{
		strings.Repeat("a", 63) + " " + strings.Repeat("b", 70),
		strings.Repeat("a", 64) + "b " + strings.Repeat("c", 130),
		strings.Repeat("ab", 40) + " x",
		strings.Repeat("x", 62) + "  yy" + strings.Repeat(" z", 40),
		"short",
	}
	for _, a := range long {
		for _, b := range long {
			require.Equal(t, naiveTokenSetRatio(a, b), Similarity(a, b), "%q vs %q", a, b)
		}
	}
}

func naiveTokenSetRatio(a, b string) int {
	process := func(s string) []string {
		s = strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsNumber(r) {
				return unicode.ToLower(r)
			}
			return ' '
		}, s)
		return strings.Fields(s)
	}
	set := func(ws []string) map[string]bool {
		m := map[string]bool{}
		for _, w := range ws {
			m[w] = true
		}
		return m
	}
	ta, tb := set(process(a)), set(process(b))
	if len(ta) == 0 || len(tb) == 0 {
		return 0
	}
	var inter, dab, dba []string
	for w := range ta {
		if tb[w] {
			inter = append(inter, w)
		} else {
			dab = append(dab, w)
		}
	}
	for w := range tb {
		if !ta[w] {
			dba = append(dba, w)
		}
	}
	if len(inter) > 0 && (len(dab) == 0 || len(dba) == 0) {
		return 100
	}
	slices.Sort(inter)
	slices.Sort(dab)
	slices.Sort(dba)
	runeLen := func(s string) int { return len([]rune(s)) }
	ja, jb := strings.Join(dab, " "), strings.Join(dba, " ")
	sl := runeLen(strings.Join(inter, " "))
	sep := 0
	if sl > 0 {
		sep = 1
	}
	sab, sba := sl+sep+runeLen(ja), sl+sep+runeLen(jb)
	norm := func(dist, lensum int) float64 { return 100 - 100*float64(dist)/float64(lensum) }
	best := norm(naiveIndel([]rune(ja), []rune(jb)), sab+sba)
	if sl > 0 {
		best = max(best, norm(sep+runeLen(ja), sl+sab), norm(sep+runeLen(jb), sl+sba))
	}
	return int(best)
}

func naiveIndel(a, b []rune) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			if a[i-1] == b[j-1] {
				cur[j] = prev[j-1] + 1
			} else {
				cur[j] = max(prev[j], cur[j-1])
			}
		}
		prev, cur = cur, prev
	}
	return len(a) + len(b) - 2*prev[len(b)]
}

func TestSimilarityThresholdIsExact(t *testing.T) {
	t.Parallel()

	// "new york mets" vs "new york meats" scores 96.296...: Similarity gives 96; a
	// fractional threshold compares against the exact score.
	tests := []struct {
		threshold float64
		want      bool
	}{
		{96, true}, {96.29, true}, {96.3, false}, {97, false}, {0, true}, {100, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, SimilarityAtLeast("new york mets", "new york meats", tt.threshold), "threshold %v", tt.threshold)
	}
	require.False(t, SimilarityAtLeast("", "x", 1))
	require.True(t, SimilarityAtLeast("", "x", 0), "threshold 0 admits everything")
}

func TestSimilarityAllocations(t *testing.T) {
	// Not parallel: AllocsPerRun measures the whole process.
	short := [2]string{"Invoice 4821 ACME Corp office supplies", "ACME CORP PAYMENT REF 4821 office supply"}
	long := [2]string{strings.Repeat("Invoice 4821 ACME Corp office supplies ", 4), strings.Repeat("ACME CORP PAYMENT REF 4821 office supply ", 4)}
	require.Greater(t, len(long[0]), asciiMax, "the general path")

	Similarity(short[0], short[1])
	require.Zero(t, testing.AllocsPerRun(100, func() { Similarity(short[0], short[1]) }), "the stack path")
	s := &simScratch{slots: map[rune]int32{}}
	s.ratio(long[0], long[1], 0)
	require.Zero(t, testing.AllocsPerRun(100, func() { s.ratio(long[0], long[1], 0) }), "a scratch used again")
	accents := [2]string{"Zürich AG Rechnung 4821 東京", "ZUERICH AG RECHNUNG 4821 東京 Bürobedarf"}
	s.ratio(accents[0], accents[1], 0)
	require.Zero(t, testing.AllocsPerRun(100, func() { s.ratio(accents[0], accents[1], 0) }), "Unicode, a scratch used again")
	if !raceEnabled { // the race detector makes sync.Pool drop items on purpose
		Similarity(long[0], long[1])
		require.Zero(t, testing.AllocsPerRun(100, func() { Similarity(long[0], long[1]) }), "the scratch from the pool")
	}
}

// TestSWAR checks the 8-bytes-at-a-time helpers against their byte-wise definitions:
// every byte value in every position, and every flag pattern.
func TestSWAR(t *testing.T) {
	t.Parallel()

	for pos := range 8 {
		for c := range 128 {
			x := uint64(c) << (8 * pos)
			want := uint64(0)
			if lowerAlnum[c] != 0 {
				want = 0x80 << (8 * pos)
			}
			require.Equal(t, want, swarAlnum(x), "byte %#x at %d", c, pos)
		}
	}
	for v := range 256 {
		var m uint64
		for i := range 8 {
			if v&(1<<i) != 0 {
				m |= 0x80 << (8 * i)
			}
		}
		require.Equal(t, uint64(v), moveMask(m))
	}
}

// TestSimilarityASCIIPath checks the stack-only path for texts of at most asciiMax ASCII
// bytes against the general one and against the definition, at the length boundaries (64
// bytes, where the arrays grow, and asciiMax), with the most words a text can hold, with
// repeats, and with long words that share their first 8 bytes.
func TestSimilarityASCIIPath(t *testing.T) {
	t.Parallel()

	general := func(a, b string) (int, int) {
		s := &simScratch{slots: map[rune]int32{}}
		return s.ratio(a, b, 0)
	}
	check := func(a, b string) {
		t.Helper()
		num, den, ok := ratioASCII(a, b, 0)
		require.True(t, ok, "%q vs %q", a, b)
		gn, gd := general(a, b)
		require.Equal(t, gn*den, num*gd, "%q vs %q: %d/%d, general %d/%d", a, b, num, den, gn, gd)
		require.Equal(t, naiveTokenSetRatio(a, b), Similarity(a, b), "%q vs %q", a, b)
	}
	many := strings.Repeat("a ", 31) + "b" // 63 bytes, 32 words
	require.Len(t, many, 63)
	check(many, "a b c")
	check(strings.Repeat("q w ", 16), strings.Repeat("w e ", 16))
	check(strings.Repeat("x", 64), strings.Repeat("x", 63)+"y")
	check("Abcdefghij abcdefghIK abcdefgh ABCDEFGHIJ", "abcdefghik abcdefghi abcdefgh1 z")
	check("abcdefghijk 7 abcdefghij", "ABCDEFGHIJ 8")
	check("Invoice 4821", "INVOICE 4821")
	check("ab", "ab cd")
	check("zz yy xx ww", "ww vv zz uu")

	manyLong := strings.Repeat("a ", 63) + "bc" // 128 bytes, 64 words
	require.Len(t, manyLong, asciiMax)
	check(manyLong, "a b c")
	check(manyLong, strings.Repeat("c b ", 32))
	check(strings.Repeat("x", 65), strings.Repeat("x", 64)+"y")
	check(strings.Repeat("x", 128), strings.Repeat("x", 127)+"y")
	check("y "+strings.Repeat("x", 64), "y x")
	// Joins past 64 characters on both sides: the two-word LCS.
	check(strings.Repeat("ab ", 42)+"zz", strings.Repeat("ba ", 42)+"yy")
	check(strings.Repeat("abcdefghij", 12), strings.Repeat("abcdefghik", 12))

	// Not ASCII, or over asciiMax: the general path.
	_, _, ok := ratioASCII("café", "cafe", 0)
	require.False(t, ok)
	_, _, ok = ratioASCII("cafe", "CAFÉ", 0)
	require.False(t, ok)
	_, _, ok = ratioASCII(strings.Repeat("x", 100)+"é", "x", 0)
	require.False(t, ok, "a non-ASCII byte in the second 64")
	for _, n := range []int{asciiMax, asciiMax + 1} {
		long := strings.Repeat("y", n)
		require.Equal(t, naiveTokenSetRatio(long, "y"), Similarity(long, "y"))
		require.Equal(t, naiveTokenSetRatio("y "+long, "y x"), Similarity("y x", "y "+long))
	}

	words := []string{"a", "b", "ab", "ba", "x1", "1x", "abcdefgh", "abcdefghi", "abcdefghj", "abcdefgh1",
		"abcdefghij", "abcdefghijklmnop", "ACME", "acme", "corp", "crop", "9", "99", "z"}
	seps := []string{" ", "-", ".", "  ", "/", "_"}
	rng := rand.New(rand.NewPCG(3, 4))
	gen := func(limit int) string {
		var sb strings.Builder
		for n := rng.IntN(limit / 3); n > 0; n-- {
			w := words[rng.IntN(len(words))]
			if rng.IntN(3) == 0 {
				w = strings.ToUpper(w)
			}
			if sb.Len()+len(w)+2 > limit {
				break
			}
			if sb.Len() > 0 || rng.IntN(4) == 0 {
				sb.WriteString(seps[rng.IntN(len(seps))])
			}
			sb.WriteString(w)
		}
		if rng.IntN(4) == 0 && sb.Len() < limit {
			sb.WriteString("!")
		}
		return sb.String()
	}
	for range 20000 {
		check(gen(64), gen(64))
	}
	for range 5000 {
		check(gen(asciiMax), gen(asciiMax))
	}
}

// oraclePairs reads testdata/similarity_oracle.jsonl: [score, a, b] per line, the scores
// of the Similarity before bit-parallel kernels were split out and a cut-off added
// (issue 35), on the benchmark's pairs, 300 ledger and bank descriptions of one
// transaction and 250 of unrelated ones from the noisy generator, Unicode pairs and pairs
// over 64 bytes (the pooled path).
func oraclePairs(tb testing.TB) []oraclePair {
	f, err := os.Open("testdata/similarity_oracle.jsonl")
	require.NoError(tb, err)
	defer f.Close()
	var out []oraclePair
	dec := json.NewDecoder(f)
	for dec.More() {
		var row [3]any
		require.NoError(tb, dec.Decode(&row))
		out = append(out, oraclePair{a: row[1].(string), b: row[2].(string), score: int(row[0].(float64))})
	}
	return out
}

type oraclePair struct {
	a, b  string
	score int
}

// TestSimilarityOracle holds every oracle score, the definition and the cut-off's verdict
// at the score and just above it.
func TestSimilarityOracle(t *testing.T) {
	t.Parallel()

	pairs := oraclePairs(t)
	require.Len(t, pairs, 684)
	for _, p := range pairs {
		require.Equal(t, p.score, Similarity(p.a, p.b), "%q vs %q", p.a, p.b)
		require.Equal(t, p.score, Similarity(p.b, p.a), "%q vs %q", p.b, p.a)
		require.Equal(t, naiveTokenSetRatio(p.a, p.b), p.score, "%q vs %q", p.a, p.b)
		require.True(t, SimilarityAtLeast(p.a, p.b, float64(p.score)), "%q vs %q at %d", p.a, p.b, p.score)
		if p.score < 100 {
			require.False(t, SimilarityAtLeast(p.a, p.b, float64(p.score+1)), "%q vs %q at %d", p.a, p.b, p.score+1)
		}
	}
}

// TestSimilarityCutoff checks SimilarityAtLeast against Similarity at every integer
// cut-off, and that the fraction similarityRatio returns when it stops early is below the
// cut-off.
func TestSimilarityCutoff(t *testing.T) {
	t.Parallel()

	pairs := oraclePairs(t)
	early := 0
	for _, p := range pairs[:200] {
		exactNum, exactDen := similarityRatio(p.a, p.b, 0)
		for cutoff := 1; cutoff <= 100; cutoff++ {
			require.Equal(t, p.score >= cutoff, SimilarityAtLeast(p.a, p.b, float64(cutoff)), "%q vs %q at %d", p.a, p.b, cutoff)
			num, den := similarityRatio(p.a, p.b, float64(cutoff))
			if num != exactNum || den != exactDen {
				early++
				require.Less(t, float64(100*num), float64(cutoff*den), "%q vs %q at %d: %d/%d", p.a, p.b, cutoff, num, den)
				require.GreaterOrEqual(t, num*exactDen, exactNum*den, "the bound is not below the score")
			}
		}
	}
	require.Positive(t, early, "the lengths' bound stopped some pairs early")

	// The fast paths: equal texts, empty ones.
	require.Equal(t, 100, Similarity("ACME Corp", "ACME Corp"))
	require.Equal(t, 0, Similarity("!!", "!!"), "equal texts without a word")
	require.Equal(t, 100, Similarity("Café", "Café"))
	require.Equal(t, 0, Similarity("", ""))
	require.False(t, SimilarityAtLeast("", "", 1))
}

// TestFoldRune checks the table and the CJK range of foldRune against unicode's
// functions on every code point.
func TestFoldRune(t *testing.T) {
	t.Parallel()

	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := unicode.IsLetter(r) || unicode.IsNumber(r)
		got, word := foldRune(r)
		if word != want || word && got != unicode.ToLower(r) {
			t.Fatalf("foldRune(%U) = %U, %v; want %U, %v", r, got, word, unicode.ToLower(r), want)
		}
	}
}

// TestSort8 checks the sorting network on every sequence of 0s and 1s of each length up
// to 8 (a network that sorts those sorts everything: Knuth's 0-1 principle) and on random
// words, and that the values past the words are the largest.
func TestSort8(t *testing.T) {
	t.Parallel()

	var buf [8]uint64
	for n := 0; n <= 8; n++ {
		for bitsOf := range 1 << n {
			for k := range n {
				buf[k] = uint64(bitsOf>>k&1) << 40
			}
			w := buf[:n]
			want := append([]uint64{}, w...)
			slices.Sort(want)
			sort8(w)
			require.Equal(t, want, append([]uint64{}, w...), "n %d, bits %b", n, bitsOf)
			for k := n; k < 8; k++ {
				require.Equal(t, ^uint64(0), buf[k], "past the words, the largest value; n %d", n)
			}
		}
	}
	rng := rand.New(rand.NewPCG(8, 8))
	for range 10000 {
		n := rng.IntN(9)
		for k := range n {
			// Packed words: the top byte is a code, at most 0xeb.
			buf[k] = rng.Uint64N(0xec << 56)
		}
		w := buf[:n]
		want := append([]uint64{}, w...)
		slices.Sort(want)
		sort8(w)
		require.Equal(t, want, append([]uint64{}, w...))
	}
}

// TestSimilarityFastPaths pins the answers the ASCII path gives without its LCS or after
// its shortcuts, against the definition: one side's words all in the other (100 at once),
// the same set of words written differently, repeats, words that share their first 8 bytes
// (where the packed words tie and the bytes past them decide), words of exactly 8 bytes,
// digits against letters, and the same pairs with a non-ASCII byte (the general path).
func TestSimilarityFastPaths(t *testing.T) {
	t.Parallel()

	tests := []struct {
		a, b string
		want int
	}{
		{"acme corp", "ACME CORP PAYMENT", 100},                    // a's words all in b
		{"ACME CORP PAYMENT", "corp", 100},                         // b's words all in a
		{"acme acme corp corp", "corp acme", 100},                  // the same set, repeats
		{"corp, acme.", "ACME-CORP", 100},                          // the same set, other separators
		{"invoice invoice invoice", "invoice payment", 100},        // a repeat is no extra word
		{"payment payment ref", "payment refund", 88},              // a repeat left out of the join
		{"payment payment ref", "refund payment payment", 88},      // a repeat on both sides counted once
		{"abcdefghij", "abcdefghik", 90},                           // 8-byte prefix shared, tails differ
		{"abcdefghij abcdefghik", "ABCDEFGHIK abcdefghij", 100},    // ties ordered by the tails
		{"abcdefghij abcdefghik x", "abcdefghik abcdefghij y", 95}, // ties, then the LCS
		{"abcdefghia", "abcdefghiz abcdefghia x", 100},             // found only once the tie is ordered
		{"abcdefgh abcdefghi", "abcdefghi", 100},                   // an 8-byte word is a prefix of a 9-byte one
		{"abcdefgh zz", "abcdefghi zz", 95},                        // the 8-byte word and the longer are different words
		{"abcdefghijklmnopq", "abcdefghijklmnopr", 94},             // words past 16 bytes
		{"abcdefg abcdefh", "ABCDEFH abcdefg", 100},                // keys (6 bytes) tie, 7th byte orders
		{"abcdef abcdefg", "abcdefg", 100},                         // a 6-byte word is a prefix of a 7-byte one
		{"abcdefgz abcdefa", "abcdefaz abcdefg", 93},               // ties past the key, none equal
		{"abcdefg abcdefg x", "abcdefg y", 88},                     // a repeat of a 7-byte word
		{"a1 b2 9z", "A1 Z9 b2", 87},                               // digits sort before letters
		{"x y z", "q r s", 40},                                     // no common word: the spaces still match
		{"x", "y", 0},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, naiveTokenSetRatio(tt.a, tt.b), "the definition: %q vs %q", tt.a, tt.b)
		require.Equal(t, tt.want, Similarity(tt.a, tt.b), "%q vs %q", tt.a, tt.b)
		require.Equal(t, tt.want, Similarity(tt.b, tt.a), "%q vs %q", tt.b, tt.a)
		// The same words with a non-ASCII word added to both sides take the general path.
		ua, ub := tt.a+" é", tt.b+" é"
		require.Equal(t, naiveTokenSetRatio(ua, ub), Similarity(ua, ub), "%q vs %q", ua, ub)
	}
}
