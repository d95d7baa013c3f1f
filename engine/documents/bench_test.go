package documents

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkExtractCSVToJSON extracts a 50,000-row CSV of the matcher's shape (id, text,
// amount, date) straight to JSON, as a doc: leg of the matcher is read.
func BenchmarkExtractCSVToJSON(b *testing.B) {
	data := matcherCSV(50_000)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := ExtractJSONLimit("text/csv", "bench.csv", data, 1_000_000); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExtractTwoSideBySide extracts two such CSVs one after the other, and side by
// side as a matcher's two doc: legs are.
func BenchmarkExtractTwoSideBySide(b *testing.B) {
	data := matcherCSV(50_000)
	b.Run("sequential", func(b *testing.B) {
		for b.Loop() {
			ExtractJSONLimit("text/csv", "a.csv", data, 1_000_000)
			ExtractJSONLimit("text/csv", "a.csv", data, 1_000_000)
		}
	})
	b.Run("side-by-side", func(b *testing.B) {
		for b.Loop() {
			done := make(chan struct{})
			go func() { ExtractJSONLimit("text/csv", "a.csv", data, 1_000_000); close(done) }()
			ExtractJSONLimit("text/csv", "a.csv", data, 1_000_000)
			<-done
		}
	})
}

// matcherCSV is n rows of the matcher's shape (id, text, amount, date), seeded.
func matcherCSV(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	sb.WriteString("id,counterparty,amount,date\n")
	for i := range n {
		fmt.Fprintf(&sb, "L%06d,party %d,%.2f,2026-%02d-%02d\n", i, rng.IntN(5000), rng.Float64()*10000, 1+rng.IntN(12), 1+rng.IntN(28))
	}
	return []byte(sb.String())
}
