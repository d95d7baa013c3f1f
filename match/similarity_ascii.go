package match

import (
	"encoding/binary"
	"math/bits"
)

// The ASCII path: two ASCII texts of at most asciiMax bytes each, scored with fixed arrays
// on the stack and no join written as text. A word is one uint64, a packed word:
//
//	bits 63-16  the codes of its first keyBytes bytes, a byte each, zero past the word
//	bits 15-8   its length in bytes
//	bits 7-0    its start in the text
//
// A byte's code (asciiCodes) is the same for both cases of a letter and keeps the order
// of the lower-cased bytes (digits 16-25 before letters 33-58), and a shorter word has a
// zero code where a longer one has a letter or digit. So packed words sort by their
// integers as Python sorts the lower-cased words, except among words of more than
// keyBytes bytes that share their first keyBytes (cmpWords reads the rest for those), and
// two words of at most keyBytes bytes are equal exactly when their packed words agree
// above the start.
//
// The key holds 6 codes a byte each, not 8 of 6 bits: packing 8 codes into 48 bits took
// 12 instructions a word, about 200 a pair of descriptions, where the words that tie on 6
// bytes and not on 8 (a word of 7 or 8 bytes common to both texts, mostly) cost a
// cmpWords call of about 30.

// The loops avoid branches that go either way with the text (a word's length, where the
// text ends, which of two words is smaller): a mispredicted branch costs as much as a
// dozen instructions, and profiles of the oracle pairs showed them costing more than the
// instructions did.

// asciiMax is the longest text the ASCII path takes; the start and the length of a word
// must fit in a byte.
const asciiMax = 128

// asciiCodes maps each of 8 ASCII bytes c to its code c&0x1f | (c&0x40)>>1: letters of
// either case to 33-58, digits to 16-25, a space to 0.
func asciiCodes(x uint64) uint64 {
	return x&0x1f1f1f1f1f1f1f1f | (x>>1)&0x2020202020202020
}

// keyBytes is how many of a word's first bytes its packed word holds.
const keyBytes = 6

// wordKeyMasks[n] keeps the key of a word of n bytes: its first n bytes, keyBytes at most.
// A table indexed by a byte, not a shift by a variable (which Go checks for 64 and more)
// nor keyMasks[min(n, keyBytes)] (which the compiler made a branch that goes either way
// with the words' lengths).
var wordKeyMasks = func() (m [256]uint64) {
	for n := range m {
		m[n] = keyMasks[min(n, keyBytes)]
	}
	return m
}()

func wordLen(w uint64) int   { return int(w >> 8 & 0xff) }
func wordStart(w uint64) int { return int(w & 0xff) }

// asciiText is one text of the ASCII path: its bytes' codes and its words.
type asciiText struct {
	text  string
	codes []byte   // the codes of text's bytes, then zeros: len(text)+16 bytes at least
	words []uint64 // the packed words, sorted: room for len(text)/2+1 and 8 at least
	rep   uint64   // a bit for each word equal to the one before it
	chars int      // the bytes of the words, repeats left out
}

