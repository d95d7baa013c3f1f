package match

import "math/bits"

// The ASCII path: two ASCII texts of at most asciiMax bytes each, scored with fixed arrays
// on the stack and no join written as text. A word is one uint64, a packed word:
//
//	bits 63-16  the codes of its first 8 bytes, 6 bits each, zero past the word
//	bits 15-8   its length in bytes
//	bits 7-0    its start in the text
//
// A byte's code (asciiCodes) is the same for both cases of a letter and keeps the order
// of the lower-cased bytes (digits 16-25 before letters 33-58), and a shorter word has a
// zero code where a longer one has a letter or digit. So packed words sort by their
// integers as Python sorts the lower-cased words, except among words of more than 8 bytes
// that share their first 8 (cmpWords reads the rest for those), and two words of at most
// 8 bytes are equal exactly when their packed words agree above the start.

// asciiMax is the longest text the ASCII path takes; the start and the length of a word
// must fit in a byte.
const asciiMax = 128

// asciiCodes maps each of 8 ASCII bytes c to its code c&0x1f | (c&0x40)>>1: letters of
// either case to 33-58, digits to 16-25, a space to 0.
func asciiCodes(x uint64) uint64 {
	return x&0x1f1f1f1f1f1f1f1f | (x>>1)&0x2020202020202020
}

// packWord is the packed word of the n bytes of text from start (ASCII letters and
// digits).
func packWord(text string, start, n int) uint64 {
	var x uint64
	if start+8 <= len(text) {
		x = load64BE(text, start)
	} else {
		x = load8(text, start)
	}
	return squeeze(asciiCodes(x)&keyMasks[min(uint(n), 8)])<<16 | uint64(n)<<8 | uint64(start)
}

// squeeze packs the 6-bit codes in the 8 bytes of c, in order, into the low 48 bits:
// pairs, then fours, then all eight.
func squeeze(c uint64) uint64 {
	c = c&0x00ff00ff00ff00ff | (c&0xff00ff00ff00ff00)>>2
	c = c&0x0000ffff0000ffff | (c&0xffff0000ffff0000)>>4
	return c&0x00000000ffffffff | (c&0xffffffff00000000)>>8
}

func wordLen(w uint64) int   { return int(w >> 8 & 0xff) }
func wordStart(w uint64) int { return int(w & 0xff) }

// cmpWords orders the word p of text tp and the word q of text tq bytewise on their
// lower-cased forms.
func cmpWords(tp string, p uint64, tq string, q uint64) int {
	if p>>16 != q>>16 {
		if p < q {
			return -1
		}
		return 1
	}
	lp, lq := wordLen(p), wordLen(q)
	if lp <= 8 || lq <= 8 {
		return lp - lq // the shorter is a prefix of the longer, or they are equal
	}
	wp := tp[wordStart(p)+8 : wordStart(p)+lp]
	wq := tq[wordStart(q)+8 : wordStart(q)+lq]
	for k := 0; k < len(wp) && k < len(wq); k++ {
		// OR 0x20 lower-cases a letter and leaves a digit alone.
		if cp, cq := wp[k]|0x20, wq[k]|0x20; cp != cq {
			return int(cp) - int(cq)
		}
	}
	return len(wp) - len(wq)
}

// asciiWords writes the packed words of str to words, in text order, and returns their
// number; ok is false when str is not ASCII. words has room for len(str)/2+1 words.
func asciiWords(str string, words []uint64) (n int, ok bool) {
	// A bit for each letter or digit, 8 bytes at a time.
	var mask [asciiMax / 64]uint64
	var high uint64
	i := 0
	for ; i+8 <= len(str); i += 8 {
		x := load64(str, i)
		high |= x
		mask[i>>6&1] |= moveMask(swarAlnum(x)) << (uint(i) & 63)
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
	}
	if high&swarHigh != 0 {
		return 0, false
	}
	if len(str) > 64 {
		return longWords(str, mask, words), true
	}
	starts := mask[0] &^ (mask[0] << 1)
	ends := mask[0] &^ (mask[0] >> 1)
	for starts != 0 {
		start := bits.TrailingZeros64(starts)
		end := bits.TrailingZeros64(ends) + 1
		starts &= starts - 1
		ends &= ends - 1
		size := end - start
		var x uint64
		if start+8 <= len(str) {
			x = load64BE(str, start)
		} else {
			x = load8(str, start)
		}
		words[n] = squeeze(asciiCodes(x)&keyMasks[min(uint(size), 8)])<<16 | uint64(size)<<8 | uint64(start)
		n++
	}
	return n, true
}

