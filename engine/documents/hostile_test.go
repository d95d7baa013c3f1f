package documents_test

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xuri/excelize/v2"

	"github.com/svcflow/svcflow/engine/documents"
)

// Hostile input (issue 21): documents that cost nothing to upload and, extracted, a record
// of every column per row. Each is refused before its records are made; before, each was
// extracted at the cost in the test's comment.

// withSheetXML returns the workbook with its first sheet's XML passed through edit: the
// shapes excelize does not write.
func withSheetXML(t testing.TB, data []byte, edit func(string) string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		r, err := f.Open()
		require.NoError(t, err)
		b, err := io.ReadAll(r)
		require.NoError(t, err)
		if f.Name == "xl/worksheets/sheet1.xml" {
			b = []byte(edit(string(b)))
		}
		w, err := zw.Create(f.Name)
		require.NoError(t, err)
		_, err = w.Write(b)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return out.Bytes()
}

func TestHostileDocuments(t *testing.T) {
	t.Parallel()

	// 8 KB: 2,001 rows under a row of 4,001 columns, 8 million cells (was 6.5 s, 627 MB).
	var wide strings.Builder
	wide.WriteString("a\n" + strings.Repeat(",", 4000) + "x\n")
	for range 2000 {
		wide.WriteString("1\n")
	}

	// 12 KB: 999 rows of one cell in the last column a sheet has, 16 million cells (was 15 s,
	// 3.7 GB).
	far := excelize.NewFile()
	sw, err := far.NewStreamWriter("Sheet1")
	require.NoError(t, err)
	require.NoError(t, sw.SetRow("A1", []any{"h"}))
	for i := 2; i <= 1000; i++ {
		cell, err := excelize.CoordinatesToCellName(excelize.MaxColumns, i)
		require.NoError(t, err)
		require.NoError(t, sw.SetRow(cell, []any{1}))
	}
	require.NoError(t, sw.Flush())
	var farXLSX bytes.Buffer
	require.NoError(t, far.Write(&farXLSX))

	for _, tc := range []struct {
		name, contentType string
		data              []byte
	}{
		{"csv rows far shorter than one wide row", documents.MediaCSV, []byte(wide.String())},
		{"csv header wider than its rows", documents.MediaCSV, []byte(strings.Repeat("h,", 1500) + "h\n" + strings.Repeat("1\n", 1000))},
		{"xlsx cells in the last column", documents.MediaXLSX, farXLSX.Bytes()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := documents.ExtractLimit(tc.contentType, "", tc.data, documents.MaxMatchRows)
			took := time.Since(start)
			var tooMany *documents.TooManyCellsError
			require.True(t, errors.As(err, &tooMany), "%v", err)
			require.Equal(t, documents.MinCells, tooMany.Limit)
			require.Equal(t, len(tc.data), tooMany.Size)
			require.ErrorContains(t, err, "more than 1,000,000 cells (rows × columns, the empty ones included), the limit for a document of ")
			t.Logf("%s (%d bytes): refused in %v", tc.name, len(tc.data), took)
		})
	}

	t.Run("xlsx row past the last a sheet has", func(t *testing.T) {
		t.Parallel()
		// Rows up to a row number are walked one by one: r="50000000" took half a second,
		// and the value in it was dropped without an error.
		data := withSheetXML(t, workbook(t, [][]any{{"h"}, {1}}, nil), func(s string) string {
			return strings.NewReplacer(`<row r="2"`, `<row r="50000000"`, `r="A2"`, `r="A50000000"`).Replace(s)
		})
		start := time.Now()
		_, err := documents.Extract(documents.MediaXLSX, "", data)
		took := time.Since(start)
		require.ErrorContains(t, err, "xlsx: a row past row 1,048,576, the last a sheet has")
		t.Logf("xlsx with row 50,000,000 (%d bytes): refused in %v", len(data), took)
	})

	t.Run("a shared string index below zero", func(t *testing.T) {
		t.Parallel()
		// excelize v2.10.1 panics reading it (index out of range [-1]): the process that
		// resolved a doc: reference to it ended.
		data := withSheetXML(t, workbook(t, [][]any{{"h"}, {"x"}}, nil), func(s string) string {
			const cell = `<c r="A2" t="s"><v>2</v></c>` // "x", after the other sheet's and "h"
			require.Contains(t, s, cell)
			return strings.Replace(s, cell, `<c r="A2" t="s"><v>-1</v></c>`, 1)
		})
		_, err := documents.Extract(documents.MediaXLSX, "", data)
		require.ErrorContains(t, err, "xlsx: the workbook cannot be read: runtime error: index out of range [-1]")
	})

	t.Run("a cell that cannot be read is an error", func(t *testing.T) {
		t.Parallel()
		data := withSheetXML(t, workbook(t, [][]any{{"h"}, {1}, {2}}, nil), func(s string) string {
			return strings.Replace(s, `r="A2"`, `r="A0"`, 1)
		})
		_, err := documents.Extract(documents.MediaXLSX, "", data)
		require.ErrorContains(t, err, "xlsx: row 2:")
	})

	// 40 KB of one repeated name took 57 s: each name searched its suffix from _2.
	t.Run("a header of one name repeated", func(t *testing.T) {
		t.Parallel()
		const n = 20_000
		data := []byte(strings.Repeat("a,", n-1) + "a\n1\n")
		done := make(chan []map[string]any, 1)
		go func() {
			recs, err := documents.Extract(documents.MediaCSV, "", data)
			if err != nil {
				t.Error(err)
			}
			done <- recs
		}()
		select {
		case recs := <-done:
			require.Len(t, recs, 1)
			require.Len(t, recs[0], n)
			require.Equal(t, 1.0, recs[0]["a"])
			require.Contains(t, recs[0], "a_2")
			require.Contains(t, recs[0], "a_"+strconv.Itoa(n))
		case <-time.After(30 * time.Second):
			t.Fatal("naming 20,000 columns of one name did not end in 30 s")
		}
	})
}

