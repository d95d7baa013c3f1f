package match

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSimilarityPreparedOracle checks SimilarityPrepared against every oracle score, both
// ways round, with each text prepared once and scored against every other text of the
// oracle too (each form against each: short ASCII, long ASCII, not ASCII, empty).
func TestSimilarityPreparedOracle(t *testing.T) {
	t.Parallel()

	pairs := oraclePairs(t)
	prepared := map[string]*Prepared{}
	var texts []string
	prep := func(s string) *Prepared {
		if p, ok := prepared[s]; ok {
			return p
		}
		p := Prepare(s)
		require.Equal(t, s, p.Text())
		prepared[s] = p
		texts = append(texts, s)
		return p
	}
	for _, p := range pairs {
		a, b := prep(p.a), prep(p.b)
		require.Equal(t, p.score, SimilarityPrepared(a, b), "%q vs %q", p.a, p.b)
		require.Equal(t, p.score, SimilarityPrepared(b, a), "%q vs %q", p.b, p.a)
	}
	for _, s := range []string{"", "!!!", "ACME CORP", strings.Repeat("acme corp ", 20), "Café " + strings.Repeat("x", 200)} {
		prep(s)
	}
	for i, a := range texts {
		for _, b := range texts[i:] {
			require.Equal(t, Similarity(a, b), SimilarityPrepared(prepared[a], prepared[b]), "%q vs %q", a, b)
		}
	}
}

// TestSimilarityPreparedRandom compares SimilarityPrepared and the cut-off's fraction of
// prepared texts with Similarity's on random texts of every form, and scores one set of
// prepared texts from several goroutines at once (a Prepared is read-only once made).
func TestSimilarityPreparedRandom(t *testing.T) {
	t.Parallel()

	words := []string{"a", "b", "ab", "acme", "ACME", "corp", "crop", "4821", "abcdefgh", "abcdefghi",
		"abcdefghij", "payment", "müller", "MULLER", "straße", "αθηνα", "東京", "x1", "9"}
	seps := []string{" ", "-", ".", "  ", "/"}
	rng := rand.New(rand.NewPCG(35, 3))
	gen := func(limit int) string {
		var sb strings.Builder
		for n := rng.IntN(limit/3 + 1); n > 0 && sb.Len() < limit; n-- {
			if sb.Len() > 0 || rng.IntN(4) == 0 {
				sb.WriteString(seps[rng.IntN(len(seps))])
			}
			sb.WriteString(words[rng.IntN(len(words))])
		}
		return sb.String()
	}
	var texts []string
	for range 400 {
		texts = append(texts, gen([]int{16, 64, 128, 200}[rng.IntN(4)]))
	}
	prepared := make([]*Prepared, len(texts))
	for i, s := range texts {
		prepared[i] = Prepare(s)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < len(texts); i += 4 {
				for j := range 100 {
					j = (i + j*7) % len(texts)
					a, b := texts[i], texts[j]
					if got, want := SimilarityPrepared(prepared[i], prepared[j]), Similarity(a, b); got != want {
						t.Errorf("%q vs %q: prepared %d, Similarity %d", a, b, got, want)
						return
					}
					for _, cutoff := range []float64{0, 50, 90} {
						pn, pd := ratioPrepared(prepared[i], prepared[j], cutoff)
						sn, sd := similarityRatio(a, b, cutoff)
						if pn != sn || pd != sd {
							t.Errorf("%q vs %q at %v: prepared %d/%d, similarityRatio %d/%d", a, b, cutoff, pn, pd, sn, sd)
							return
						}
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestPrepareAllocations: scoring prepared texts allocates nothing. Not parallel:
// AllocsPerRun measures the whole process.
func TestPrepareAllocations(t *testing.T) {
	a, b := Prepare("Invoice 4821 ACME Corp office supplies"), Prepare("ACME CORP PAYMENT REF 4821")
	require.Zero(t, testing.AllocsPerRun(100, func() { SimilarityPrepared(a, b) }), "ASCII, the stack")
	if !raceEnabled { // the race detector makes sync.Pool drop items on purpose
		// Non-ASCII joins of more than 32 bytes: utf8.RuneCount and a range over a []byte
		// converted to a string each allocated for them.
		c, d := Prepare("Café Müller "+strings.Repeat("x", 130)), Prepare("CAFE MÜLLER")
		SimilarityPrepared(c, d)
		require.Zero(t, testing.AllocsPerRun(100, func() { SimilarityPrepared(c, d) }), "the scratch from the pool")
		require.Zero(t, testing.AllocsPerRun(100, func() { Similarity(c.Text(), d.Text()) }), "unprepared, the same")
	}
}

// TestCandidatesPrepared checks the matcher's all-pairs candidates, which score prepared
// descriptions, against similarityRatio on each pair: the oracle's texts (ASCII, not
// ASCII, over asciiMax, empty) on both sides, more right records than a chunk holds, and
// one space reused for two blocks.
func TestCandidatesPrepared(t *testing.T) {
	t.Parallel()

	var texts []string
	for _, p := range oraclePairs(t) {
		texts = append(texts, p.a, p.b)
	}
	texts = append(texts, "", "!!!", strings.Repeat("acme corp ", 20))
	ld := texts[:40]
	rd := make([]string, preparedChunkLen+300)
	for k := range rd {
		rd[k] = texts[(k*7)%len(texts)]
	}
	var prep preparedChunk
	for _, threshold := range []float64{0, 50} {
		c := matchConfig{useText: true, threshold: threshold}
		ls, rs := make([]int32, len(ld)), make([]int32, len(rd))
		for k := range ls {
			ls[k] = int32(k)
		}
		for k := range rs {
			rs[k] = int32(k)
		}
		got, err := candidates(nil, ls, rs, make([]features, len(ld)), make([]features, len(rd)), ld, rd, &c, &prep)
		require.NoError(t, err)
		var want []candidate
		for l := range ld {
			for r := range rd {
				num, den := similarityRatio(ld[l], rd[r], threshold)
				cd := candidate{l: int32(l), r: int32(r)}
				if den == 0 {
					if threshold > 0 {
						continue
					}
				} else {
					if float64(100*num) < threshold*float64(den) {
						continue
					}
					cd.sim = int32(int64(num) * 1_000_000 / int64(den))
				}
				want = append(want, cd)
			}
		}
		// Chunks of right records change the order; the matcher sorts the candidates.
		slices.SortFunc(got, func(a, b candidate) int { return cmp.Or(cmp.Compare(a.l, b.l), cmp.Compare(a.r, b.r)) })
		require.Len(t, got, len(want), "threshold %v", threshold)
		for k := range want {
			if want[k] != got[k] {
				t.Fatalf("threshold %v: candidate %d is %+v, want %+v (%q vs %q)", threshold, k, got[k], want[k], ld[want[k].l], rd[want[k].r])
			}
		}
	}
}
