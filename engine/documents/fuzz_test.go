package documents_test

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"

	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/internal/fuzzbound"
)

// Fuzz targets of extraction. Each asserts what Extract documents for any input: an error,
// or at most the limit's records; for tables, records of one set of columns whose values
// are text, finite numbers or (in number columns) null, a column being numbers or text
// throughout, and no more cells than max(MinCells, size); the same answer under a limit of
// 3 as under MaxRows when there are at most 3 rows, else a *TooManyRowsError counting
// them; and each call within fuzzbound.Bound.
//
//	go test ./engine/documents -run '^$' -fuzz '^FuzzExtractCSV$' -fuzztime 30s

// smallLimit is the second limit each input is extracted under.
const smallLimit = 3

// extractBoth extracts data under MaxRows and under smallLimit, within fuzzbound.Bound each,
// and checks what the two answers must have in common.
func extractBoth(t *testing.T, contentType string, data []byte, table bool) ([]map[string]any, error) {
	t.Helper()
	var recs, few []map[string]any
	var err, fewErr error
	fuzzbound.Within(t, "extraction", func() { recs, err = documents.ExtractLimit(contentType, "", data, documents.MaxRows) })
	fuzzbound.Within(t, "extraction under a small limit", func() { few, fewErr = documents.ExtractLimit(contentType, "", data, smallLimit) })

	var tooMany *documents.TooManyRowsError
	var tooManyCells *documents.TooManyCellsError
	switch {
	case errors.As(err, &tooMany):
		if tooMany.Limit != documents.MaxRows || tooMany.Rows <= tooMany.Limit {
			t.Fatalf("TooManyRowsError %+v under limit %d", tooMany, documents.MaxRows)
		}
	case errors.As(err, &tooManyCells):
		if tooManyCells.Size != len(data) || tooManyCells.Limit != max(documents.MinCells, len(data)) {
			t.Fatalf("TooManyCellsError %+v for %d bytes", tooManyCells, len(data))
		}
	case err != nil:
		if fewErr == nil {
			t.Fatalf("refused under MaxRows (%v), yet extracted under %d", err, smallLimit)
		}
	default:
		checkRecords(t, recs, len(data), table)
		if len(recs) <= smallLimit {
			if fewErr != nil || !reflect.DeepEqual(few, recs) {
				t.Fatalf("%d records, yet under limit %d: %v, %v", len(recs), smallLimit, few, fewErr)
			}
		} else if !errors.As(fewErr, &tooMany) || tooMany.Rows != len(recs) || tooMany.Limit != smallLimit {
			t.Fatalf("%d records, yet under limit %d: %v", len(recs), smallLimit, fewErr)
		}
	}
	return recs, err
}

// checkRecords holds records to what Extract documents.
func checkRecords(t *testing.T, recs []map[string]any, size int, table bool) {
	t.Helper()
	if recs == nil {
		t.Fatal("no error and no records: want an empty list")
	}
	if len(recs) > documents.MaxRows {
		t.Fatalf("%d records, limit %d", len(recs), documents.MaxRows)
	}
	if !table || len(recs) == 0 {
		return
	}
	if cells := len(recs) * len(recs[0]); cells > max(documents.MinCells, size) {
		t.Fatalf("%d cells from %d bytes", cells, size)
	}
	numbers := map[string]bool{}
	for name, v := range recs[0] {
		_, numbers[name] = v.(float64)
		if v == nil {
			numbers[name] = true
		}
	}
	for i, rec := range recs {
		if len(rec) != len(recs[0]) {
			t.Fatalf("record %d has %d columns, record 0 %d", i, len(rec), len(recs[0]))
		}
		for name, v := range rec {
			isNumber, ok := numbers[name]
			if !ok {
				t.Fatalf("record %d has a column %q that record 0 lacks", i, name)
			}
			switch x := v.(type) {
			case string:
				if isNumber {
					t.Fatalf("column %q mixes numbers and text (%q)", name, x)
				}
			case float64:
				if !isNumber || math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("column %q: %v in a column of text, or not finite", name, x)
				}
			case nil:
				if !isNumber {
					t.Fatalf("column %q: null in a column of text", name)
				}
			default:
				t.Fatalf("column %q holds a %T", name, v)
			}
		}
	}
}

var utf8BOM = []byte("\xEF\xBB\xBF")