// longWords is asciiWords' second half for a text of 65 to asciiMax bytes, whose mask of
// letters and digits is two words.
func longWords(str string, mask [2]uint64, words []uint64) (n int) {
	starts := [2]uint64{mask[0] &^ (mask[0] << 1), mask[1] &^ (mask[1]<<1 | mask[0]>>63)}
	ends := [2]uint64{mask[0] &^ (mask[0]>>1 | mask[1]<<63), mask[1] &^ (mask[1] >> 1)}
	e := 0 // the half of ends in use
	for s := range 2 {
		for starts[s] != 0 {
			start := 64*s + bits.TrailingZeros64(starts[s])
			starts[s] &= starts[s] - 1
			if ends[e] == 0 {
				e = 1
			}
			end := 64*e + bits.TrailingZeros64(ends[e]) + 1
			ends[e] &= ends[e] - 1
			words[n] = packWord(str, start, end-start)
			n++
		}
	}
	return n
}

// sortWords sorts the packed words w of text as cmpWords orders them. w has room for 8
// words at least.
func sortWords(text string, w []uint64) {
	if len(w) <= 8 {
		sort8(w)
	} else {
		// Insertion sort: few descriptions have more than 8 words.
		for i := 1; i < len(w); i++ {
			t := w[i]
			j := i
			for ; j > 0 && w[j-1] > t; j-- {
				w[j] = w[j-1]
			}
			w[j] = t
		}
	}
	// Words past 8 bytes that share their first 8 are in order of length, not yet of their
	// further bytes: sort again, now nearly in order, with the full comparison.
	for i := 1; i < len(w); i++ {
		if (w[i]^w[i-1])>>16 == 0 && wordLen(w[i-1]) > 8 {
			for i := 1; i < len(w); i++ {
				t := w[i]
				j := i
				for ; j > 0 && cmpWords(text, w[j-1], text, t) > 0; j-- {
					w[j] = w[j-1]
				}
				w[j] = t
			}
			return
		}
	}
}

// sort8 sorts up to 8 words with the 19 compare-exchanges of an optimal sorting network
// for 8 (Knuth, TAOCP 5.3.4), on the rest of the 8 filled with the largest value. Each
// exchange is a min and a max, which the compiler makes conditional moves: an insertion
// sort's branches, taken or not as the words fall, cost more in mispredictions than the
// whole network.
func sort8(w []uint64) {
	const top = ^uint64(0)
	v := (*[8]uint64)(w[:8:8])
	for k := len(w); k < 8; k++ {
		v[k] = top
	}
	x0, x1, x2, x3, x4, x5, x6, x7 := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
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
}

// repeats returns a bit for each word of w (sorted) equal to the one before it.
func repeats(text string, w []uint64) (m uint64) {
	for k := 1; k < len(w); k++ {
		if (w[k]^w[k-1])>>8 == 0 && (wordLen(w[k]) <= 8 || cmpWords(text, w[k-1], text, w[k]) == 0) {
			m |= 1 << uint(k)
		}
	}
	return m
}

// joinCodes writes to join the codes of the words of w (of text) whose bits are in m, in
// order, each followed by a space's code (0), and returns their length.
func joinCodes(join []byte, text string, w []uint64, m uint64) int {
	at := 0
	for ; m != 0; m &= m - 1 {
		word := w[bits.TrailingZeros64(m)&63]
		start, n := wordStart(word), wordLen(word)
		if n <= 8 && start+8 <= len(text) {
			putBE(join[at:at+8], asciiCodes(load64BE(text, start)))
			join[at+n] = 0
			at += n + 1
		} else {
			at = appendLongCodes(join, at, text, word)
		}
	}
	return at
}

