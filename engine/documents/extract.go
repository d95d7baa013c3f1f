package documents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/svcflow/svcflow/engine/internal/jsonw"
)

// Format is a document format that extraction reads.
type Format string

// The formats Extract reads.
const (
	FormatCSV  Format = "csv"
	FormatJSON Format = "json"
	FormatXLSX Format = "xlsx"
)

// Media types of the formats.
const (
	MediaCSV  = "text/csv"
	MediaJSON = "application/json"
	MediaXLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	// MediaOctetStream is what a client sends when it does not know: never a format.
	MediaOctetStream = "application/octet-stream"
)

// ErrUnsupportedFormat: neither the content type nor the name's extension names a format
// that Extract reads.
var ErrUnsupportedFormat = errors.New("unsupported document format")

// TooManyRowsError is extraction refusing content with more than Limit rows. It is an
// error, not a silent cut: a reference to such a document fails the step that uses it.
type TooManyRowsError struct {
	Rows  int
	Limit int
}

func (e *TooManyRowsError) Error() string {
	return fmt.Sprintf("%d rows; the limit is %s", e.Rows, thousands(e.Limit))
}

// TooManyCellsError is extraction refusing a table of more than Limit cells, rows ×
// columns, counting the empty cells of short rows: Limit is max(MinCells, Size), Size the
// document's length in bytes. It is found before the records are made.
type TooManyCellsError struct {
	Limit int
	Size  int
}

func (e *TooManyCellsError) Error() string {
	return fmt.Sprintf("more than %s cells (rows × columns, the empty ones included), the limit for a document of %s bytes",
		thousands(e.Limit), thousands(e.Size))
}

// cellLimit is the TooManyCellsError limit of a document of size bytes.
func cellLimit(size int) int { return max(MinCells, size) }

// thousands writes n with comma separators: 10000 -> "10,000".
func thousands(n int) string {
	s := strconv.Itoa(n)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

var formatByMedia = map[string]Format{
	MediaCSV:                      FormatCSV,
	"application/csv":             FormatCSV,
	"text/x-csv":                  FormatCSV,
	"application/x-csv":           FormatCSV,
	"text/comma-separated-values": FormatCSV,
	MediaJSON:                     FormatJSON,
	"text/json":                   FormatJSON,
	MediaXLSX:                     FormatXLSX,
}

var mediaByExt = map[string]string{
	".csv":  MediaCSV,
	".json": MediaJSON,
	".xlsx": MediaXLSX,
}

// DetectFormat names the format of content declared as contentType, falling back to the
// extension of name when the content type names none (application/octet-stream,
// text/plain, application/vnd.ms-excel as browsers label CSV files, ...).
func DetectFormat(contentType, name string) (Format, error) {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		if f, ok := formatByMedia[mt]; ok {
			return f, nil
		}
		if strings.HasSuffix(mt, "+json") {
			return FormatJSON, nil
		}
	}
	if f, ok := formatByMedia[mediaByExt[strings.ToLower(path.Ext(name))]]; ok {
		return f, nil
	}
	return "", fmt.Errorf("%w: content type %q, name %q (doc: references read CSV, JSON arrays of objects and XLSX)",
		ErrUnsupportedFormat, contentType, name)
}

// ContentTypeFor is the content type to store for content declared as declared (a form
// field or a part header) and named name: the declaration unless it is empty or
// application/octet-stream, else the type the name's extension implies, else the
// declaration, else application/octet-stream.
func ContentTypeFor(declared, name string) string {
	declared = strings.TrimSpace(declared)
	if declared != "" {
		if mt, _, err := mime.ParseMediaType(declared); err != nil || mt != MediaOctetStream {
			return declared
		}
	}
	ext := strings.ToLower(path.Ext(name))
	if mt, ok := mediaByExt[ext]; ok {
		return mt
	}
	if mt := mime.TypeByExtension(ext); ext != "" && mt != "" {
		return mt
	}
	if declared != "" {
		return declared
	}
	return MediaOctetStream
}

// Extract turns content into records: a CSV file (header row), a JSON array of objects,
// or the first sheet of an XLSX workbook (header row). The format comes from contentType,
// else from name's extension (DetectFormat). At most MaxRows records; more is a
// *TooManyRowsError.
//
// For CSV and XLSX, every record has every column; a column becomes numbers (float64) when
// every non-empty value in it is a decimal number, and its empty values then become null;
// any other column stays strings. A value with a leading zero ("007") or an integer part of
// more than 15 digits is not taken for a number: identifiers keep their exact text. Rows
// whose cells are all empty are skipped. An empty header cell, or a value beyond the
// header, is named column_<n> (1-based); a repeated name gets _2, _3, ... JSON values keep
// their own types. A table of more than max(MinCells, len(data)) cells, rows × columns, is
// a *TooManyCellsError. A CSV field that does not start with '"' may hold one (`55" screen`),
// as Python's csv module reads it; a quoted field whose quotes are wrong is a
// *csv.ParseError naming its line and column (csvReader).
func Extract(contentType, name string, data []byte) ([]map[string]any, error) {
	return ExtractLimit(contentType, name, data, MaxRows)
}