// FuzzExtractCSV also reads the input with encoding/csv: where its strict reading reads it,
// extraction reads it (or refuses it for a limit) and gives one record per row after the
// header that has a non-blank cell; where that reading first meets a quoted field whose
// quotes are wrong, extraction fails with the same error; where it first meets a '"' in a
// field that is not quoted, extraction reads the document as csv.Reader with LazyQuotes
// does (as Python's csv module does), or fails for a quoted field after it.
func FuzzExtractCSV(f *testing.F) {
	for _, seed := range []string{
		"", "\n", "a", "a,b\n1,2\n", "a,b\n1,2\n3\n", "invoice,amount\nINV-1,10\nINV-2,\n,\n", "\xEF\xBB\xBFa\n1\n",
		"a,a,a,column_2\n1,2,3,4,5\n", "a\n007\n1e3\n-0\n.5\n+1\n", "a\nNaN\nInf\n1\n", "a\n1234567890123456\n",
		"a,\"b\nc\"\n\"x\"\"y\",2\n", "a,b\n1,\"unterminated\n", "a\n1\n2\n3\n4\n", "a;b\n1;2\n", " a , b \n 1 , 2 \n",
		"h\n" + strings.Repeat(",", 40) + "x\n1\n1\n",
		"\n\na,b\n\n1,2\n  \n,\n3,4,5", "a,b\r\n1,2\r\n", "a\n 1 \n2 ,  \n", "a,b,c\n1,,\n,  ,x\n",
		"item,size\nTV,55\" screen\n", "a,b\n55\" x,1\n\"ab\"c,1\n", "a\n\"x\"\r", "a\r\n\r\n\"x\r\n", "a\"\"b,\"\"\n\"\"\"\"\r\n",
		"\xEF\xBB\xBF\xEF\xBB\xBF\nx\n", "\xEF\xBB\xBF\xEF\xBB\xBFa\n1\n", "\"\n\r", "\"\r\n\r", "a\n\"x\ny\n\r",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := extractBoth(t, documents.MediaCSV, data, true)

		body := bytes.TrimPrefix(data, utf8BOM)
		r := csv.NewReader(bytes.NewReader(body))
		r.FieldsPerRecord = -1
		rows, readErr := r.ReadAll()
		var strictErr *csv.ParseError
		bareQuote := errors.As(readErr, &strictErr) && errors.Is(strictErr.Err, csv.ErrBareQuote)
		if bareQuote {
			lazy := csv.NewReader(bytes.NewReader(body))
			lazy.FieldsPerRecord, lazy.LazyQuotes = -1, true
			rows, readErr = lazy.ReadAll()
		}
		var tooMany *documents.TooManyRowsError
		var tooManyCells *documents.TooManyCellsError
		var parseErr *csv.ParseError
		switch {
		case bareQuote && err != nil && !errors.As(err, &tooMany) && !errors.As(err, &tooManyCells):
			// A quoted field after the bare quote is wrong: refused as csv.Reader refuses it.
			if !errors.As(err, &parseErr) || !errors.Is(parseErr.Err, csv.ErrQuote) || parseErr.Line < strictErr.Line {
				t.Fatalf("extraction: %v, after encoding/csv's %v", err, strictErr)
			}
		case errors.As(err, &tooMany), errors.As(err, &tooManyCells):
			if readErr != nil {
				t.Fatalf("refused for its size (%v), but encoding/csv does not read it: %v", err, readErr)
			}
		case (err == nil) != (readErr == nil):
			t.Fatalf("extraction: %v; encoding/csv: %v", err, readErr)
		case err != nil:
			if err.Error() != "csv: "+readErr.Error() {
				t.Fatalf("extraction: %v; encoding/csv: %v", err, readErr)
			}
		case err == nil:
			want := 0
			for i, row := range rows {
				if i > 0 && strings.TrimSpace(strings.Join(row, "")) != "" {
					want++
				}
			}
			if len(recs) != want {
				t.Fatalf("%d records from %d non-blank rows", len(recs), want)
			}
		}
		// The records as bytes, written from the cells: json.Marshal's bytes of the maps.
		raw, rawErr := documents.ExtractJSONLimit(documents.MediaCSV, "f.csv", data, documents.MaxRows)
		maps, mapsErr := documents.ExtractLimit(documents.MediaCSV, "f.csv", data, documents.MaxRows)
		if (rawErr == nil) != (mapsErr == nil) {
			t.Fatalf("as bytes: %v; as maps: %v", rawErr, mapsErr)
		}
		if mapsErr == nil {
			want, err := json.Marshal(maps)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw, want) {
				t.Fatalf("as bytes:\n%s\njson.Marshal of the maps:\n%s", raw, want)
			}
		}
		// A document without quotes or carriage returns is read again by cutting its lines
		// at commas: the same records as csv.Reader's.
		var slow []byte
		var slowErr error
		documents.WithCSVReaderOnly(func() {
			slow, slowErr = documents.ExtractJSONLimit(documents.MediaCSV, "f.csv", data, documents.MaxRows)
		})
		if (rawErr == nil) != (slowErr == nil) || !bytes.Equal(raw, slow) {
			t.Fatalf("cut at commas (%v):\n%s\nread by csv.Reader (%v):\n%s", rawErr, raw, slowErr, slow)
		}
		checkCSVRecords(t, data, raw, rawErr)
	})
}