// tokenize finds the words of t.text and writes the codes of its bytes; it reports
// false when the text is not ASCII.
func (t *asciiText) tokenize() bool {
	str, codes := t.text, t.codes
	// A bit for each letter or digit, 8 bytes at a time.
	var mask [asciiMax / 64]uint64
	var high uint64
	i := 0
	for ; i+8 <= len(str); i += 8 {
		x := load64(str, i)
		high |= x
		mask[i>>6&1] |= moveMask(swarAlnum(x)) << (uint(i) & 63)
		binary.LittleEndian.PutUint64(codes[i:i+8], asciiCodes(x))
	}
	if rem := len(str) - i; rem > 0 {
		var x uint64
		if len(str) >= 8 { // the last 8 bytes, shifted down to the rest
			x = load64(str, len(str)-8) >> (8 * uint(8-rem))
		} else {
			for k := range rem {
				x |= uint64(str[i+k]) << (8 * uint(k))
			}
		}
		high |= x
		mask[i>>6&1] |= moveMask(swarAlnum(x)) << (uint(i) & 63)
		binary.LittleEndian.PutUint64(codes[i:i+8], asciiCodes(x))
	}
	if high&swarHigh != 0 {
		return false
	}
	t.chars = bits.OnesCount64(mask[0]) + bits.OnesCount64(mask[1])
	words := t.words
	n := 0
	if len(str) <= 64 {
		starts := mask[0] &^ (mask[0] << 1)
		ends := mask[0] &^ (mask[0] >> 1)
		for ; starts != 0; n++ {
			start := bits.TrailingZeros64(starts)
			size := bits.TrailingZeros64(ends) + 1 - start
			starts &= starts - 1
			ends &= ends - 1
			words[n] = packWord(codes, start, size)
		}
	} else {
		// Two words of mask: a word may run from the first into the second.
		starts := [2]uint64{mask[0] &^ (mask[0] << 1), mask[1] &^ (mask[1]<<1 | mask[0]>>63)}
		ends := [2]uint64{mask[0] &^ (mask[0]>>1 | mask[1]<<63), mask[1] &^ (mask[1] >> 1)}
		e := 0 // the half of ends in use
		for s := range 2 {
			for ; starts[s] != 0; n++ {
				start := 64*s + bits.TrailingZeros64(starts[s])
				starts[s] &= starts[s] - 1
				if ends[e] == 0 {
					e = 1
				}
				end := 64*e + bits.TrailingZeros64(ends[e]) + 1
				ends[e] &= ends[e] - 1
				words[n] = packWord(codes, start, end-start)
			}
		}
	}
	t.words = t.words[:n] // self-assignment: escape analysis keeps the arrays on the stack
	return true
}

// packWord is the packed word of the size bytes from start whose codes are in codes.
func packWord(codes []byte, start, size int) uint64 {
	c := binary.BigEndian.Uint64(codes[start:start+8]) & wordKeyMasks[uint8(size)]
	return c | uint64(size)<<8 | uint64(start)
}

// sort sorts the words as cmpWords orders them and finds the repeats.
func (t *asciiText) sort() {
	w := t.words
	var same uint64 // a bit for each word whose key is that of the one before
	if len(w) <= 8 {
		same = sort8(w) & (1<<uint(len(w)) - 1)
	} else {
		// Insertion sort: few descriptions have more than 8 words.
		for i := 1; i < len(w); i++ {
			x := w[i]
			j := i
			for ; j > 0 && w[j-1] > x; j-- {
				w[j] = w[j-1]
			}
			w[j] = x
		}
		for k := 1; k < len(w); k++ {
			if (w[k]^w[k-1])>>16 == 0 {
				same |= 1 << uint(k)
			}
		}
	}
	t.rep = 0
	if same != 0 {
		t.sortSame(same)
	}
}

// sortSame orders the words that share their key (bits in same) and finds the repeats
// among them: words past keyBytes bytes are in order of length, not yet of their further
// bytes.
func (t *asciiText) sortSame(same uint64) {
	w := t.words
	for m := same; m != 0; m &= m - 1 {
		if k := bits.TrailingZeros64(m); wordLen(w[k]) > keyBytes && wordLen(w[k-1]) > keyBytes {
			// Sort again, now nearly in order, with the full comparison.
			for i := 1; i < len(w); i++ {
				x := w[i]
				j := i
				for ; j > 0 && cmpWords(t, w[j-1], t, x) > 0; j-- {
					w[j] = w[j-1]
				}
				w[j] = x
			}
			break
		}
	}
	for m := same; m != 0; m &= m - 1 {
		k := bits.TrailingZeros64(m)
		if (w[k]^w[k-1])>>8 == 0 && (wordLen(w[k]) <= keyBytes || cmpWords(t, w[k-1], t, w[k]) == 0) {
			t.rep |= 1 << uint(k)
			t.chars -= wordLen(w[k])
		}
	}
}

