package match

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/svcflow/svcflow/internal/jsonnum"
)

// Record is one source record as JSON decodes it: numbers are float64 (json.Number and Go
// integers are accepted too), dates are "YYYY-MM-DD" or RFC 3339 strings.
type Record = map[string]any

// number reports v as a float64: a Go number of any kind, a json.Number, or a string that
// holds a plain decimal number ("12.50", "-3", "1e3"; CSV extraction gives strings). NaN
// and infinities are not numbers here.
func number(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case int32:
		f = float64(x)
	case float32:
		f = float64(x)
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(x), 64); err != nil {
			return 0, false
		}
	case string:
		return numberFromString(x)
	case nil, bool, map[string]any, []any:
		return 0, false
	default:
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f = float64(rv.Int())
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			f = float64(rv.Uint())
		case reflect.Float32, reflect.Float64:
			f = rv.Float()
		default:
			return 0, false
		}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// numberFromString is number for a string: a plain decimal number, spaces around it
// ignored.
func numberFromString(x string) (float64, bool) {
	s := strings.TrimSpace(x)
	if !plainDecimal(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// plainDecimal reports whether s is written with digits, one optional sign, a point and an
// exponent only: strconv.ParseFloat alone would also take "Inf", "NaN" and hex floats.
func plainDecimal(s string) bool {
	if s == "" {
		return false
	}
	digits := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E':
		default:
			return false
		}
	}
	return digits
}

// maxMinor bounds the amounts converted to minor units so that sums of a few million
// of them cannot overflow an int64.
const maxMinor = 1e15

// minorUnits converts an amount to hundredths, rounding half away from zero on the number's
// shortest decimal form: 0.145 is 15 cents although the float64 nearest 0.145 is a hair
// below it. Currency comparisons are exact on the result, so 0.1 + 0.2 equals 0.3.
func minorUnits(f float64) (int64, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > maxMinor {
		return 0, false
	}
	c := f * 100
	r := math.Round(c)
	if math.Abs(math.Abs(c-r)-0.5) > 1e-6 {
		return int64(r), true
	}
	// Near a half: decide on the decimal digits the number was written with.
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], math.Abs(f), 'f', -1, 64)
	intPart, frac := s, []byte(nil)
	if dot := slices.Index(s, '.'); dot >= 0 {
		intPart, frac = s[:dot], s[dot+1:]
	}
	var v int64
	for _, d := range intPart {
		v = v*10 + int64(d-'0')
	}
	for i := range 2 {
		v *= 10
		if i < len(frac) {
			v += int64(frac[i] - '0')
		}
	}
	if len(frac) > 2 && frac[2] >= '5' {
		v++
	}
	if f < 0 {
		v = -v
	}
	return v, true
}

// toleranceMinor is the largest whole number of minor units within an allowed difference
// given in major units (0.1 allows 10, 0.005 allows 0).
func toleranceMinor(v float64) int64 {
	if v*100 >= 1<<62 {
		return 1 << 62
	}
	return int64(math.Floor(v*100 + 1e-9))
}

// day reads a date as days since 1970-01-01. "YYYY-MM-DD" and RFC 3339 strings are dates;
// an RFC 3339 timestamp counts as the calendar date written in it (its own offset), so
// "2024-03-01T23:30:00-05:00" is 2024-03-01. A time.Time counts as its own calendar date.
func day(v any) (int32, bool) {
	switch x := v.(type) {
	case string:
		return parseDay(x)
	case time.Time:
		y, m, d := x.Date()
		return daysFromCivil(y, int(m), d), true
	}
	return 0, false
}

func parseDay(s string) (int32, bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, false
	}
	if len(s) > 10 {
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return 0, false
		}
	}
	return daysFromCivil(y, m, d), true
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the proleptic Gregorian day number (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int32 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int32(era*146097 + doe - 719468)
}

// dayString formats a day number back as YYYY-MM-DD.
func dayString(n int32) string {
	return time.Unix(int64(n)*86400, 0).UTC().Format(time.DateOnly)
}

// keyText appends the text a matchOn value compares by: a string as it is (no trimming, no
// case folding), a number in its shortest decimal form (1001, 1001.0 and json.Number
// "1001" are one key, and so is the string "1001"), true/false, and canonical JSON for an
// object or array. A missing or null value has no key text.
func keyText(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case string:
		return append(dst, x...), true
	case nil:
		return dst, false
	case bool:
		return strconv.AppendBool(dst, x), true
	case map[string]any, []any:
		return appendCanonical(dst, x), true
	case json.Number:
		// Its digits, not the float64 nearest them: two 30-digit account numbers that
		// differ in the last digit are two keys.
		return jsonnum.AppendKey(dst, string(x)), true
	}
	if f, ok := number(v); ok {
		return appendNumber(dst, f), true
	}
	return appendCanonical(dst, v), true
}

// appendNumber formats f the way encoding/json does (jsonnum.AppendFloat), a whole number
// below 1e15 by the integer path, which is faster.
func appendNumber(dst []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return jsonnum.AppendFloat(dst, f)
}

// appendCanonical appends the canonical JSON of v: object keys sorted bytewise, no
// whitespace, numbers as appendNumber writes them (1.0 and 1 are the same), strings with
// only the escapes JSON requires and invalid UTF-8 replaced by U+FFFD. Values of other Go
// types go through encoding/json first.
func appendCanonical(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case string:
		return appendJSONString(dst, x)
	case bool:
		return strconv.AppendBool(dst, x)
	case json.Number:
		return jsonnum.AppendKey(dst, string(x))
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			dst = appendCanonical(dst, x[k])
		}
		return append(dst, '}')
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonical(dst, e)
		}
		return append(dst, ']')
	case []Record:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonical(dst, e)
		}
		return append(dst, ']')
	}
	if f, ok := number(v); ok {
		if _, isString := v.(string); !isString {
			return appendNumber(dst, f)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return appendJSONString(dst, err.Error())
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return append(dst, b...)
	}
	if n, ok := generic.(json.Number); ok {
		return jsonnum.AppendKey(dst, string(n))
	}
	return appendCanonical(dst, generic)
}

const hexDigits = "0123456789abcdef"

func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\ufffd"...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// exactSum adds float64 values exactly and rounds once (Shewchuk's algorithm, as Python's
// math.fsum), so the sum does not depend on the order of the values. partials is scratch
// space; the grown slice is returned for reuse.
type exactSum struct {
	partials []float64
}

func (s *exactSum) reset() { s.partials = s.partials[:0] }

func (s *exactSum) add(x float64) {
	i := 0
	for _, y := range s.partials {
		if math.Abs(x) < math.Abs(y) {
			x, y = y, x
		}
		hi := x + y
		lo := y - (hi - x)
		if lo != 0 {
			s.partials[i] = lo
			i++
		}
		x = hi
	}
	s.partials = append(s.partials[:i], x)
}

func (s *exactSum) value() float64 {
	p := s.partials
	n := len(p)
	if n == 0 {
		return 0
	}
	n--
	hi := p[n]
	var lo float64
	for n > 0 {
		x := hi
		n--
		y := p[n]
		hi = x + y
		yr := hi - x
		lo = y - yr
		if lo != 0 {
			break
		}
	}
	// Round half to even across the remaining partials, as math.fsum does.
	if n > 0 && ((lo < 0 && p[n-1] < 0) || (lo > 0 && p[n-1] > 0)) {
		y := lo * 2
		x := hi + y
		if yr := x - hi; y == yr {
			hi = x
		}
	}
	return hi
}