// jsonString is s as encoding/json gives it back: each byte that is not UTF-8 is U+FFFD.
func jsonString(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkCSVRecords: a plain document read as CSVRecords has the records of the JSON array
// raw (ExtractJSONLimit's, or its error rawErr), each AppendJSON the element's bytes, each
// cell as its key's value says; any other document is not read so.
func checkCSVRecords(t *testing.T, data, raw []byte, rawErr error) {
	t.Helper()
	recs, ok, err := documents.ReadCSVRecords(documents.MediaCSV, "f.csv", data, documents.MaxRows)
	body := bytes.TrimPrefix(data, utf8BOM)
	plain := bytes.IndexByte(body, '"') < 0 && bytes.IndexByte(body, '\r') < 0
	header, _, _ := bytes.Cut(bytes.TrimLeft(body, "\n"), []byte("\n"))
	plain = plain && utf8.Valid(header)
	if ok != (plain && err == nil) || (err == nil) != (rawErr == nil) && plain {
		t.Fatalf("plain %v: read as records %v (%v); as JSON: %v", plain, ok, err, rawErr)
	}
	if !ok {
		return
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		t.Fatal(err)
	}
	if recs.Len() != len(elems) {
		t.Fatalf("%d records, %d in the JSON", recs.Len(), len(elems))
	}
	var cells []string
	for i, want := range elems {
		got, err := recs.AppendJSON(nil, i)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("record %d: %s (%v), want %s", i, got, err, want)
		}
		var m map[string]any
		if err := json.Unmarshal(want, &m); err != nil {
			t.Fatal(err)
		}
		cells = recs.Cells(cells[:0], i)
		if len(m) != len(recs.Names()) {
			t.Fatalf("record %d has %d keys, %d names", i, len(m), len(recs.Names()))
		}
		for j, name := range recs.Names() {
			cell := ""
			if j < len(cells) {
				cell = cells[j]
			}
			v, present := m[name]
			switch {
			case !present:
				t.Fatalf("record %d: no key %q", i, name)
			case recs.Numeric(j) && strings.TrimSpace(cell) == "":
				if v != nil {
					t.Fatalf("record %d: %q is %v for a blank numeric cell", i, name, v)
				}
			case recs.Numeric(j):
				if _, isNum := v.(float64); !isNum {
					t.Fatalf("record %d: %q is %T in a numeric column", i, name, v)
				}
			case v != jsonString(t, cell):
				t.Fatalf("record %d: %q is %q, the cell %q", i, name, v, cell)
			}
		}
	}
}