// sort8 sorts up to 8 words with the 19 compare-exchanges of an optimal sorting network
// for 8 (Knuth, TAOCP 5.3.4), on the rest of the 8 filled with the largest value, which no
// packed word has. Each exchange is a min and a max, which the compiler makes conditional
// moves. It returns a bit for each of the 8 whose key is that of the one before, found
// while the words are still in registers.
func sort8(w []uint64) (same uint64) {
	v := (*[8]uint64)(w[:8:8])
	n := len(w)
	// pad(k) is all ones past the words, 0 on them.
	pad := func(k int) uint64 { return uint64((n - 1 - k) >> 63) }
	x0, x1, x2, x3 := v[0]|pad(0), v[1]|pad(1), v[2]|pad(2), v[3]|pad(3)
	x4, x5, x6, x7 := v[4]|pad(4), v[5]|pad(5), v[6]|pad(6), v[7]|pad(7)
	x0, x2 = min(x0, x2), max(x0, x2)
	x1, x3 = min(x1, x3), max(x1, x3)
	x4, x6 = min(x4, x6), max(x4, x6)
	x5, x7 = min(x5, x7), max(x5, x7)
	x0, x4 = min(x0, x4), max(x0, x4)
	x1, x5 = min(x1, x5), max(x1, x5)
	x2, x6 = min(x2, x6), max(x2, x6)
	x3, x7 = min(x3, x7), max(x3, x7)
	x0, x1 = min(x0, x1), max(x0, x1)
	x2, x3 = min(x2, x3), max(x2, x3)
	x4, x5 = min(x4, x5), max(x4, x5)
	x6, x7 = min(x6, x7), max(x6, x7)
	x2, x4 = min(x2, x4), max(x2, x4)
	x3, x5 = min(x3, x5), max(x3, x5)
	x1, x4 = min(x1, x4), max(x1, x4)
	x3, x6 = min(x3, x6), max(x3, x6)
	x1, x2 = min(x1, x2), max(x1, x2)
	x3, x4 = min(x3, x4), max(x3, x4)
	x5, x6 = min(x5, x6), max(x5, x6)
	v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7] = x0, x1, x2, x3, x4, x5, x6, x7
	return sameKey(x0, x1)<<1 | sameKey(x1, x2)<<2 | sameKey(x2, x3)<<3 | sameKey(x3, x4)<<4 |
		sameKey(x4, x5)<<5 | sameKey(x5, x6)<<6 | sameKey(x6, x7)<<7
}

// sameKey is 1 when the packed words x and y have the same key, else 0.
func sameKey(x, y uint64) uint64 {
	if (x^y)>>16 == 0 {
		return 1
	}
	return 0
}

// join writes to join the codes of the words whose bits are in m, in order, each followed
// by a space's code (0), and returns their length. join has 16 bytes of room past them.
func (t *asciiText) join(join []byte, m uint64) int {
	at := 0
	for ; m != 0; m &= m - 1 {
		w := t.words[bits.TrailingZeros64(m)&63]
		start, n := wordStart(w), wordLen(w)
		// 16 bytes whatever the length: what lies past the word is written over next.
		*(*[16]byte)(join[at : at+16]) = *(*[16]byte)(t.codes[start : start+16])
		for k := 16; k < n; k += 16 {
			*(*[16]byte)(join[at+k : at+k+16]) = *(*[16]byte)(t.codes[start+k : start+k+16])
		}
		join[at+n] = 0
		at += n + 1
	}
	return at
}

// ratioASCII is similarityRatio for two texts of at most asciiMax bytes; ok is false when
// a text is not ASCII.
//
// The texts are set field by field: a composite literal is built in a temporary and
// copied 16 bytes at a time, and those loads wait for the 8-byte stores they straddle
// (7 % of the oracle pairs' time).
func ratioASCII(a, b string, cutoff float64) (num, den int, ok bool) {
	if len(a) <= 64 && len(b) <= 64 {
		var wa, wb [33]uint64 // a text of 64 bytes has at most 32 words
		var ca, cb [64 + 16]byte
		var ta, tb asciiText
		ta.text, ta.codes, ta.words = a, ca[:], wa[:]
		tb.text, tb.codes, tb.words = b, cb[:], wb[:]
		return scoreASCII(&ta, &tb, cutoff)
	}
	var wa, wb [asciiMax/2 + 1]uint64
	var ca, cb [asciiMax + 16]byte
	var ta, tb asciiText
	ta.text, ta.codes, ta.words = a, ca[:], wa[:]
	tb.text, tb.codes, tb.words = b, cb[:], wb[:]
	return scoreASCII(&ta, &tb, cutoff)
}

