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

// Prepare splits text for SimilarityPrepared. It allocates the prepared form: about 400
// bytes for an ASCII description of 50 bytes (a word of 8 bytes for each 2 of the text, a
// code for each byte), more for other texts.
func Prepare(text string) *Prepared {
	p := &Prepared{text: text}
	if len(text) == 0 {
		return p
	}
	if n := len(text); n <= asciiMax {
		if prepareShort(p, text, make([]uint64, max(n/2+1, 8)), make([]byte, n+32)) {
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
		return scoreSorted(&a.short, &b.short, cutoff)
	case a.long != nil && b.long != nil:
		if len(a.long.toks) == 0 || len(b.long.toks) == 0 {
			return 0, 0
		}
		s := simPool.Get().(*simScratch)
		num, den = s.score(a.long, b.long, cutoff)
		simPool.Put(s)
		return num, den
	}
	// One of each form: the short side is split again, the general way (it is ASCII and
	// short, so that is cheap), and scored against the other's side.
	s := simPool.Get().(*simScratch)
	sa, sb := a.long, b.long
	if sa == nil {
		s.a.tokenize(a.text)
		s.a.sortDedupe()
		sa = &s.a
	} else {
		s.b.tokenize(b.text)
		s.b.sortDedupe()
		sb = &s.b
	}
	if len(sa.toks) == 0 || len(sb.toks) == 0 {
		num, den = 0, 0
	} else {
		num, den = s.score(sa, sb, cutoff)
	}
	simPool.Put(s)
	return num, den
}

// preparedChunkLen bounds the texts a preparedChunk holds at once (about 400 bytes each
// for a description of 50 bytes: 1.6 MB).
const preparedChunkLen = 4096

// preparedChunk prepares the ASCII texts of up to asciiMax bytes of a chunk of records in
// space reused from chunk to chunk, and one more text at a time apart (prepareOne). A text
// of another form is left unprepared (nil): its pairs are scored by similarityRatio.
type preparedChunk struct {
	prepared []*Prepared // the caller's list of the chunk's texts, prepared or nil
	forms    []Prepared
	words    []uint64
	codes    []byte
	one      Prepared
	oneW     [asciiMax/2 + 1]uint64
	oneC     [asciiMax + 32]byte
}

func (pc *preparedChunk) reset() {
	clear(pc.prepared)
	pc.prepared, pc.forms, pc.words, pc.codes = pc.prepared[:0], pc.forms[:0], pc.words[:0], pc.codes[:0]
}

// prepare prepares text in the chunk's space; the result stays valid until reset. The
// space grows by whole new arrays, so what earlier calls returned is never moved.
func (pc *preparedChunk) prepare(text string) *Prepared {
	n := len(text)
	if n == 0 || n > asciiMax {
		return nil
	}
	nw, nc := max(n/2+1, 8), n+32
	if len(pc.forms) == cap(pc.forms) {
		pc.forms = make([]Prepared, 0, max(2*cap(pc.forms), 64))
	}
	if len(pc.words)+nw > cap(pc.words) {
		pc.words = make([]uint64, 0, max(2*cap(pc.words), 64*nw))
	}
	if len(pc.codes)+nc > cap(pc.codes) {
		pc.codes = make([]byte, 0, max(2*cap(pc.codes), 64*nc))
	}
	w, c := pc.words[len(pc.words):len(pc.words)+nw:len(pc.words)+nw], pc.codes[len(pc.codes):len(pc.codes)+nc:len(pc.codes)+nc]
	clear(c) // past the text the codes are read as zeros
	pc.forms = pc.forms[:len(pc.forms)+1]
	p := &pc.forms[len(pc.forms)-1]
	if !prepareShort(p, text, w, c) {
		pc.forms = pc.forms[:len(pc.forms)-1]
		return nil
	}
	pc.words, pc.codes = pc.words[:len(pc.words)+nw], pc.codes[:len(pc.codes)+nc]
	return p
}

// prepareOne prepares text in the chunk's single slot of its own, valid until the next
// call.
func (pc *preparedChunk) prepareOne(text string) *Prepared {
	if len(text) == 0 || len(text) > asciiMax {
		return nil
	}
	clear(pc.oneC[:len(text)+32])
	if !prepareShort(&pc.one, text, pc.oneW[:max(len(text)/2+1, 8)], pc.oneC[:len(text)+32]) {
		return nil
	}
	return &pc.one
}

// prepareShort prepares the ASCII text of 1 to asciiMax bytes into p with the room given
// (words: len(text)/2+1 and 8 at least; codes: len(text)+32, zero), or reports false when
// the text is not ASCII.
func prepareShort(p *Prepared, text string, words []uint64, codes []byte) bool {
	*p = Prepared{text: text, short: asciiText{text: text, codes: codes, words: words}}
	if !p.short.tokenize() {
		return false
	}
	p.short.sort()
	return true
}