// ExtractLimit is Extract with at most limit records instead of MaxRows: for the readers
// that take a document whole by design (the matchers' legs, MaxMatchRows).
func ExtractLimit(contentType, name string, data []byte, limit int) ([]map[string]any, error) {
	f, err := DetectFormat(contentType, name)
	if err != nil {
		return nil, err
	}
	switch f {
	case FormatCSV:
		return extractCSV(data, limit)
	case FormatJSON:
		return extractJSON(data, limit)
	default:
		return extractXLSX(data, limit)
	}
}

var utf8BOM = []byte("\xEF\xBB\xBF")

func extractCSV(data []byte, limit int) ([]map[string]any, error) {
	t, err := csvTable(data, limit)
	if err != nil || t == nil {
		return []map[string]any{}, err
	}
	return t.records()
}

// csvTable reads a CSV document's shape (csvShape); nil for a document without a header.
// Its cells are read again when its records are written (table.eachRow).
func csvTable(data []byte, limit int) (*table, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	if isPlain(data) {
		return plainTable(data, limit), nil
	}
	r := newCSVReader(data)
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err)
	}
	t := &table{limit: limit, size: len(data), header: slices.Clone(header), csv: data}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("csv: %w", err)
		}
		t.count(rec)
	}
	return t, nil
}

// isPlain reports whether a CSV document (without its byte order mark) has no '"' and no
// '\r': each record is then one line, its cells the line cut at commas, as csv.Reader
// reads them.
func isPlain(data []byte) bool {
	return !csvReaderOnly.Load() && bytes.IndexByte(data, '"') < 0 && bytes.IndexByte(data, '\r') < 0
}

// lineAt finds the end of the line of data that starts at start, and where the next one
// starts.
func lineAt(data []byte, start int) (end, next int) {
	end = len(data)
	if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
		end = start + i
	}
	return end, end + 1
}

// plainTable is csvTable for a plain document (isPlain); nil when it has no header.
func plainTable(data []byte, limit int) *table {
	var t *table
	cells := []string(nil)
	for start, end, next := 0, 0, 0; start < len(data); start = next {
		if end, next = lineAt(data, start); end == start {
			continue // csv.Reader skips empty lines
		}
		if t == nil {
			t = &table{limit: limit, size: len(data), header: cutCells(nil, data[start:end], true), csv: data, plain: true}
			continue
		}
		cells = cutCells(cells[:0], data[start:end], false)
		t.count(cells)
	}
	return t
}

// ExtractJSONLimit is ExtractLimit's records as one JSON array, the bytes json.Marshal
// writes for them (keys sorted). A CSV document is written straight from its cells, with
// no map per record: what a matcher reading a leg as bytes takes (svctype.RawJSON).
func ExtractJSONLimit(contentType, name string, data []byte, limit int) ([]byte, error) {
	f, err := DetectFormat(contentType, name)
	if err != nil {
		return nil, err
	}
	if f == FormatCSV {
		t, err := csvTable(data, limit)
		if err != nil {
			return nil, err
		}
		if t == nil {
			return []byte("[]"), nil
		}
		return t.appendJSON(nil)
	}
	recs, err := ExtractLimit(contentType, name, data, limit)
	if err != nil {
		return nil, err
	}
	return json.Marshal(recs)
}

func extractJSON(data []byte, limit int) ([]map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, utf8BOM)))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("json: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, errors.New("json: want an array of objects")
	}
	out := []map[string]any{}
	n := 0
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("json: element %d: %w", n, err)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("json: element %d is not an object", n)
		}
		if n < limit {
			out = append(out, obj)
		}
		n++
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("json: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("json: data after the array")
	}
	if n > limit {
		return nil, &TooManyRowsError{Rows: n, Limit: limit}
	}
	return out, nil
}

// csvReaderOnly turns eachRow's fast path off: tests compare it with csv.Reader's reading.
var csvReaderOnly atomic.Bool