// scoreASCII splits, sorts and scores a and b.
func scoreASCII(ta, tb *asciiText, cutoff float64) (num, den int, ok bool) {
	if !ta.tokenize() || !tb.tokenize() {
		return 0, 0, false
	}
	if len(ta.words) == 0 || len(tb.words) == 0 {
		return 0, 0, true
	}
	ta.sort()
	tb.sort()
	num, den = scoreSorted(ta, tb, cutoff)
	return num, den, true
}

// scoreSorted is scoreASCII on two texts already split and sorted, each with a word at
// least (the half of the work a Prepared text keeps). It only reads ta and tb.
func scoreSorted(ta, tb *asciiText, cutoff float64) (num, den int) {
	// Bits for the words in I (both sides' words), merging the sorted words.
	wa, wb := ta.words, tb.words
	na, nb := len(wa), len(wb)
	var sectA, sectB uint64
	// Most words differ in their keys: the smaller side steps without a branch that would
	// go either way. There is no call in the loop: one, even on a path seldom taken, made
	// the compiler keep i, j and the words on the stack (10 instructions a turn more).
	for i, j := 0, 0; i < na && j < nb; {
		p, q := wa[i], wb[j]
		if p>>16 != q>>16 {
			lt := 0
			if p < q {
				lt = 1
			}
			i += lt
			j += 1 - lt
			continue
		}
		c := wordLen(p) - wordLen(q)
		if wordLen(p) > keyBytes && wordLen(q) > keyBytes {
			c = cmpTails(ta.codes, p, tb.codes, q)
		}
		switch {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			sectA |= 1 << (uint(i) & 63)
			sectB |= 1 << (uint(j) & 63)
			i++
			j++
		}
	}
	// Shifting by 64 gives 0, so the masks keep every word of 64 too.
	onlyA := ^(sectA | ta.rep) & (1<<uint(na) - 1)
	onlyB := ^(sectB | tb.rep) & (1<<uint(nb) - 1)
	sectA &^= ta.rep
	if sectA != 0 && (onlyA == 0 || onlyB == 0) {
		return 1, 1 // one side's words are all in the other
	}
	// The joins' lengths from the words' bytes: a text's words less the common ones, and
	// a space between two words.
	sectChars := 0
	for m := sectA; m != 0; m &= m - 1 {
		sectChars += wordLen(wa[bits.TrailingZeros64(m)&63])
	}
	sect := max(sectChars+bits.OnesCount64(sectA)-1, 0)
	ab := max(ta.chars-sectChars+bits.OnesCount64(onlyA)-1, 0)
	ba := max(tb.chars-sectChars+bits.OnesCount64(onlyB)-1, 0)
	if num, den, below := belowCutoff(sect, ab, ba, cutoff); below {
		return num, den
	}
	lcs := 0
	if ab > 0 && ba > 0 && !lcsCannotWin(sect, ab, ba) {
		switch {
		case ab <= 64:
			lcs = lcsWords(ta, onlyA, ab, tb, onlyB)
		case ba <= 64:
			lcs = lcsWords(tb, onlyB, ba, ta, onlyA)
		default:
			lcs = lcsLongJoins(ta, onlyA, tb, onlyB)
		}
	}
	return setScore(sect, ab, ba, lcs)
}

// lcsWords is the LCS of the join of p's words in pm (plen bytes, at most 64) and the join
// of t's words in tm, read from the texts' codes: the joins are never written. A space
// between two words is code 0.
func lcsWords(p *asciiText, pm uint64, plen int, t *asciiText, tm uint64) int {
	var match [64]uint64
	bit := uint64(1)
	for m := pm; m != 0; m &= m - 1 {
		w := p.words[bits.TrailingZeros64(m)&63]
		for _, c := range p.codes[wordStart(w) : wordStart(w)+wordLen(w)] {
			match[c&63] |= bit
			bit <<= 1
		}
		match[0] |= bit // the space after the word
		bit <<= 1
	}
	// The last word has no space after it. (At 64 the shift gives 0: its bit was never set.)
	match[0] &^= 1 << uint(plen)
	S := ^uint64(0)
	space := uint64(0) // no space before the first word: a step on no bits leaves S as it is
	for m := tm; m != 0; m &= m - 1 {
		w := t.words[bits.TrailingZeros64(m)&63]
		S = lcsStep(S, space)
		space = match[0]
		for _, c := range t.codes[wordStart(w) : wordStart(w)+wordLen(w)] {
			S = lcsStep(S, match[c&63])
		}
	}
	return bits.OnesCount64(^S)
}

