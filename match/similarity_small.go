package match

import "math/bits"

// smallMax is the longest text ratioSmall takes: its words fit in fixed arrays on the
// stack and the LCS pattern in one machine word.
const smallMax = 64

// smallSide is one ASCII text of at most smallMax bytes and its words.
type smallSide struct {
	text string
	keys [smallMax / 2]uint64
	pos  [smallMax / 2]uint8 // a word's start in text
	size [smallMax / 2]uint8 // a word's length
	n    int
	sig  uint64 // the keyBit of every word
	rep  uint32 // the words whose keyBit an earlier word has: maybe repeats
}

// keyBit is one bit chosen by a hash of key, for a quick test of set membership.
func keyBit(key uint64) uint64 {
	return 1 << ((key * 0x9E3779B97F4A7C15) >> 58)
}

// tokenize finds the words of str (at most smallMax bytes) and reports whether str is
// ASCII.
func (sd *smallSide) tokenize(str string) bool {
	sd.text = str
	var mask, high uint64
	if len(str) >= 8 {
		i := 0
		for ; i+8 <= len(str); i += 8 {
			x := load64(str, i)
			high |= x
			mask |= moveMask(swarAlnum(x)) << uint(i)
		}
		if rem := len(str) - i; rem > 0 { // the last 8 bytes, shifted down to the rest
			x := load64(str, len(str)-8) >> uint(8*(8-rem))
			high |= x
			mask |= moveMask(swarAlnum(x)) << uint(i)
		}
	} else {
		for i := 0; i < len(str); i++ {
			high |= uint64(str[i])
			if lowerAlnum[str[i]&0x7f] != 0 {
				mask |= 1 << uint(i)
			}
		}
	}
	if high&swarHigh != 0 {
		return false
	}
	starts := mask &^ (mask << 1)
	ends := mask &^ (mask >> 1)
	n := 0
	var sig uint64
	var rep uint32
	for starts != 0 {
		start := bits.TrailingZeros64(starts)
		end := bits.TrailingZeros64(ends) + 1
		starts &= starts - 1
		ends &= ends - 1
		var key uint64
		if len(str) >= 8 {
			// Near the end, load the last 8 bytes and shift the word to the top.
			off := min(start, len(str)-8)
			key = load64BE(str, off) << uint(8*(start-off))
		} else {
			key = load8(str, start)
		}
		key = (key | 0x2020202020202020) & keyMasks[min(uint(end-start), 8)]
		bit := keyBit(key)
		if sig&bit != 0 {
			rep |= 1 << uint(n&31)
		}
		sig |= bit
		sd.keys[n&31] = key
		sd.pos[n&31] = uint8(start)
		sd.size[n&31] = uint8(end - start)
		n++
	}
	sd.n, sd.sig, sd.rep = n, sig, rep
	return true
}

// tail is the part of word i past its first 8 bytes (as written, not lower-cased).
func (sd *smallSide) tail(i int) string {
	p, n := int(sd.pos[i&31]), int(sd.size[i&31])
	return sd.text[p+min(n, 8) : p+n]
}

// word is word i as written.
func (sd *smallSide) word(i uint8) string {
	p := int(sd.pos[i&31])
	return sd.text[p : p+int(sd.size[i&31])]
}

// cmpTails orders two words with equal keys by the bytes past their first 8.
func cmpTails(sa *smallSide, i int, sb *smallSide, j int) int {
	if sa.size[i&31] <= 8 && sb.size[j&31] <= 8 {
		return 0
	}
	wa, wb := sa.tail(i), sb.tail(j)
	for k := 0; k < len(wa) && k < len(wb); k++ {
		if ca, cb := wa[k]|0x20, wb[k]|0x20; ca != cb {
			return int(ca) - int(cb)
		}
	}
	return len(wa) - len(wb)
}

// find returns the index of the first of sd's words [0, n) equal to o's word j, or -1.
func (sd *smallSide) find(n int, o *smallSide, j int) int {
	key := o.keys[j&31]
	for k := range sd.keys[:n] {
		if sd.keys[k] == key && cmpTails(sd, k, o, j) == 0 {
			return k
		}
	}
	return -1
}

// sortWords sorts the word indices idx of sd.
func (sd *smallSide) sortWords(idx []uint8) {
	for i := 1; i < len(idx); i++ {
		t := idx[i]
		key := sd.keys[t&31]
		j := i
		for ; j > 0; j-- {
			k := sd.keys[idx[j-1]&31]
			if k < key || k == key && cmpTails(sd, int(idx[j-1]), sd, int(t)) < 0 {
				break
			}
			idx[j] = idx[j-1]
		}
		idx[j] = t
	}
}

// ratioSmall is ratio for two texts of at most smallMax bytes, on the stack; ok is false
// when a text is not ASCII.
func ratioSmall(a, b string, cutoff float64) (num, den int, ok bool) {
	var sa, sb smallSide
	if !sa.tokenize(a) || !sb.tokenize(b) {
		return 0, 0, false
	}
	if sa.n == 0 || sb.n == 0 {
		return 0, 0, true
	}
	var onlyA, onlyB [smallMax / 2]uint8
	var inA uint32 // b's words found in a
	nA, nB := 0, 0
	sect, nSect, ab, ba := 0, 0, 0, 0
	for i := range sa.n {
		if sa.rep&(1<<uint(i)) != 0 && sa.find(i, &sa, i) >= 0 {
			continue // a repeat
		}
		size := int(sa.size[i&31])
		j := -1
		if sb.sig&keyBit(sa.keys[i&31]) != 0 {
			j = sb.find(sb.n, &sa, i)
		}
		if j >= 0 {
			inA |= 1 << uint(j)
			sect += size
			nSect++
		} else {
			onlyA[nA&31] = uint8(i)
			nA++
			ab += size
		}
	}
	if nSect > 0 && nA == 0 {
		return 1, 1, true
	}
	for j := range sb.n {
		if inA&(1<<uint(j)) != 0 || sb.rep&(1<<uint(j)) != 0 && sb.find(j, &sb, j) >= 0 {
			continue
		}
		onlyB[nB&31] = uint8(j)
		nB++
		ba += int(sb.size[j&31])
	}
	if nSect > 0 && nB == 0 {
		return 1, 1, true
	}
	sect += max(nSect-1, 0)
	ab += max(nA-1, 0)
	ba += max(nB-1, 0)
	if num, den, below := belowCutoff(sect, ab, ba, cutoff); below {
		return num, den, true
	}
	lcs := 0
	if nA > 0 && nB > 0 {
		sa.sortWords(onlyA[:nA])
		sb.sortWords(onlyB[:nB])
		// A's join is the pattern: it is no longer than a.
		lcs = lcsSmall(&sa, onlyA[:nA], &sb, onlyB[:nB])
	}
	num, den = setScore(sect, ab, ba, lcs)
	return num, den, true
}