func appendLongCodes(join []byte, at int, text string, w uint64) int {
	start, n := wordStart(w), wordLen(w)
	for k := 0; k < n; k += 8 {
		putBE(join[at+k:at+k+8], asciiCodes(load8(text, start+k)))
	}
	join[at+n] = 0
	return at + n + 1
}

// putBE writes x to b[0:8], big-endian (the compiler makes it one store).
func putBE(b []byte, x uint64) {
	_ = b[7]
	b[0], b[1], b[2], b[3] = byte(x>>56), byte(x>>48), byte(x>>40), byte(x>>32)
	b[4], b[5], b[6], b[7] = byte(x>>24), byte(x>>16), byte(x>>8), byte(x)
}

// ratioASCII is similarityRatio for two texts of at most asciiMax bytes; ok is false when
// a text is not ASCII.
func ratioASCII(a, b string, cutoff float64) (num, den int, ok bool) {
	if len(a) <= 64 && len(b) <= 64 {
		var wa, wb [33]uint64 // a text of 64 bytes has at most 32 words
		var ja, jb [64 + 16]byte
		return scoreASCII(a, b, wa[:], wb[:], ja[:], jb[:], cutoff)
	}
	var wa, wb [asciiMax/2 + 1]uint64
	var ja, jb [asciiMax + 16]byte
	return scoreASCII(a, b, wa[:], wb[:], ja[:], jb[:], cutoff)
}

// scoreASCII scores a and b with room for their words in wa and wb and for the codes of
// the joins of the words only in a and only in b in ja and jb.
func scoreASCII(a, b string, wa, wb []uint64, ja, jb []byte, cutoff float64) (num, den int, ok bool) {
	na, ok := asciiWords(a, wa)
	if !ok {
		return 0, 0, false
	}
	nb, ok := asciiWords(b, wb)
	if !ok {
		return 0, 0, false
	}
	if na == 0 || nb == 0 {
		return 0, 0, true
	}
	wa, wb = wa[:na], wb[:nb]
	sortWords(a, wa)
	sortWords(b, wb)

	// Bits for the words in I (both sides' words) and for repeats of the word before.
	repA, repB := repeats(a, wa), repeats(b, wb)
	var sectA, sectB uint64
	for i, j := 0, 0; i < na && j < nb; {
		p, q := wa[i], wb[j]
		if p>>16 != q>>16 {
			// Most words differ in their first 8 bytes; step the smaller side without
			// a branch that would go either way.
			lt := 0
			if p < q {
				lt = 1
			}
			i += lt
			j += 1 - lt
			continue
		}
		switch c := cmpWords(a, p, b, q); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			sectA |= 1 << uint(i)
			sectB |= 1 << uint(j)
			i++
			j++
		}
	}
	// Shifting by na = 64 gives 0, so the masks keep every word then too.
	onlyA := ^(sectA | repA) & (1<<uint(na) - 1)
	onlyB := ^(sectB | repB) & (1<<uint(nb) - 1)
	sectA &^= repA
	if sectA != 0 && (onlyA == 0 || onlyB == 0) {
		return 1, 1, true // one side's words are all in the other
	}
	sect := 0
	for m := sectA; m != 0; m &= m - 1 {
		sect += wordLen(wa[bits.TrailingZeros64(m)&63]) + 1
	}
	la := joinCodes(ja, a, wa, onlyA)
	lb := joinCodes(jb, b, wb, onlyB)
	sect, ab, ba := max(sect-1, 0), max(la-1, 0), max(lb-1, 0)
	if num, den, below := belowCutoff(sect, ab, ba, cutoff); below {
		return num, den, true
	}
	lcs := 0
	if ab > 0 && ba > 0 && !lcsCannotWin(sect, ab, ba) {
		lcs = lcsCodes(ja[:ab], jb[:ba])
	}
	num, den = setScore(sect, ab, ba, lcs)
	return num, den, true
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