// An honest table at the bound is extracted: 10,000 rows of 100 columns are MinCells.
func TestExtractAtTheCellLimit(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for j := range 100 {
		if j > 0 {
			b.WriteByte(',')
		}
		b.WriteString("c" + strconv.Itoa(j))
	}
	b.WriteByte('\n')
	for range 10_000 {
		b.WriteString(strings.Repeat("1,", 99) + "1\n")
	}
	recs, err := documents.Extract(documents.MediaCSV, "", []byte(b.String()))
	require.NoError(t, err)
	require.Len(t, recs, 10_000)

	// Short rows under the same header: the same cells, from a document a tenth the size.
	short := strings.SplitN(b.String(), "\n", 2)[0] + "\n" + strings.Repeat("1\n", 10_000)
	recs, err = documents.Extract(documents.MediaCSV, "", []byte(short))
	require.NoError(t, err, "MinCells holds whatever the size")
	require.Len(t, recs[9_999], 100)
	_, err = documents.ExtractLimit(documents.MediaCSV, "", []byte(short+"1\n"), documents.MaxMatchRows)
	var tooMany *documents.TooManyCellsError
	require.True(t, errors.As(err, &tooMany), "one row more is over: %v", err)
}

// TestExtractXLSXPastMaxRows: a matcher's leg reads up to MaxMatchRows rows, each converted
// as the first MaxRows are. Rows past MaxRows were counted without converting them, as if
// they were over the limit: their booleans came out as 1 and their dates as serials.
func TestExtractXLSXPastMaxRows(t *testing.T) {
	t.Parallel()
	iso := "yyyy-mm-dd"
	rows := [][]any{{"n", "paid", "due"}}
	for i := range documents.MaxRows + 5 {
		rows = append(rows, []any{i, true, time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)})
	}
	style := map[string]*excelize.Style{}
	for _, i := range []int{2, documents.MaxRows + 6} {
		style["C"+strconv.Itoa(i)] = &excelize.Style{CustomNumFmt: &iso}
	}
	recs, err := documents.ExtractLimit(documents.MediaXLSX, "", workbook(t, rows, style), documents.MaxMatchRows)
	require.NoError(t, err)
	require.Len(t, recs, documents.MaxRows+5)
	require.Equal(t, map[string]any{"n": 0.0, "paid": "TRUE", "due": "2024-01-31"}, recs[0])
	require.Equal(t, map[string]any{"n": float64(documents.MaxRows + 4), "paid": "TRUE", "due": "2024-01-31"}, recs[documents.MaxRows+4])
}