// FuzzExtractJSON also decodes the input with json.Unmarshal: extraction succeeds exactly
// when that gives an array of objects (within the limit), and gives those objects.
func FuzzExtractJSON(f *testing.F) {
	for _, seed := range []string{
		`[]`, `[{}]`, `[{"a": 1}, {"b": "x"}]`, `[{"a": 1}, 2]`, `[null]`, `{}`, `"x"`, `[{"a": 1}] [2]`, `[{"a": 1}] `,
		"\xEF\xBB\xBF[{\"a\": 1}]", `[{"a": 1} {"b": 2}]`, `[{"a": 1},]`, `[{"a": {"b": [1, 2, {"c": null}]}}]`,
		`[{"a": 1, "a": 2}]`, `[{"a": 1e400}]`, `[{"a": "\ud800"}]`, `[{}, {}, {}, {}]`, ``, `[`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := extractBoth(t, documents.MediaJSON, data, false)

		var all []any
		decodeErr := json.Unmarshal(bytes.TrimPrefix(data, utf8BOM), &all)
		objects := decodeErr == nil && all != nil
		for _, v := range all {
			if _, ok := v.(map[string]any); !ok {
				objects = false
			}
		}
		var tooMany *documents.TooManyRowsError
		switch {
		case errors.As(err, &tooMany):
			if !objects || len(all) != tooMany.Rows {
				t.Fatalf("refused for %d rows, but json.Unmarshal: %d values, %v", tooMany.Rows, len(all), decodeErr)
			}
		case (err == nil) != objects:
			t.Fatalf("extraction: %v; json.Unmarshal: %v, an array of objects: %v", err, decodeErr, objects)
		case err == nil:
			want := make([]map[string]any, len(all))
			for i, v := range all {
				want[i] = v.(map[string]any)
			}
			if !reflect.DeepEqual(recs, want) {
				t.Fatalf("extracted %v; json.Unmarshal %v", recs, want)
			}
		}
	})
}

// workbookParts are the files of a workbook built by excelize, by name.
func workbookParts(t testing.TB, data []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string][]byte{}
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		if parts[f.Name], err = io.ReadAll(r); err != nil {
			t.Fatal(err)
		}
	}
	return parts
}

// zipParts writes parts as a workbook (stored, not deflated: the fuzzer's bytes go in as
// they are).
func zipParts(t testing.TB, parts map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, b := range parts {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const (
	sheetPart   = "xl/worksheets/sheet1.xml"
	stringsPart = "xl/sharedStrings.xml"
)

// FuzzExtractXLSX fuzzes the two parts of a workbook that hold its cells, the first sheet
// and the shared strings, inside a workbook excelize wrote (with a date style): a mutated
// zip would only fail its checksums. Seeds are the parts of real workbooks and shapes
// excelize does not write (row numbers past the last, cells far right, inline strings,
// errors, a bad reference).
func FuzzExtractXLSX(f *testing.F) {
	iso := "yyyy-mm-dd"
	template := workbookParts(f, workbook(f, [][]any{
		{"invoice", "amount", "paid", "due", "note"},
		{"INV-1", 1234.5, true, time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC), "first"},
		{"INV-2", 99, false, time.Date(2024, 2, 29, 13, 45, 0, 0, time.UTC), nil},
		{},
		{"INV-3", 7, nil, nil, "after a blank row"},
	}, map[string]*excelize.Style{"D2": {CustomNumFmt: &iso}, "D3": {NumFmt: 22}}))
	f.Add(template[sheetPart], template[stringsPart])
	for _, rows := range [][][]any{{{"n"}, {1}, {2}, {3}, {4}}, {{"a", "a", ""}, {"007", 1.5, true}}, {}} {
		parts := workbookParts(f, workbook(f, rows, nil))
		f.Add(parts[sheetPart], parts[stringsPart])
	}
	sst := template[stringsPart]
	for _, sheet := range []string{
		`<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>h</t></is></c></row><row r="50000000"><c r="A50000000"><v>1</v></c></row></sheetData></worksheet>`,
		`<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c></row><row r="2"><c r="XFD2"><v>1</v></c></row></sheetData></worksheet>`,
		`<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>99</v></c></row><row r="2"><c r="A0" t="e"><v>#DIV/0!</v></c><c r="B2" t="b"><v>1</v></c><c r="C2" s="1"><v>45322.5</v></c><c r="D2" t="d"><v>2024-01-31T00:00:00Z</v></c><c r="E2"><f>1+1</f><v>2</v></c></row></sheetData></worksheet>`,
		`<worksheet><sheetData><row><c><v>1</v></c></row><row><c t="s"><v>-1</v></c></row></sheetData></worksheet>`,
	} {
		f.Add([]byte(sheet), sst)
	}
	f.Fuzz(func(t *testing.T, sheet, strs []byte) {
		parts := make(map[string][]byte, len(template))
		for name, b := range template {
			parts[name] = b
		}
		parts[sheetPart], parts[stringsPart] = sheet, strs
		extractBoth(t, documents.MediaXLSX, zipParts(t, parts), true)
	})
}
