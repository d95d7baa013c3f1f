package documents

import (
	"bytes"
	"math"
	"runtime"
	"unicode/utf8"
)

// CSVRecords is a CSV document's records read from the document's own bytes, for a reader
// that goes through them one by one (a matcher's leg): it holds the document and where
// each record's line starts. The same records as one JSON array (ExtractJSONLimit) are about twice
// the document, and as maps (ExtractLimit) about ten times. Only a plain document, without
// '"' and '\r', is read so: each record is then one line, its cells the line cut at commas.
// It is read by one goroutine at a time.
type CSVRecords struct {
	data  []byte   // the document, without its byte order mark
	start []uint32 // record i is the line that starts at data[start[i]]
	names []string
	w     *rowWriter
	cells []string
}

// ReadCSVRecords reads a CSV document's records as ExtractLimit does, into CSVRecords. ok
// is false, with no error, when it does not read the document so: not CSV, not plain, or
// a column name that is not UTF-8 (ExtractJSONLimit reads those). It fails as ExtractLimit does: TooManyRowsError,
// TooManyCellsError, a malformed document. data is kept, not copied: it must not change
// while the CSVRecords is in use.
func ReadCSVRecords(contentType, name string, data []byte, limit int) (r *CSVRecords, ok bool, err error) {
	if f, err := DetectFormat(contentType, name); err != nil || f != FormatCSV {
		return nil, false, nil
	}
	// csvTable takes one byte order mark off, as every reader of the document does; a
	// second one is the header's text, so the document is passed to it as it came.
	body := bytes.TrimPrefix(data, utf8BOM)
	if !isPlain(body) || len(body) > math.MaxUint32 {
		return nil, false, nil
	}
	t, err := csvTable(data, limit)
	if err != nil {
		return nil, false, err
	}
	r = &CSVRecords{data: body}
	if t == nil {
		return r, true, nil // no header: no records
	}
	if r.w, err = t.rowWriter(); err != nil {
		return nil, false, err
	}
	r.names, _, _ = t.columns()
	for _, n := range r.names {
		if !utf8.ValidString(n) {
			// Its key in the JSON is not its text (bytes that are not UTF-8 become
			// U+FFFD, and two such names one key): read as JSON, where that is settled.
			return nil, false, nil
		}
	}
	r.start = make([]uint32, 0, min(t.n, t.limit))
	err = t.plainRows(false, func(start, _ int, _ []string) error {
		r.start = append(r.start, uint32(start))
		return nil
	})
	return r, true, err
}

// Hold has release called once r can no longer be reached (runtime.AddCleanup): for
// records read from a mapped document (BlobMapper), the unmapping. Nothing read from r
// (Cells, a Value made of a cell) is kept past r itself: the matcher's reads end before
// its result, which refers to r, is dropped.
func (r *CSVRecords) Hold(release func()) {
	runtime.AddCleanup(r, func(f func()) { f() }, release)
}

// Len is the number of records.
func (r *CSVRecords) Len() int { return len(r.start) }

// Size is the document's size in bytes.
func (r *CSVRecords) Size() int { return len(r.data) }

// Names are the records' keys, one a column, in the columns' order: every record has each
// of them.
func (r *CSVRecords) Names() []string { return r.names }

// Numeric reports whether column j's values are numbers (or null, when blank) in every
// record; the others' are strings.
func (r *CSVRecords) Numeric(j int) bool { return r.w.numeric[j] }

// Cells appends record i's cells to dst, without its trailing empty ones: views of the
// document's bytes, valid as long as the CSVRecords is.
func (r *CSVRecords) Cells(dst []string, i int) []string {
	line := r.data[r.start[i]:]
	if end := bytes.IndexByte(line, '\n'); end >= 0 {
		line = line[:end]
	}
	dst = cutCells(dst, line, false)
	return dst[:lastCell(dst)+1]
}

// AppendJSON appends record i's JSON: the bytes ExtractJSONLimit writes for it.
func (r *CSVRecords) AppendJSON(dst []byte, i int) ([]byte, error) {
	r.cells = r.Cells(r.cells[:0], i)
	return r.w.append(dst, r.cells)
}

// ShortestNumber reports whether s, a number cell's trimmed text, is already its JSON: what
// ExtractJSONLimit writes for it (its float64 in the shortest form, as encoding/json
// writes it). That is s when it has a digit before any point, no sign but '-', no leading
// zero, no exponent, no trailing zero after a point, at most 15 significant digits (so its
// float64 gives it back, and no shorter text does) and is at least 1e-6 when below 1 (no
// exponent form). A reader can then take s as it is, without a conversion.
func ShortestNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intLen := i - intStart
	if intLen == 0 || intLen > 1 && s[intStart] == '0' || intLen > 15 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != '.' {
		return false
	}
	i++
	fracStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	fracLen := i - fracStart
	if i != len(s) || fracLen == 0 || s[i-1] == '0' {
		return false
	}
	if s[intStart] != '0' {
		return intLen+fracLen <= 15
	}
	zeros := 0 // after the point, before the first significant digit
	for s[fracStart+zeros] == '0' {
		zeros++
	}
	return zeros < 6 && fracLen-zeros <= 15
}
