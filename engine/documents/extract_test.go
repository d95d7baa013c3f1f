package documents_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xuri/excelize/v2"

	"github.com/svcflow/svcflow/engine/documents"
)

func TestExtractCSV(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		data string
		want []map[string]any
	}{
		{
			name: "quotes, commas and newlines in quoted fields",
			data: "id,memo,amount\n1,\"Smith, John\",10.5\n2,\"said \"\"hi\"\"\",-3\n3,\"two\nlines\",1e3\n",
			want: []map[string]any{
				{"id": 1.0, "memo": "Smith, John", "amount": 10.5},
				{"id": 2.0, "memo": `said "hi"`, "amount": -3.0},
				{"id": 3.0, "memo": "two\nlines", "amount": 1000.0},
			},
		},
		{
			name: "byte order mark and CRLF",
			data: "\xEF\xBB\xBFinvoice,total\r\nINV-1,100\r\nINV-2,250.75\r\n",
			want: []map[string]any{
				{"invoice": "INV-1", "total": 100.0},
				{"invoice": "INV-2", "total": 250.75},
			},
		},
		{
			name: "a column with one non-number stays text; empty numbers are null",
			data: "ref,amount,qty\nA,1,\nB,n/a,2\nC,3,4\n",
			want: []map[string]any{
				{"ref": "A", "amount": "1", "qty": nil},
				{"ref": "B", "amount": "n/a", "qty": 2.0},
				{"ref": "C", "amount": "3", "qty": 4.0},
			},
		},
		{
			name: "identifiers keep their text",
			data: "zip,account,small\n02134,12345678901234567890,0.5\n10001,12345678901234567891,0\n",
			want: []map[string]any{
				{"zip": "02134", "account": "12345678901234567890", "small": 0.5},
				{"zip": "10001", "account": "12345678901234567891", "small": 0.0},
			},
		},
		{
			name: "short, long and blank rows; unnamed and repeated headers",
			data: "a,,a\n1,2,3,4\n\n,,\nx\n",
			want: []map[string]any{
				{"a": "1", "column_2": 2.0, "a_2": 3.0, "column_4": 4.0},
				{"a": "x", "column_2": nil, "a_2": nil, "column_4": nil},
			},
		},
		{
			// As Python's csv module reads them (issue 31): a '"' in a field that does not
			// start with one is a character of the field.
			name: "a quote inside a field that is not quoted",
			data: "item,size,qty\nTV,55\" screen,1\nTV,\"55\"\" screen\",2\nRuler,12\",3\nnote,he said \"hi\" twice,4\nx\"\"y,\"\",5\n",
			want: []map[string]any{
				{"item": "TV", "size": `55" screen`, "qty": 1.0},
				{"item": "TV", "size": `55" screen`, "qty": 2.0},
				{"item": "Ruler", "size": `12"`, "qty": 3.0},
				{"item": "note", "size": `he said "hi" twice`, "qty": 4.0},
				{"item": `x""y`, "size": "", "qty": 5.0},
			},
		},
		{
			name: "a quote in a header that is not quoted, CRLF",
			data: "size (\"),n\r\n55,1\r\n",
			want: []map[string]any{{`size (")`: 55.0, "n": 1.0}},
		},
		{
			name: "header only",
			data: "a,b\n",
			want: []map[string]any{},
		},
		{
			name: "empty",
			data: "",
			want: []map[string]any{},
		},
		{
			name: "not numbers",
			data: "v\nNaN\nInf\n0x10\n1_000\n",
			want: []map[string]any{{"v": "NaN"}, {"v": "Inf"}, {"v": "0x10"}, {"v": "1_000"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := documents.Extract("text/csv", "x.csv", []byte(tc.data))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// A field that starts with '"' and whose quotes are wrong is refused, with its line and
// column: read on as csv.Reader's LazyQuotes does, it would take the rest of the document
// as one cell.
func TestExtractCSVErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ data, want string }{
		{"a,b\n1,\"unterminated\n", `csv: parse error on line 2, column 17: extraneous or missing " in quoted-field`},
		{"item,size\nTV,\"55\" screen\",2\n", `csv: parse error on line 2, column 7: extraneous or missing " in quoted-field`},
		{"a,b\n\"x,1\ny,2\n", `csv: record on line 2; parse error on line 3, column 5: extraneous or missing " in quoted-field`},
		{"a,b\r\n1,\"two\r\nlines\"x\r\n", `csv: record on line 2; parse error on line 3, column 6: extraneous or missing " in quoted-field`},
		{"a,b\n55\" screen,1\n\"ab\"c,1\n", `csv: parse error on line 3, column 4: extraneous or missing " in quoted-field`},
		{"a\n\n\n\"x\"y\n", `csv: parse error on line 4, column 3: extraneous or missing " in quoted-field`},
		{"\"a\"b,c\n1,2\n", `csv: parse error on line 1, column 3: extraneous or missing " in quoted-field`},
	} {
		_, err := documents.Extract("text/csv", "x.csv", []byte(tc.data))
		require.EqualError(t, err, tc.want, "%q", tc.data)
	}
}

func TestExtractJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		data    string
		want    []map[string]any
		wantErr string
	}{
		{
			name: "array of objects keeps JSON types",
			data: `[{"id":"1","amount":10.5,"ok":true,"tags":["a"]},{"id":"2","amount":null}]`,
			want: []map[string]any{
				{"id": "1", "amount": 10.5, "ok": true, "tags": []any{"a"}},
				{"id": "2", "amount": nil},
			},
		},
		{name: "empty array", data: " [ ] ", want: []map[string]any{}},
		{name: "byte order mark", data: "\xEF\xBB\xBF[{\"a\":1}]", want: []map[string]any{{"a": 1.0}}},
		{name: "an object", data: `{"a":1}`, wantErr: "want an array of objects"},
		{name: "an element that is not an object", data: `[{"a":1},2]`, wantErr: "element 1 is not an object"},
		{name: "data after the array", data: `[] []`, wantErr: "data after the array"},
		{name: "not JSON", data: `[{"a":`, wantErr: "json:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := documents.Extract("application/json", "x.json", []byte(tc.data))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// workbook builds an XLSX file whose first sheet holds rows (A1 onwards); style, when set,
// is applied to the cells it names.
func workbook(t testing.TB, rows [][]any, style map[string]*excelize.Style) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	// A second sheet that must not be read.
	_, err := f.NewSheet("Other")
	require.NoError(t, err)
	require.NoError(t, f.SetCellValue("Other", "A1", "not me"))
	for i, row := range rows {
		cell, err := excelize.CoordinatesToCellName(1, i+1)
		require.NoError(t, err)
		require.NoError(t, f.SetSheetRow("Sheet1", cell, &row))
	}
	for cell, st := range style {
		id, err := f.NewStyle(st)
		require.NoError(t, err)
		require.NoError(t, f.SetCellStyle("Sheet1", cell, cell, id))
	}
	var buf bytes.Buffer
	require.NoError(t, f.Write(&buf))
	return buf.Bytes()
}

func TestExtractXLSX(t *testing.T) {
	t.Parallel()
	iso := "yyyy-mm-dd"
	money := "$#,##0.00"
	data := workbook(t, [][]any{
		{"invoice", "amount", "paid", "due", "note", "rate"},
		{"INV-1", 1234.5, true, time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC), "first", 0.15},
		{"INV-2", 99, false, time.Date(2024, 2, 29, 13, 45, 0, 0, time.UTC), nil, 0.2},
		{},
		{"INV-3", 7, nil, nil, "after a blank row"},
	}, map[string]*excelize.Style{
		"B2": {CustomNumFmt: &money},
		"D2": {CustomNumFmt: &iso},
		"F2": {NumFmt: 10}, // 0.00%
	})
	got, err := documents.Extract(documents.MediaXLSX, "book.xlsx", data)
	require.NoError(t, err)
	require.Equal(t, []map[string]any{
		{"invoice": "INV-1", "amount": 1234.5, "paid": "TRUE", "due": "2024-01-31", "note": "first", "rate": 0.15},
		{"invoice": "INV-2", "amount": 99.0, "paid": "FALSE", "due": "2024-02-29T13:45:00", "note": "", "rate": 0.2},
		{"invoice": "INV-3", "amount": 7.0, "paid": "", "due": "", "note": "after a blank row", "rate": nil},
	}, got)

	_, err = documents.Extract(documents.MediaXLSX, "book.xlsx", []byte("not a zip"))
	require.ErrorContains(t, err, "xlsx:")
}

func TestExtractRowLimit(t *testing.T) {
	t.Parallel()
	csvOf := func(n int) []byte {
		var b strings.Builder
		b.WriteString("n\n")
		for i := range n {
			fmt.Fprintf(&b, "%d\n", i)
		}
		return []byte(b.String())
	}
	jsonOf := func(n int) []byte {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"n":%d}`, i)
		}
		return []byte("[" + strings.Join(parts, ",") + "]")
	}
	xlsxOf := func(n int) []byte {
		rows := [][]any{{"n"}}
		for i := range n {
			rows = append(rows, []any{i})
		}
		return workbook(t, rows, nil)
	}
	for _, tc := range []struct {
		name, contentType string
		build             func(int) []byte
	}{
		{"csv", "text/csv", csvOf},
		{"json", "application/json", jsonOf},
		{"xlsx", documents.MediaXLSX, xlsxOf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rows, err := documents.Extract(tc.contentType, "", tc.build(documents.MaxRows))
			require.NoError(t, err)
			require.Len(t, rows, documents.MaxRows)
			require.Equal(t, float64(documents.MaxRows-1), rows[documents.MaxRows-1]["n"])

			_, err = documents.Extract(tc.contentType, "", tc.build(12000))
			var tooMany *documents.TooManyRowsError
			require.True(t, errors.As(err, &tooMany), "%v", err)
			require.Equal(t, 12000, tooMany.Rows)
			require.EqualError(t, err, "12000 rows; the limit is 10,000")
		})
	}
}

func TestDetectFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		contentType, name string
		want              documents.Format
	}{
		{"text/csv", "", documents.FormatCSV},
		{"text/csv; charset=utf-8", "data.json", documents.FormatCSV},
		{"application/json", "", documents.FormatJSON},
		{"application/vnd.api+json", "", documents.FormatJSON},
		{documents.MediaXLSX, "", documents.FormatXLSX},
		{"application/octet-stream", "Report.XLSX", documents.FormatXLSX},
		{"text/plain", "rows.csv", documents.FormatCSV},
		{"application/vnd.ms-excel", "export.csv", documents.FormatCSV},
		{"", "list.json", documents.FormatJSON},
		{"not a type", "a.csv", documents.FormatCSV},
	} {
		got, err := documents.DetectFormat(tc.contentType, tc.name)
		require.NoError(t, err, "%q %q", tc.contentType, tc.name)
		require.Equal(t, tc.want, got, "%q %q", tc.contentType, tc.name)
	}
	for _, tc := range [][2]string{{"application/pdf", "a.pdf"}, {"application/octet-stream", "a"}, {"", ""}, {"application/vnd.ms-excel", "old.xls"}} {
		_, err := documents.DetectFormat(tc[0], tc[1])
		require.ErrorIs(t, err, documents.ErrUnsupportedFormat, "%q %q", tc[0], tc[1])
	}
}

func TestContentTypeFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ declared, name, want string }{
		{"text/csv", "a.json", "text/csv"},
		{"", "a.csv", "text/csv"},
		{"application/octet-stream", "A.XLSX", documents.MediaXLSX},
		{"application/octet-stream", "a.json", "application/json"},
		{"application/octet-stream", "a.pdf", "application/pdf"},
		{"application/octet-stream", "a", "application/octet-stream"},
		{"", "", "application/octet-stream"},
		{" text/plain ", "a.csv", "text/plain"},
	} {
		require.Equal(t, tc.want, documents.ContentTypeFor(tc.declared, tc.name), "%q %q", tc.declared, tc.name)
	}
}
