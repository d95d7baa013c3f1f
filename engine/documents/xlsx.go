package documents

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"
)

// XLSX limits: a workbook is a zip, so its 25 MiB may unpack to far more.
const (
	xlsxUnzipLimit    = 256 << 20
	xlsxUnzipXMLLimit = 16 << 20
	// timeRounding absorbs the float error of serial dates.
	timeRounding = time.Second
)

// extractXLSX reads the first sheet of a workbook. A cell gives its value, not its display:
// a number formatted as currency or a percentage gives the number; a date or time gives ISO
// 8601 text (2024-01-31, 13:45:00, 2024-01-31T13:45:00); a boolean gives TRUE or FALSE.
//
// A panic while reading is the workbook's error: excelize v2.10.1 panics on some malformed
// workbooks (a shared string index below 0, found by FuzzExtractXLSX), and a document is a
// tenant's input, to be refused, not the end of the process that reads it. The code here
// around excelize is the table code CSV shares, which its own fuzz target runs unguarded.
func extractXLSX(data []byte, limit int) (recs []map[string]any, err error) {
	defer func() {
		if v := recover(); v != nil {
			recs, err = nil, fmt.Errorf("xlsx: the workbook cannot be read: %v", v)
		}
	}()
	f, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{
		UnzipSizeLimit: xlsxUnzipLimit, UnzipXMLSizeLimit: xlsxUnzipXMLLimit,
	})
	if err != nil {
		return nil, fmt.Errorf("xlsx: %w", err)
	}
	defer f.Close()
	sheets := f.GetSheetList()
	if len(sheets) == 0 {
		return nil, errors.New("xlsx: the workbook has no sheet")
	}
	sheet := sheets[0]
	raw, err := sheetRows(f, sheet, len(data), excelize.Options{RawCellValue: true})
	if err != nil {
		return nil, err
	}
	shown, err := sheetRows(f, sheet, len(data))
	if err != nil {
		return nil, err
	}
	x := &xlsxCells{f: f, sheet: sheet, dateStyle: map[int]bool{}}
	if props, err := f.GetWorkbookProps(); err == nil && props.Date1904 != nil {
		x.date1904 = *props.Date1904
	}
	t := table{limit: limit, size: len(data)}
	for i := range raw {
		row := make([]string, len(raw[i]))
		for j := range raw[i] {
			s := ""
			if i < len(shown) && j < len(shown[i]) {
				s = shown[i][j]
			}
			if row[j], err = x.value(i, j, raw[i][j], s); err != nil {
				return nil, err
			}
		}
		if i == 0 {
			t.header = row
			continue
		}
		t.add(row)
		if t.n > limit {
			// Count the rest without converting them.
			for _, r := range raw[i+1:] {
				t.add(r)
			}
			break
		}
	}
	return t.records()
}

// sheetRows is excelize's GetRows with bounds, for a workbook of size bytes. A cell far to
// the right makes its row that long, so the cells read are counted as they come and more
// than cellLimit(size) is a *TooManyCellsError; rows between two row numbers are walked one
// by one, so a row number past the last a sheet has (excelize.TotalRows, 1,048,576) is an
// error, where <row r="50000000"> cost half a second, and a larger one longer. A row that
// does not read is an error too, where GetRows returns the rows before it as if they were
// all.
func sheetRows(f *excelize.File, sheet string, size int, opts ...excelize.Options) ([][]string, error) {
	rows, err := f.Rows(sheet)
	if err != nil {
		return nil, fmt.Errorf("xlsx: %w", err)
	}
	defer rows.Close()
	limit := cellLimit(size)
	var out [][]string
	cells := 0
	for n := 1; rows.Next(); n++ {
		if n > excelize.TotalRows {
			return nil, fmt.Errorf("xlsx: a row past row %s, the last a sheet has", thousands(excelize.TotalRows))
		}
		row, err := rows.Columns(opts...)
		if err != nil {
			return nil, fmt.Errorf("xlsx: row %d: %w", n, err)
		}
		if cells += len(row); cells > limit {
			return nil, &TooManyCellsError{Limit: limit, Size: size}
		}
		if len(row) > 0 {
			out = append(out, make([][]string, n-1-len(out))...) // the empty rows above it
			out = append(out, row)
		}
	}
	if err := rows.Error(); err != nil {
		return nil, fmt.Errorf("xlsx: %w", err)
	}
	return out, nil
}

type xlsxCells struct {
	f         *excelize.File
	sheet     string
	date1904  bool
	dateStyle map[int]bool
}

// value is the text of cell (i, j) (0-based) from its raw and displayed forms. They differ
// only for a formatted cell; the cell's type and number format say which to keep.
func (x *xlsxCells) value(i, j int, raw, shown string) (string, error) {
	if raw == shown {
		return raw, nil
	}
	cell, err := excelize.CoordinatesToCellName(j+1, i+1)
	if err != nil {
		return "", fmt.Errorf("xlsx: %w", err)
	}
	typ, err := x.f.GetCellType(x.sheet, cell)
	if err != nil {
		return "", fmt.Errorf("xlsx: %s: %w", cell, err)
	}
	switch typ {
	case excelize.CellTypeBool:
		return shown, nil
	case excelize.CellTypeDate:
		return raw, nil
	}
	serial, perr := strconv.ParseFloat(raw, 64)
	if perr != nil {
		return raw, nil
	}
	style, err := x.f.GetCellStyle(x.sheet, cell)
	if err != nil {
		return "", fmt.Errorf("xlsx: %s: %w", cell, err)
	}
	if !x.isDateStyle(style) {
		return raw, nil
	}
	return isoDate(serial, x.date1904), nil
}

func (x *xlsxCells) isDateStyle(id int) bool {
	if v, ok := x.dateStyle[id]; ok {
		return v
	}
	v := false
	if st, err := x.f.GetStyle(id); err == nil {
		v = isDateNumFmt(st.NumFmt)
		if st.CustomNumFmt != nil {
			v = isDateFormatCode(*st.CustomNumFmt)
		}
	}
	x.dateStyle[id] = v
	return v
}

// isDateNumFmt: the built-in number formats that show dates or times (ECMA-376 18.8.30,
// with the East Asian ones).
func isDateNumFmt(id int) bool {
	return (id >= 14 && id <= 22) || (id >= 27 && id <= 36) || (id >= 45 && id <= 47) || (id >= 50 && id <= 58)
}

var (
	quotedText   = regexp.MustCompile(`"[^"]*"|\\.`)
	bracketed    = regexp.MustCompile(`\[[^\]]*\]`)
	dateTimeCode = regexp.MustCompile(`[ymdhs]`)
)

// isDateFormatCode reports whether a custom number format shows a date or a time: it has
// y, m, d, h or s outside quoted text, escapes and [colour]/[condition] sections.
func isDateFormatCode(code string) bool {
	section, _, _ := strings.Cut(code, ";")
	section = bracketed.ReplaceAllString(quotedText.ReplaceAllString(section, ""), "")
	return dateTimeCode.MatchString(strings.ToLower(section))
}

// isoDate writes an Excel serial date as ISO 8601: a date, a time of day, or both.
func isoDate(serial float64, date1904 bool) string {
	t, err := excelize.ExcelDateToTime(serial, date1904)
	if err != nil {
		return strconv.FormatFloat(serial, 'f', -1, 64)
	}
	t = t.Round(timeRounding)
	whole, frac := math.Modf(serial)
	switch {
	case whole == 0 && frac > 0:
		return t.Format("15:04:05")
	case t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0:
		return t.Format("2006-01-02")
	}
	return t.Format("2006-01-02T15:04:05")
}
