package steps

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/internal/jsonw"
	"github.com/svcflow/svcflow/match"
)

// csvLeg is a matcher's leg read from a CSV document's bytes (documents.CSVRecords) as a
// match.Dataset: each field the Value that the record's JSON (what ExtractJSONLimit
// writes) would give match.RawRecords, without the JSON being written.
type csvLeg struct {
	recs  *documents.CSVRecords
	col   map[string]int // a key's column
	cells []string
	num   []byte
}

func newCSVLeg(recs *documents.CSVRecords) *csvLeg {
	l := &csvLeg{recs: recs, col: make(map[string]int, len(recs.Names()))}
	for j, name := range recs.Names() {
		l.col[name] = j
	}
	return l
}

func (l *csvLeg) Len() int { return l.recs.Len() }

func (l *csvLeg) AppendJSON(dst []byte, i int) ([]byte, error) { return l.recs.AppendJSON(dst, i) }

// Fields reads a cell as its JSON value reads: a numeric column's blank cell is null, its
// others the number in its shortest form; any other cell a string, its bytes that are not
// UTF-8 each U+FFFD (as encoding/json writes and reads them back). A name that is no
// column is missing.
func (l *csvLeg) Fields(i int, names []string, dst []match.Value) {
	l.cells = l.recs.Cells(l.cells[:0], i)
	for k, name := range names {
		j, ok := l.col[name]
		if !ok {
			dst[k] = match.Value{}
			continue
		}
		cell := ""
		if j < len(l.cells) {
			cell = l.cells[j]
		}
		if !l.recs.Numeric(j) {
			if !utf8.ValidString(cell) {
				cell = jsonText(cell)
			}
			dst[k] = match.Value{Kind: match.KindString, Text: cell}
			continue
		}
		text := strings.TrimSpace(cell)
		if text == "" {
			dst[k] = match.Value{Kind: match.KindNull}
			continue
		}
		// The number as the JSON has it: its shortest form, which the cell's own text
		// mostly is already ("12.5"); made a string of its own only when not ("12.50").
		if !documents.ShortestNumber(text) {
			f, _ := strconv.ParseFloat(text, 64)
			l.num, _ = jsonw.AppendFloat(l.num[:0], f)
			text = string(l.num)
		}
		dst[k] = match.Value{Kind: match.KindNumber, Text: text}
	}
}

// jsonText is s with each byte that is not UTF-8 made U+FFFD, as encoding/json writes it.
func jsonText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
