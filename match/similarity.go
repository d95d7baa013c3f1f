package match

import (
	"encoding/binary"
	"unicode"
	"unicode/utf8"
)

// Similarity is the 0-100 text score that fuzzyThreshold compares against: rapidfuzz's
// fuzz.token_set_ratio after rapidfuzz's default processing, truncated to an integer.
//
// Processing: every character that is not a Unicode letter or number becomes a space (so
// punctuation and "_" separate words), letters are lower-cased, the ends are trimmed.
// Words are the runs between spaces; each side is reduced to its set of distinct words.
//
// Score, with I the sorted common words, A and B the sorted words only in a or only in b,
// each joined with single spaces, and ratio(x, y) = 100 * (1 - indel(x, y) / (|x| + |y|))
// where indel is the insert/delete edit distance and |x| counts characters:
//
//   - 0 when either side has no word;
//   - 100 when I is not empty and A or B is empty (one side's words are all in the other);
//   - otherwise the largest of ratio(I+" "+A, I+" "+B), ratio(I, I+" "+A) and
//     ratio(I, I+" "+B), the last two only when I is not empty.
//
// The integer is the floor of that score, so for an integer threshold t,
// Similarity(a, b) >= t exactly when rapidfuzz's
// fuzz.token_set_ratio(a, b, processor=utils.default_process) >= t. Examples:
// ("fuzzy was a bear", "fuzzy fuzzy was a bear") is 100, ("new york mets",
// "new york meats") is 96 (96.30), ("ACME Corp.", "acme corp") is 100.
//
// It is safe for concurrent use and does not allocate: two ASCII texts of at most 128
// bytes each, the common case, are scored with fixed arrays on the stack
// (similarity_ascii.go), others with scratch space from a sync.Pool
// (similarity_general.go). ASCII text is split into words 8 bytes at a time, and the edit
// distance comes from the bit-parallel LCS of Hyyrö (lcs.go).
func Similarity(a, b string) int {
	num, den := similarityRatio(a, b, 0)
	if den == 0 {
		return 0
	}
	return int(100 * num / den)
}

// SimilarityAtLeast reports whether the exact token-set score of a and b (Similarity
// before the truncation to an integer) is at least cutoff. It skips the edit distance when
// the words' lengths alone show the score cannot reach cutoff, so it is the cheaper call
// where only the verdict matters. A side without words scores 0.
func SimilarityAtLeast(a, b string, cutoff float64) bool {
	num, den := similarityRatio(a, b, cutoff)
	if den == 0 {
		return cutoff <= 0
	}
	return float64(100*num) >= cutoff*float64(den)
}

// similarityRatio returns the token-set score as the fraction num/den of 1 (den 0 means no
// words on one side). When the score is below cutoff (0-100) it may return instead a
// larger fraction that is still below cutoff: the bound the words' lengths give.
func similarityRatio(a, b string, cutoff float64) (num, den int) {
	switch {
	case len(a) == 0 || len(b) == 0:
		return 0, 0
	case a == b:
		if hasWord(a) {
			return 1, 1
		}
		return 0, 0
	case len(a) <= asciiMax && len(b) <= asciiMax:
		if num, den, ok := ratioASCII(a, b, cutoff); ok {
			return num, den
		}
	}
	s := simPool.Get().(*simScratch)
	num, den = s.ratio(a, b, cutoff)
	simPool.Put(s)
	return num, den
}

// hasWord reports whether str has a letter or a number.
func hasWord(str string) bool {
	for _, r := range str {
		if r < utf8.RuneSelf && lowerAlnum[r] != 0 || r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsNumber(r)) {
			return true
		}
	}
	return false
}

// setScore is the token-set score from the lengths in characters of I, A and B joined
// (sect 0 when I is empty) and the LCS of A's and B's joins.
func setScore(sect, ab, ba, lcs int) (num, den int) {
	sep := min(sect, 1)
	sectAB := sect + sep + ab
	sectBA := sect + sep + ba
	// ratio(I+" "+A, I+" "+B): the common prefix drops out of the edit distance.
	lensum := sectAB + sectBA
	dist := ab + ba - 2*lcs
	num, den = lensum-dist, lensum
	if sect > 0 {
		// ratio(I, I+" "+A): the distance is the appended part's length.
		if n, d := sect+sectAB-(sep+ab), sect+sectAB; n*den > num*d {
			num, den = n, d
		}
		if n, d := sect+sectBA-(sep+ba), sect+sectBA; n*den > num*d {
			num, den = n, d
		}
	}
	return num, den
}

// belowCutoff reports whether the score is below cutoff whatever the LCS, with the bound
// as the score: the LCS is at most the shorter join, so the distance at least the
// difference of their lengths.
func belowCutoff(sect, ab, ba int, cutoff float64) (num, den int, below bool) {
	if cutoff <= 0 {
		return 0, 0, false
	}
	num, den = setScore(sect, ab, ba, min(ab, ba))
	return num, den, float64(100*num) < cutoff*float64(den)
}

// lowerAlnum maps an ASCII byte to its lower-case form when it is a letter or digit, and
// to 0 otherwise.
var lowerAlnum = func() (t [utf8.RuneSelf]byte) {
	for c := range utf8.RuneSelf {
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			t[c] = byte(c)
		case 'A' <= c && c <= 'Z':
			t[c] = byte(c) + 'a' - 'A'
		}
	}
	return t
}()

const (
	swarOnes = 0x0101010101010101
	swarHigh = 0x8080808080808080
)

// load64 reads 8 bytes of s at i, little-endian (the compiler makes it one load).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// load64BE reads 8 bytes of s at i, big-endian.
func load64BE(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[7]) | uint64(s[6])<<8 | uint64(s[5])<<16 | uint64(s[4])<<24 |
		uint64(s[3])<<32 | uint64(s[2])<<40 | uint64(s[1])<<48 | uint64(s[0])<<56
}

// swarAlnum sets the high bit of each letter or digit byte of x (all ASCII). Letters are
// found case-blind: OR 0x20 folds 'A'-'Z' onto 'a'-'z' and no other byte lands there.
func swarAlnum(x uint64) uint64 {
	l := x | 0x2020202020202020
	letter := (l + (0x80-'a')*swarOnes) &^ (l + (0x7f-'z')*swarOnes)
	digit := (x + (0x80-'0')*swarOnes) &^ (x + (0x7f-'9')*swarOnes)
	return (letter | digit) & swarHigh
}

// moveMask gathers the high bit of each byte into the low 8 bits (byte i to bit i): the
// multiplication adds each flag, shifted, into the top byte, with no carries between them.
func moveMask(m uint64) uint64 {
	return ((m >> 7) * 0x0102040810204080) >> 56
}

// keyMasks[n] keeps the first n bytes of a big-endian key.
var keyMasks = func() (m [9]uint64) {
	for n := range 9 {
		m[n] = ^(^uint64(0) >> uint(8*n))
	}
	return m
}()

// load8 reads 8 bytes of text at start, big-endian; past the end of text it reads zeros
// (or what follows the word, which the caller masks off).
func load8(text string, start int) uint64 {
	if start+8 <= len(text) {
		return load64BE(text[start:start+8], 0)
	}
	if off := len(text) - 8; off >= 0 {
		// Load the last 8 bytes and shift the word to the top.
		return load64BE(text[off:], 0) << uint(8*(start-off))
	}
	var tmp [8]byte
	copy(tmp[:], text[start:])
	return binary.BigEndian.Uint64(tmp[:])
}
