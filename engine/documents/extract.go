package documents

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"path"
	"slices"
	"strconv"
	"strings"

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
// a *TooManyCellsError.
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

// csvTable reads a CSV document's cells; nil for a document without a header.
func csvTable(data []byte, limit int) (*table, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, utf8BOM)))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err)
	}
	t := &table{limit: limit, size: len(data)}
	t.header = header
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("csv: %w", err)
		}
		t.add(rec)
	}
	return t, nil
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

// table is a header and rows of text cells, turned into typed records.
type table struct {
	header []string
	rows   [][]string
	// n counts the non-empty rows; only the first limit are kept.
	n     int
	cols  int
	limit int
	size  int // of the document, in bytes: it bounds the cells (cellLimit)
}

func (t *table) add(row []string) {
	last := -1
	for i, c := range row {
		if strings.TrimSpace(c) != "" {
			last = i
		}
	}
	if last < 0 {
		return
	}
	t.n++
	if t.n > t.limit {
		return
	}
	row = row[:last+1]
	t.cols = max(t.cols, len(row))
	t.rows = append(t.rows, row)
}

// columns checks the table's size and gives its columns' names and which are numeric.
func (t *table) columns() (names []string, numeric []bool, err error) {
	if t.n > t.limit {
		return nil, nil, &TooManyRowsError{Rows: t.n, Limit: t.limit}
	}
	cols := max(t.cols, len(t.header))
	if limit := cellLimit(t.size); len(t.rows)*cols > limit {
		return nil, nil, &TooManyCellsError{Limit: limit, Size: t.size}
	}
	names = columnNames(t.header, cols)
	numeric = make([]bool, len(names))
	for j := range names {
		numeric[j] = t.numericColumn(j)
	}
	return names, numeric, nil
}

// appendJSON appends the records as one JSON array: each the bytes json.Marshal writes for
// the record records() makes of its row (keys sorted, numbers in their shortest form).
func (t *table) appendJSON(dst []byte) ([]byte, error) {
	names, numeric, err := t.columns()
	if err != nil {
		return nil, err
	}
	order := make([]int, len(names))
	for j := range order {
		order[j] = j
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	keys := make([][]byte, len(names))
	perRow := 2 // {}, and a comma between rows
	for j, name := range names {
		keys[j] = append(jsonw.AppendString(nil, name), ':')
		perRow += len(keys[j]) + 3 // a comma, and the quotes of a text cell
	}
	// Grown once to about the output's size: the cells' text plus every row's keys.
	// Growing by doubling copied the output about twice over.
	dst = slices.Grow(dst, t.size+len(t.rows)*perRow+2)
	dst = append(dst, '[')
	for i, row := range t.rows {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		for k, j := range order {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, keys[j]...)
			cell := ""
			if j < len(row) {
				cell = row[j]
			}
			switch {
			case !numeric[j]:
				dst = jsonw.AppendString(dst, cell)
			case strings.TrimSpace(cell) == "":
				dst = append(dst, "null"...)
			default:
				f, _ := strconv.ParseFloat(strings.TrimSpace(cell), 64)
				if dst, err = jsonw.AppendFloat(dst, f); err != nil {
					return nil, err
				}
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, ']'), nil
}

func (t *table) records() ([]map[string]any, error) {
	names, numeric, err := t.columns()
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(t.rows))
	for i, row := range t.rows {
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
		out[i] = rec
	}
	return out, nil
}

func (t *table) numericColumn(j int) bool {
	seen := false
	for _, row := range t.rows {
		if j >= len(row) {
			continue
		}
		c := strings.TrimSpace(row[j])
		if c == "" {
			continue
		}
		if !isNumber(c) {
			return false
		}
		seen = true
	}
	return seen
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
