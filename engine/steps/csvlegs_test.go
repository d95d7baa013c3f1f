package steps

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/match"
)

// A CSV leg read from the document's bytes gives the matcher, field by field, the Values
// that the same records as JSON give match.RawRecords: numbers in their shortest form,
// null for a blank numeric cell, strings as encoding/json reads them back, missing for a
// name that is no column; and each record's JSON is the JSON's.
func TestCSVLegReadsAsItsJSON(t *testing.T) {
	t.Parallel()
	var doc strings.Builder
	doc.WriteString("id, amount ,n,text,date,,id\n")
	numbers := []string{"12.50", " 7 ", "1e3", "+5", "-0", "", "0.1", "1E-7", "123456789012345", ".5"}
	texts := []string{"007", "caf\xe9", "<a&b>", "  padded  ", "", "x\xff\xfey", "1.0.0"}
	for i := range 70 {
		fmt.Fprintf(&doc, "K%d,%s,%d,%s,2026-01-%02d,%d", i, numbers[i%len(numbers)], i%4, texts[i%len(texts)], 1+i%28, i)
		if i%3 == 0 {
			doc.WriteString(",dup")
		}
		doc.WriteString("\n")
	}
	data := []byte(doc.String())
	recs, ok, err := documents.ReadCSVRecords("text/csv", "leg.csv", data, documents.MaxRows)
	require.NoError(t, err)
	require.True(t, ok)
	raw, err := documents.ExtractJSONLimit("text/csv", "leg.csv", data, documents.MaxRows)
	require.NoError(t, err)
	want, err := match.NewRawRecords(raw)
	require.NoError(t, err)
	leg := newCSVLeg(recs)
	require.Equal(t, want.Len(), leg.Len())

	names := append(recs.Names(), "absent", "amount")
	got, exp := make([]match.Value, len(names)), make([]match.Value, len(names))
	for i := range want.Len() {
		leg.Fields(i, names, got)
		want.Fields(i, names, exp)
		require.Equal(t, exp, got, "record %d", i)
		b, err := leg.AppendJSON(nil, i)
		require.NoError(t, err)
		require.Equal(t, string(want.Record(i)), string(b))
	}
}