// lcsLongJoins is the LCS of the joins of ta's words in ma and tb's in mb when both are
// longer than 64 (texts of 65 to asciiMax bytes): the joins are written out for the
// two-word kernel.
func lcsLongJoins(ta *asciiText, ma uint64, tb *asciiText, mb uint64) int {
	var ja, jb [asciiMax + 32]byte
	la, lb := ta.join(ja[:], ma), tb.join(jb[:], mb)
	return lcsCodes(ja[:la-1], jb[:lb-1])
}

// cmpWords orders the word p of tp and the word q of tq bytewise on their lower-cased
// forms.
func cmpWords(tp *asciiText, p uint64, tq *asciiText, q uint64) int {
	switch {
	case p>>16 != q>>16:
		if p < q {
			return -1
		}
		return 1
	case wordLen(p) > keyBytes && wordLen(q) > keyBytes:
		return cmpTails(tp.codes, p, tq.codes, q)
	}
	return wordLen(p) - wordLen(q) // the shorter is a prefix of the longer, or they are equal
}

// cmpTails orders two words longer than keyBytes whose keys are equal by the codes past
// the keys, which keep the bytes' order, 8 at a time: past a word they are masked to 0,
// below any letter's or digit's.
func cmpTails(cp []byte, p uint64, cq []byte, q uint64) int {
	lp, lq := wordLen(p), wordLen(q)
	sp, sq := wordStart(p), wordStart(q)
	for k := keyBytes; k < lp && k < lq; k += 8 {
		x := binary.BigEndian.Uint64(cp[sp+k:sp+k+8]) & keyMasks[min(uint(lp-k), 8)]
		y := binary.BigEndian.Uint64(cq[sq+k:sq+k+8]) & keyMasks[min(uint(lq-k), 8)]
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return lp - lq
}

// lcsCannotWin reports whether ratio(I+" "+A, I+" "+B) stays below one of the other two
// ratios whatever the LCS of A and B, so that setScore's answer does not depend on it.
func lcsCannotWin(sect, ab, ba int) bool {
	if sect == 0 {
		return false
	}
	sectAB, sectBA := sect+1+ab, sect+1+ba
	// The LCS ratio at its largest, with the LCS the shorter join.
	ln, ld := sectAB+sectBA-(ab+ba-2*min(ab, ba)), sectAB+sectBA
	// ratio(I, I+" "+A) and ratio(I, I+" "+B).
	n1, d1 := 2*sect, sect+sectAB
	n2, d2 := 2*sect, sect+sectBA
	return ln*d1 < n1*ld || ln*d2 < n2*ld
}

// lcsCodes is the LCS of the joins p and t, written as codes below 64, at most asciiMax
// long.
func lcsCodes(p, t []byte) int {
	if len(p) > 64 {
		p, t = t, p
	}
	if len(p) > 64 {
		return lcsCodes2(p, t)
	}
	var pm [64]uint64
	bit := uint64(1)
	for _, c := range p {
		pm[c&63] |= bit
		bit <<= 1
	}
	S := ^uint64(0)
	for _, c := range t {
		S = lcsStep(S, pm[c&63])
	}
	return bits.OnesCount64(^S)
}

// lcsCodes2 is lcsCodes for a pattern p of 65 to 128 codes: two words of bits, the
// add's carry running from the first to the second.
func lcsCodes2(p, t []byte) int {
	var pm [64][2]uint64
	for i, c := range p {
		pm[c&63][i>>6&1] |= 1 << (uint(i) & 63)
	}
	S0, S1 := ^uint64(0), ^uint64(0)
	for _, c := range t {
		m := &pm[c&63]
		u0, u1 := S0&m[0], S1&m[1]
		x0, carry := bits.Add64(S0, u0, 0)
		x1, _ := bits.Add64(S1, u1, carry)
		S0, S1 = x0|(S0-u0), x1|(S1-u1)
	}
	return bits.OnesCount64(^S0) + bits.OnesCount64(^S1)
}
