package match

import (
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

// The length of the longest common subsequence (LCS) of two strings, which gives their
// Indel distance: |a| + |b| - 2*LCS. All three forms are the bit-parallel algorithm of
// Hyyrö ("Bit-parallel LCS-length computation revisited", 2004), as rapidfuzz computes it:
// bit i of S is 0 when the LCS of the text read so far and the pattern's first i+1
// characters grew at character i. One text character costs an add, a subtract, an AND and
// an OR per 64 pattern characters, instead of a row of the dynamic-programming table.

// lcsStep reads one text character whose pattern bits are pm.
func lcsStep(S, pm uint64) uint64 {
	u := S & pm
	return (S + u) | (S - u)
}

// lcs is the LCS of a and b, in characters (code points). ascii says both are ASCII.
func (s *simScratch) lcs(a, b []byte, ascii bool) int {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	p, t := a, b
	if len(t) < len(p) {
		p, t = t, p
	}
	if ascii && len(p) <= 64 {
		return lcsASCII(&s.pm, p, t)
	}
	// utf8.RuneCount copies a []byte of more than 32 bytes past its first non-ASCII byte
	// into a string it allocates; a view of the join does not.
	ra := utf8.RuneCountInString(unsafe.String(unsafe.SliceData(a), len(a)))
	rb := utf8.RuneCountInString(unsafe.String(unsafe.SliceData(b), len(b)))
	if min(ra, rb) <= 64 {
		if rb < ra {
			a, b = b, a
		}
		return s.lcsShort(a, b)
	}
	return s.lcsBlocks(a, b)
}

// runeBits is the pattern bits of a code point past pm's 256.
type runeBits struct {
	r    rune
	bits uint64
}

// lcsShort is the single-word form on code points for a pattern p of at most 64: code
// points below 256 (ASCII and Latin-1: é, ü, ß) index pm, the others, a handful in a
// description, are found in a short list.
func (s *simScratch) lcsShort(pb, tb []byte) int {
	// Views, not copies: converting a join of more than 32 bytes to a string for the range
	// allocated, and the joins do not change while they are read.
	p, t := unsafe.String(unsafe.SliceData(pb), len(pb)), unsafe.String(unsafe.SliceData(tb), len(tb))
	s.wide = s.wide[:0]
	i := 0
	for _, r := range p {
		if r < 256 {
			s.pm[r] |= 1 << uint(i)
		} else {
			s.wide = addRuneBit(s.wide, r, 1<<uint(i))
		}
		i++
	}
	S := ^uint64(0)
	for _, r := range t {
		var m uint64
		if r < 256 {
			m = s.pm[r]
		} else {
			for _, w := range s.wide {
				if w.r == r {
					m = w.bits
					break
				}
			}
		}
		S = lcsStep(S, m)
	}
	for _, r := range p {
		if r < 256 {
			s.pm[r] = 0
		}
	}
	return bits.OnesCount64(^S)
}

func addRuneBit(wide []runeBits, r rune, bit uint64) []runeBits {
	for k := range wide {
		if wide[k].r == r {
			wide[k].bits |= bit
			return wide
		}
	}
	return append(wide, runeBits{r, bit})
}

// lcsASCII is the single-word form for an ASCII pattern p of at most 64 bytes. pm is zero
// on entry and on return: clearing only the pattern's bytes is cheaper than 2 KiB.
func lcsASCII(pm *[256]uint64, p, t []byte) int {
	for i, c := range p {
		pm[c] |= 1 << uint(i)
	}
	S := ^uint64(0)
	for _, c := range t {
		S = lcsStep(S, pm[c])
	}
	for _, c := range p {
		pm[c] = 0
	}
	return bits.OnesCount64(^S)
}

// lcsBlocks is the multi-word form, on code points, for long or non-ASCII text: the
// pattern's bits are ceil(len/64) words per distinct character, the add's carry runs from
// word to word.
func (s *simScratch) lcsBlocks(a, b []byte) int {
	s.runesA = appendRunes(s.runesA[:0], a)
	s.runesB = appendRunes(s.runesB[:0], b)
	p, t := s.runesA, s.runesB
	if len(t) < len(p) {
		p, t = t, p
	}
	words := (len(p) + 63) / 64
	clear(s.slots)
	s.pmBlocks = s.pmBlocks[:0]
	for i, r := range p {
		slot, ok := s.slots[r]
		if !ok {
			slot = int32(len(s.pmBlocks) / words)
			s.slots[r] = slot
			for range words {
				s.pmBlocks = append(s.pmBlocks, 0)
			}
		}
		s.pmBlocks[int(slot)*words+i/64] |= 1 << uint(i%64)
	}
	s.state = s.state[:0]
	for range words {
		s.state = append(s.state, ^uint64(0))
	}
	S := s.state
	for _, r := range t {
		slot, ok := s.slots[r]
		if !ok {
			continue // no pattern bit: S stays as it is
		}
		pm := s.pmBlocks[int(slot)*words : int(slot)*words+words]
		var carry uint64
		for w := range words {
			u := S[w] & pm[w]
			x, c := bits.Add64(S[w], u, carry)
			S[w] = x | (S[w] - u)
			carry = c
		}
	}
	n := 0
	for _, w := range S {
		n += bits.OnesCount64(^w)
	}
	return n
}

func appendRunes(dst []rune, b []byte) []rune {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		dst = append(dst, r)
		b = b[size:]
	}
	return dst
}