// table is a header and rows of text cells, turned into typed records. Its shape (how
// many rows, how many columns, which are numeric) is counted as rows are added. An XLSX
// sheet's rows are kept (rows); a CSV document's are not: they are read again from the
// document when the records are written (eachRow), since holding a million rows' cells as
// strings cost about 130 bytes a row, three times the document.
type table struct {
	header []string
	rows   [][]string
	// csv is the CSV document the rows are read from again, when it is one. plain says it
	// has no '"' and no '\r': each record is then one line, its cells the line cut at
	// commas, and it is read again without a csv.Reader.
	csv   []byte
	plain bool
	// n counts the non-empty rows; only the first limit are kept.
	n     int
	cols  int
	limit int
	size  int // of the document, in bytes: it bounds the cells (cellLimit)
	// text[j]: a non-empty cell of column j kept so far is not a number (isNumber);
	// seen[j]: one is non-empty.
	text, seen []bool
}

// add counts row and keeps it: an XLSX sheet's rows.
func (t *table) add(row []string) {
	if row = t.count(row); row != nil {
		t.rows = append(t.rows, row)
	}
}

// count counts row into the table's shape and returns it without its trailing empty
// cells, or nil when it is not kept: empty, or past the limit.
func (t *table) count(row []string) []string {
	last := lastCell(row)
	if last < 0 {
		return nil
	}
	t.n++
	if t.n > t.limit {
		return nil
	}
	row = row[:last+1]
	t.cols = max(t.cols, len(row))
	for len(t.seen) < len(row) {
		t.seen, t.text = append(t.seen, false), append(t.text, false)
	}
	for j, c := range row {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		t.seen[j] = true
		if !t.text[j] && !isNumber(c) {
			t.text[j] = true
		}
	}
	return row
}

// lastCell is the index of row's last cell that is not blank, -1 when none is.
func lastCell(row []string) int {
	for i := len(row) - 1; i >= 0; i-- {
		if strings.TrimSpace(row[i]) != "" {
			return i
		}
	}
	return -1
}

// eachRow calls f with every kept row, in order, without its trailing empty cells. The
// slice is reused; its strings stay valid after f returns only when stable is set
// (otherwise they may be views of the document's bytes).
func (t *table) eachRow(stable bool, f func(row []string) error) error {
	if t.csv == nil {
		for _, row := range t.rows {
			if err := f(row); err != nil {
				return err
			}
		}
		return nil
	}
	kept := 0
	each := func(row []string) error {
		last := lastCell(row)
		if last < 0 {
			return nil
		}
		kept++
		return f(row[:last+1])
	}
	if !t.plain {
		r := newCSVReader(t.csv)
		if _, err := r.Read(); err != nil { // the header
			return fmt.Errorf("csv: %w", err)
		}
		for kept < t.limit {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("csv: %w", err)
			}
			if err := each(rec); err != nil {
				return err
			}
		}
		return nil
	}
	return t.plainRows(stable, func(_, _ int, row []string) error { return f(row) })
}

// plainRows calls f with every kept row of a plain document (t.plain), in order: the
// offsets in t.csv of its line, and its cells without the trailing empty ones (views of
// the document's bytes unless stable). Without quotes and carriage returns, a record is a
// line that is not empty (the reader skips those), its cells the line cut at commas: what
// csv.Reader reads.
func (t *table) plainRows(stable bool, f func(start, end int, row []string) error) error {
	header, kept := true, 0
	cells := make([]string, 0, len(t.header)+1)
	for start, end, next := 0, 0, 0; start < len(t.csv); start = next {
		if end, next = lineAt(t.csv, start); end == start {
			continue
		}
		if header {
			header = false
			continue
		}
		if kept == t.limit {
			break
		}
		cells = cutCells(cells[:0], t.csv[start:end], stable)
		last := lastCell(cells)
		if last < 0 {
			continue
		}
		kept++
		if err := f(start, end, cells[:last+1]); err != nil {
			return err
		}
	}
	return nil
}

// cutCells appends the cells of a plain document's line (no quotes): the line cut at
// commas, views of its bytes unless stable.
func cutCells(cells []string, line []byte, stable bool) []string {
	var s string
	if stable {
		s = string(line)
	} else {
		s = unsafe.String(unsafe.SliceData(line), len(line))
	}
	for {
		i := strings.IndexByte(s, ',')
		if i < 0 {
			return append(cells, s)
		}
		cells = append(cells, s[:i])
		s = s[i+1:]
	}
}

// columns checks the table's size and gives its columns' names and which are numeric.
func (t *table) columns() (names []string, numeric []bool, err error) {
	if t.n > t.limit {
		return nil, nil, &TooManyRowsError{Rows: t.n, Limit: t.limit}
	}
	cols := max(t.cols, len(t.header))
	if limit := cellLimit(t.size); t.n*cols > limit {
		return nil, nil, &TooManyCellsError{Limit: limit, Size: t.size}
	}
	names = columnNames(t.header, cols)
	numeric = make([]bool, len(names))
	for j := range min(len(names), len(t.seen)) {
		numeric[j] = t.seen[j] && !t.text[j]
	}
	return names, numeric, nil
}

