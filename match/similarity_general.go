package match

import (
	"encoding/binary"
	"math/bits"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// The general path of Similarity: texts past asciiMax bytes or not ASCII. Words are
// tokens into the side's text (lower-cased into a buffer when it is not ASCII), sorted by
// their first 8 bytes and compared further only on ties, and the joins of the words only
// in one side are written out for the LCS kernels of lcs.go. Its working space comes from
// a sync.Pool.

type token struct {
	key        uint64 // the word's first 8 bytes, lower-cased, big-endian, zero-padded
	start, end int32  // byte offsets into the side's text
	runes      int32
}

// side is one string being compared: its words, and the text they point into.
type side struct {
	text    string // the input when it is ASCII, else its lower-cased form (a view of buf)
	lowered bool   // text is already lower-cased
	ascii   bool   // the input is ASCII
	buf     []byte
	toks    []token
}

// simScratch is the reusable working space of one Similarity call.
type simScratch struct {
	a, b     side
	joinA    []byte
	joinB    []byte
	runesA   []rune
	runesB   []rune
	pm       [256]uint64 // pattern bits per byte or code point below 256; kept zero between uses
	wide     []runeBits  // pattern bits of other code points (lcsShort)
	slots    map[rune]int32
	pmBlocks []uint64
	state    []uint64
}

var simPool = sync.Pool{New: func() any { return &simScratch{slots: map[rune]int32{}} }}

func (s *simScratch) ratio(a, b string, cutoff float64) (int, int) {
	s.a.tokenize(a)
	s.b.tokenize(b)
	if len(s.a.toks) == 0 || len(s.b.toks) == 0 {
		return 0, 0
	}
	s.a.sortDedupe()
	s.b.sortDedupe()
	return s.score(&s.a, &s.b, cutoff)
}

// score is the token-set score of two sides already split, sorted and rid of repeats,
// each with a word at least. It only reads sa and sb, which need not be s's own (a
// Prepared text keeps its side).
func (s *simScratch) score(sa, sb *side, cutoff float64) (int, int) {
	// Merge the two sorted word sets into I (only its length matters), A and B. A join is
	// never longer than its text, and appendWord writes 8 bytes at a time.
	s.joinA = growJoin(s.joinA, len(sa.text)+16)
	s.joinB = growJoin(s.joinB, len(sb.text)+16)
	ta, tb := sa.toks, sb.toks
	sect, ab, ba := 0, 0, 0 // lengths in characters, separators included
	nSect := 0
	i, j := 0, 0
	for i < len(ta) && j < len(tb) {
		x, y := &ta[i], &tb[j]
		var c int
		switch {
		case x.key < y.key:
			c = -1
		case x.key > y.key:
			c = 1
		case x.end-x.start > 8 || y.end-y.start > 8:
			c = compareTokens(sa, *x, sb, *y)
		}
		switch {
		case c == 0:
			sect += int(ta[i].runes) + min(nSect, 1)
			nSect++
			i++
			j++
		case c < 0:
			s.joinA, ab = sa.appendWord(s.joinA, ta[i], ab)
			i++
		default:
			s.joinB, ba = sb.appendWord(s.joinB, tb[j], ba)
			j++
		}
	}
	for ; i < len(ta); i++ {
		s.joinA, ab = sa.appendWord(s.joinA, ta[i], ab)
	}
	for ; j < len(tb); j++ {
		s.joinB, ba = sb.appendWord(s.joinB, tb[j], ba)
	}
	if nSect > 0 && (ab == 0 || ba == 0) {
		return 1, 1
	}
	if num, den, below := belowCutoff(sect, ab, ba, cutoff); below {
		return num, den
	}
	return setScore(sect, ab, ba, s.lcs(s.joinA, s.joinB, sa.ascii && sb.ascii))
}

// appendWord appends t's lower-cased bytes to join, after a space unless join is empty,
// and adds the characters appended to n. join has room for the word and 8 bytes more
// (see ratio): the key, which holds a word's first 8 bytes lower-cased, is written whole
// and the slice cut to length.
func (sd *side) appendWord(join []byte, t token, n int) ([]byte, int) {
	at := len(join)
	if at > 0 {
		join = join[:at+1]
		join[at] = ' '
		at++
		n++
	}
	size := int(t.end - t.start)
	binary.BigEndian.PutUint64(join[at:at+8], t.key)
	if size > 8 {
		sd.appendLong(join[at+8:at+size], t)
	}
	return join[:at+size], n + int(t.runes)
}

// appendLong writes the bytes of a word past its first 8.
func (sd *side) appendLong(rest []byte, t token) {
	copy(rest, sd.text[t.start+8:t.end])
	if !sd.lowered {
		for k := range rest {
			rest[k] |= 0x20
		}
	}
}

func growJoin(join []byte, need int) []byte {
	if cap(join) < need {
		return make([]byte, 0, 2*need)
	}
	return join[:0]
}

// tokenize finds the words of str and whether it is ASCII.
func (sd *side) tokenize(str string) {
	sd.text, sd.lowered, sd.ascii = str, false, true
	if sd.tokenizeASCII() {
		return
	}
	sd.ascii = false
	sd.toks = sd.toks[:0]
	sd.tokenizeUnicode(str)
}

// tokenizeUnicode lower-cases the letters and numbers of str into buf, words separated by
// one space, and finds the words there.
func (sd *side) tokenizeUnicode(str string) {
	// A lower-cased rune takes at most 3 bytes for each 2 of the original.
	if need := 2*len(str) + utf8.UTFMax; cap(sd.buf) < need {
		sd.buf = make([]byte, 0, 2*need)
	}
	buf := sd.buf[:0]
	start, runes := -1, int32(0)
	for i := 0; i < len(str); {
		r, size := rune(str[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(str[i:])
		}
		i += size
		r, word := foldRune(r)
		if !word {
			if start >= 0 {
				sd.toks = append(sd.toks, token{start: int32(start), end: int32(len(buf)), runes: runes})
				buf = append(buf, ' ')
				start = -1
			}
			continue
		}
		if start < 0 {
			start, runes = len(buf), 0
		}
		buf = utf8.AppendRune(buf, r)
		runes++
	}
	if start >= 0 {
		sd.toks = append(sd.toks, token{start: int32(start), end: int32(len(buf)), runes: runes})
	}
	sd.buf = buf
	sd.text, sd.lowered = unsafe.String(unsafe.SliceData(buf), len(buf)), true
	for k := range sd.toks {
		t := &sd.toks[k]
		t.key = wordKey(sd.text, int(t.start), int(t.end-t.start))
	}
}

// foldMax bounds the code points foldTable holds: the Latin, Greek, Cyrillic, Armenian,
// Hebrew and Arabic blocks, where accented descriptions stay.
const foldMax = 0x800

// foldTable maps a code point below foldMax to its lower-case form when it is a letter or
// a number, and to 0 otherwise: unicode.IsLetter, IsNumber and ToLower each search tables
// for a code point past Latin-1.
var foldTable = func() (t [foldMax]uint16) {
	for r := range rune(foldMax) {
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			t[r] = uint16(unicode.ToLower(r)) // below 0x10000 for every r here (TestFoldRune)
		}
	}
	return t
}()

// foldRune returns r lower-cased, and whether it is a letter or a number (part of a word).
func foldRune(r rune) (rune, bool) {
	if r < foldMax {
		f := foldTable[r]
		return rune(f), f != 0
	}
	if cjkFirst <= r && r <= cjkLast {
		return r, true // unified ideographs: letters without case (TestFoldRune)
	}
	if unicode.IsLetter(r) || unicode.IsNumber(r) {
		return unicode.ToLower(r), true
	}
	return r, false
}

// The CJK Unified Ideographs block.
const cjkFirst, cjkLast = 0x4E00, 0x9FFF

// wordKey reads the first 8 bytes of the word text[start:start+n], big-endian and
// zero-padded past the word.
func wordKey(text string, start, n int) uint64 {
	return load8(text, start) & keyMasks[min(uint(n), 8)]
}

// tokenizeASCII finds the words of ASCII text 8 bytes at a time: a bit mask of the letters
// and digits of each 64-byte chunk gives the words' bounds without a branch per byte, and
// nothing is copied. It reports false, having found nothing usable, when the text is not
// ASCII.
func (sd *side) tokenizeASCII() bool {
	str := sd.text
	// A text of n bytes has at most (n+1)/2 words.
	if cap(sd.toks) < len(str)/2+1 {
		sd.toks = make([]token, len(str)/2+8)
	}
	toks := sd.toks[:cap(sd.toks)]
	n := 0
	open := -1 // a word running on from the previous chunk
	for base := 0; base < len(str); base += 64 {
		mask, ascii := chunkMask(str, base)
		if !ascii {
			return false
		}
		carry := uint64(0)
		if open >= 0 {
			carry = 1
		}
		starts := mask &^ (mask<<1 | carry)
		ends := mask &^ (mask >> 1)
		if base+64 < len(str) && lowerAlnum[str[base+64]&0x7f] != 0 { // a non-ASCII byte ends the ASCII path in the next chunk
			ends &^= 1 << 63
		}
		if open >= 0 && ends != 0 {
			end := base + bits.TrailingZeros64(ends) + 1
			ends &= ends - 1
			toks[n] = asciiToken(str, open, end)
			n++
			open = -1
		}
		for starts != 0 {
			start := base + bits.TrailingZeros64(starts)
			starts &= starts - 1
			if ends == 0 {
				open = start
				break
			}
			end := base + bits.TrailingZeros64(ends) + 1
			ends &= ends - 1
			// The token, inline: this loop runs once per word.
			var key uint64
			if start+8 <= len(str) {
				key = load64BE(str[start:start+8], 0)
			} else {
				key = load8(str, start)
			}
			toks[n] = token{
				key:   (key | 0x2020202020202020) & keyMasks[min(uint(end-start), 8)],
				start: int32(start), end: int32(end), runes: int32(end - start),
			}
			n++
		}
	}
	if open >= 0 {
		toks[n] = asciiToken(str, open, len(str))
		n++
	}
	sd.toks = toks[:n]
	return true
}

// asciiToken is the token of the ASCII word str[start:end]. Only letters and digits make
// words, and OR 0x20 lower-cases a letter and leaves a digit alone.
func asciiToken(str string, start, end int) token {
	key := (load8(str, start) | 0x2020202020202020) & keyMasks[min(uint(end-start), 8)]
	return token{key: key, start: int32(start), end: int32(end), runes: int32(end - start)}
}

// compareTokens orders words bytewise (code point order, as Python sorts str).
func compareTokens(sa *side, a token, sb *side, b token) int {
	switch {
	case a.key < b.key:
		return -1
	case a.key > b.key:
		return 1
	case a.end-a.start <= 8 && b.end-b.start <= 8:
		// Equal keys and no byte past them: a shorter word would have a zero in its key
		// where the longer has a letter or digit, so the words are equal.
		return 0
	}
	wa, wb := sa.text[a.start+8:a.end], sb.text[b.start+8:b.end]
	for k := 0; k < len(wa) && k < len(wb); k++ {
		ca, cb := lowerByte(wa[k]), lowerByte(wb[k])
		if ca != cb {
			return int(ca) - int(cb)
		}
	}
	return len(wa) - len(wb)
}

// lowerByte lower-cases an ASCII letter and leaves every other byte (digits, lower-case
// letters, UTF-8 of text already lower-cased) alone.
func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// sortDedupe sorts the words and drops repeats.
func (sd *side) sortDedupe() {
	toks := sd.toks
	// Insertion sort on the first 8 bytes (a description has a handful of words), then a
	// full comparison only inside runs of equal first bytes.
	ties := false
	for i := 1; i < len(toks); i++ {
		t := toks[i]
		j := i
		for j > 0 && toks[j-1].key > t.key {
			toks[j] = toks[j-1]
			j--
		}
		toks[j] = t
		ties = ties || j > 0 && toks[j-1].key == t.key
	}
	if ties {
		for i := 1; i < len(toks); i++ {
			t := toks[i]
			j := i
			for j > 0 && toks[j-1].key == t.key && compareTokens(sd, toks[j-1], sd, t) > 0 {
				toks[j] = toks[j-1]
				j--
			}
			toks[j] = t
		}
	}
	// Drop repeats; most descriptions have none, and then nothing moves.
	same := func(a, b *token) bool {
		return a.key == b.key && (a.end-a.start <= 8 && b.end-b.start <= 8 || compareTokens(sd, *a, sd, *b) == 0)
	}
	first := 1
	for first < len(toks) && !same(&toks[first-1], &toks[first]) {
		first++
	}
	if first >= len(toks) {
		return
	}
	out := toks[:first]
	for _, t := range toks[first:] {
		if !same(&out[len(out)-1], &t) {
			out = append(out, t)
		}
	}
	sd.toks = out
}

// chunkMask returns the bit mask of the letters and digits among the 64 bytes of str
// from base (fewer at the end), and whether those bytes are ASCII. It is a function of its
// own so that its loop keeps its values in registers.
func chunkMask(str string, base int) (mask uint64, ascii bool) {
	chunk := str[base:min(base+64, len(str))]
	var high uint64
	i := 0
	for rest := chunk; len(rest) >= 8; rest = rest[8:] {
		x := load64(rest, 0)
		high |= x
		mask |= moveMask(swarAlnum(x)) << uint(i)
		i += 8
	}
	if rem := len(chunk) - i; rem > 0 {
		if base+i >= 8 { // the last 8 bytes of str, shifted down to the remaining ones
			x := load64(str, base+i+rem-8) >> uint(8*(8-rem))
			high |= x
			mask |= moveMask(swarAlnum(x)) << uint(i)
		} else {
			for ; i < len(chunk); i++ {
				high |= uint64(chunk[i])
				if lowerAlnum[chunk[i]&0x7f] != 0 {
					mask |= 1 << uint(i)
				}
			}
		}
	}
	return mask, high&swarHigh == 0
}
