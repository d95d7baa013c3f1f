package documents

import (
	"bytes"
	"encoding/csv"
)

// csvReader reads a CSV document's records as Python's csv module reads them with its
// default dialect: a '"' inside a field that does not start with one is a character of
// the field (`55" screen`, common in exports), where csv.Reader alone refuses the document
// (ErrBareQuote). A field that starts with '"' is read as RFC 4180 says, and one whose
// quotes are wrong (`"ab"c`, or no closing quote) is refused as csv.Reader refuses it, with
// its line and column: csv.Reader's LazyQuotes, which reads the bare quotes, would read on
// from such a field to the end of the document as one cell.
//
// The records are csv.Reader's with LazyQuotes, which differs from its strict reading only
// where that fails; each record's bytes are then checked for a field that starts with '"'
// and is not closed by a '"' before a comma, the line's end or the document's.
type csvReader struct {
	r    *csv.Reader
	data []byte
	off  int // where the next record's bytes start in data
	line int // the line (from 1) that starts at data[off]
}

func newCSVReader(data []byte) *csvReader {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	r.LazyQuotes = true
	return &csvReader{r: r, data: data, line: 1}
}

// Read returns the next record (reused by the next call), io.EOF after the last, or a
// *csv.ParseError with csv.ErrQuote for a quoted field whose quotes are wrong.
func (c *csvReader) Read() ([]string, error) {
	rec, err := c.r.Read()
	if err != nil {
		return nil, err
	}
	end := int(c.r.InputOffset())
	raw, line := c.data[c.off:end], c.line
	c.off, c.line = end, line+bytes.Count(raw, []byte{'\n'})
	if bytes.IndexByte(raw, '"') >= 0 {
		if err := checkQuotedFields(raw, line); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// checkQuotedFields finds, in the bytes of one record as csv.Reader with LazyQuotes cut
// it (from the start of a line, with the empty lines before it, to the end of its last
// line or of the document), a field that starts with '"' and whose quotes csv.Reader's
// strict reading refuses; its error is that reading's. line is the line raw starts on.
func checkQuotedFields(raw []byte, line int) error {
	// The record starts after the empty lines that csv.Reader skips.
	start := 0
	for {
		n := 0
		if rest := raw[start:]; bytes.HasPrefix(rest, []byte{'\n'}) {
			n = 1
		} else if bytes.HasPrefix(rest, []byte("\r\n")) {
			n = 2
		}
		if n == 0 {
			break
		}
		start, line = start+n, line+1
	}
	recLine := line
	lineStart := start // where the line of i starts
	for i := start; i < len(raw); {
		if raw[i] != '"' { // a field read as it is, bare quotes too: to its comma or line's end
			j := bytes.IndexAny(raw[i:], ",\n")
			if j < 0 {
				return nil
			}
			if i += j + 1; raw[i-1] == '\n' {
				line, lineStart = line+1, i
			}
			continue
		}
		for j := i + 1; ; { // a quoted field: to its closing quote
			q := bytes.IndexByte(raw[j:], '"')
			if q < 0 { // no closing quote: refused where the document ends
				// csv.Reader drops a '\r' that ends the document; a last line that held
				// only it is then empty, and is not counted.
				end := raw
				if end[len(end)-1] == '\r' {
					end = end[:len(end)-1]
				}
				last := bytes.LastIndexByte(end[:len(end)-1], '\n') + 1
				if last > lineStart {
					line += bytes.Count(raw[lineStart:last], []byte{'\n'})
				}
				col := len(end) - last + 1
				if bytes.HasSuffix(end, []byte("\r\n")) {
					col-- // csv.Reader reads a line's "\r\n" as "\n"
				}
				return &csv.ParseError{StartLine: recLine, Line: line, Column: col, Err: csv.ErrQuote}
			}
			q += j
			if n := bytes.Count(raw[j:q], []byte{'\n'}); n > 0 {
				line, lineStart = line+n, bytes.LastIndexByte(raw[:q], '\n')+1
			}
			next := q + 1
			switch {
			case next < len(raw) && raw[next] == '"': // `""`: a quote in the field
				j = next + 1
				continue
			case next == len(raw), raw[next] == ',':
			case raw[next] == '\n':
				line, lineStart = line+1, next+1
			case raw[next] == '\r' && (next+1 == len(raw) || raw[next+1] == '\n'):
				next++ // "\r\n", or a '\r' that ends the document: dropped by csv.Reader
				if next < len(raw) {
					line, lineStart = line+1, next+1
				}
			default:
				return &csv.ParseError{StartLine: recLine, Line: line, Column: q - lineStart + 1, Err: csv.ErrQuote}
			}
			i = next + 1
			break
		}
	}
	return nil
}
