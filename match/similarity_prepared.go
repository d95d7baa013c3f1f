package match

// Prepared is a text made ready for SimilarityPrepared: split into words, lower-cased,
// sorted and rid of repeats once, so that scoring it against many other texts does not
// do that work again for each pair. Splitting and sorting are about half of what
// Similarity costs a pair on ledger and bank descriptions; the other half (the set
// merge, the joins and their edit distance) depends on both texts and stays.
//
// A Prepared is read-only once made: it may be scored from several goroutines at once.
type Prepared struct {
	short asciiText // an ASCII text of at most asciiMax bytes: its codes and sorted words
	long  *side     // any other text: its words, lower-cased into its own buffer when not ASCII
	text  string
}

// Prepare splits text for SimilarityPrepared. It allocates the prepared form (about 3
// bytes for each byte of an ASCII text of up to 128 bytes).
func Prepare(text string) *Prepared {
	p := &Prepared{text: text}
	if len(text) == 0 {
		return p
	}
	if len(text) <= asciiMax {
		n := len(text)
		p.short.text = text
		p.short.codes = make([]byte, n+32)
		p.short.words = make([]uint64, max(n/2+1, 8))
		if p.short.tokenize() {
			p.short.sort()
			return p
		}
		p.short = asciiText{}
	}
	p.long = &side{}
	p.long.tokenize(text)
	p.long.sortDedupe()
	return p
}

// Text is the text p was prepared from.
func (p *Prepared) Text() string { return p.text }

// SimilarityPrepared is Similarity(a.Text(), b.Text()), to the same integer, from the
// prepared forms.
func SimilarityPrepared(a, b *Prepared) int {
	num, den := ratioPrepared(a, b, 0)
	if den == 0 {
		return 0
	}
	return int(100 * num / den)
}

// ratioPrepared is similarityRatio on prepared texts.
func ratioPrepared(a, b *Prepared, cutoff float64) (num, den int) {
	switch {
	case len(a.text) == 0 || len(b.text) == 0:
		return 0, 0
	case a.short.codes != nil && b.short.codes != nil:
		if len(a.short.words) == 0 || len(b.short.words) == 0 {
			return 0, 0
		}
		if len(a.text) <= 64 && len(b.text) <= 64 {
			var ja, jb [64 + 32]byte
			return scoreSorted(&a.short, &b.short, ja[:], jb[:], cutoff)
		}
		var ja, jb [asciiMax + 32]byte
		return scoreSorted(&a.short, &b.short, ja[:], jb[:], cutoff)
	case a.long != nil && b.long != nil:
		if len(a.long.toks) == 0 || len(b.long.toks) == 0 {
			return 0, 0
		}
		s := simPool.Get().(*simScratch)
		num, den = s.score(a.long, b.long, cutoff)
		simPool.Put(s)
		return num, den
	}
	// One of each form: the general path, preparing the short side again.
	return similarityRatio(a.text, b.text, cutoff)
}