// appendJSON appends the records as one JSON array: each the bytes json.Marshal writes for
// the record records() makes of its row (keys sorted, numbers in their shortest form).
func (t *table) appendJSON(dst []byte) ([]byte, error) {
	w, err := t.rowWriter()
	if err != nil {
		return nil, err
	}
	// Grown once to about the output's size: the cells' text plus every row's keys.
	// Growing by doubling copied the output about twice over.
	dst = slices.Grow(dst, t.size+t.n*w.perRow+2)
	dst = append(dst, '[')
	first := true
	err = t.eachRow(false, func(row []string) error {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		var err error
		dst, err = w.append(dst, row)
		return err
	})
	if err != nil {
		return nil, err
	}
	return append(dst, ']'), nil
}

// rowWriter writes a table's rows as JSON objects.
type rowWriter struct {
	numeric []bool
	order   []int    // the columns by name
	keys    [][]byte // `"name":` of each column
	perRow  int      // about the bytes of a row's object besides its cells' text
}

func (t *table) rowWriter() (*rowWriter, error) {
	names, numeric, err := t.columns()
	if err != nil {
		return nil, err
	}
	w := &rowWriter{numeric: numeric, order: make([]int, len(names)), keys: make([][]byte, len(names)), perRow: 2}
	for j := range w.order {
		w.order[j] = j
	}
	slices.SortFunc(w.order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	for j, name := range names {
		w.keys[j] = append(jsonw.AppendString(nil, name), ':')
		w.perRow += len(w.keys[j]) + 3 // a comma, and the quotes of a text cell
	}
	return w, nil
}

// append appends row's object: the bytes json.Marshal writes for the record records()
// makes of it.
func (w *rowWriter) append(dst []byte, row []string) ([]byte, error) {
	dst = append(dst, '{')
	for k, j := range w.order {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, w.keys[j]...)
		cell := ""
		if j < len(row) {
			cell = row[j]
		}
		switch {
		case !w.numeric[j]:
			dst = jsonw.AppendString(dst, cell)
		case strings.TrimSpace(cell) == "":
			dst = append(dst, "null"...)
		default:
			text := strings.TrimSpace(cell)
			if ShortestNumber(text) {
				dst = append(dst, text...)
				break
			}
			f, _ := strconv.ParseFloat(text, 64)
			var err error
			if dst, err = jsonw.AppendFloat(dst, f); err != nil {
				return dst, err
			}
		}
	}
	return append(dst, '}'), nil
}

func (t *table) records() ([]map[string]any, error) {
	names, numeric, err := t.columns()
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, t.n)
	err = t.eachRow(true, func(row []string) error {
		rec := make(map[string]any, len(names))
		for j, name := range names {
			cell := ""
			if j < len(row) {
				cell = row[j]
			}
			switch {
			case !numeric[j]:
				rec[name] = cell
			case strings.TrimSpace(cell) == "":
				rec[name] = nil
			default:
				f, _ := strconv.ParseFloat(strings.TrimSpace(cell), 64)
				rec[name] = f
			}
		}
		out = append(out, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// isNumber reports whether s is a decimal number that converts to float64 without losing
// what it identifies: not "007", not a 20-digit account number, not NaN or Inf. The form
// is [+-]digits[.digits][(e|E)[+-]digits], with digits before or after the point; it is
// checked by hand because every cell of a column is asked (a regular expression was a
// third of extracting a 50,000-row CSV).
func isNumber(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intLen := i - intStart
	fracLen := 0
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			fracLen++
		}
	}
	if intLen == 0 && fracLen == 0 {
		return false // "", ".", "+", "e5"
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		expStart := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == expStart {
			return false
		}
	}
	if i != len(s) {
		return false
	}
	if intLen > 1 && s[intStart] == '0' {
		return false
	}
	if intLen > 15 {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// columnNames names n columns from header: trimmed, column_<n> when empty, _2, _3 ... on
// repeats. The search for a free suffix goes on from where it stopped for the same name:
// from 2 each time, a header of 20,000 "a" took a minute.
func columnNames(header []string, n int) []string {
	names := make([]string, n)
	used := map[string]bool{}
	next := map[string]int{}
	for j := range n {
		name := ""
		if j < len(header) {
			name = strings.TrimSpace(header[j])
		}
		if name == "" {
			name = "column_" + strconv.Itoa(j+1)
		}
		base := name
		for k := max(next[base], 2); used[name]; k++ {
			name = base + "_" + strconv.Itoa(k)
			next[base] = k + 1
		}
		used[name] = true
		names[j] = name
	}
	return names
}
