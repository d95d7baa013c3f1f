// Package jsonnum keeps JSON numbers as the decimal text they were written with
// (json.Number) and compares them exactly: a 30-digit account number is data, and two
// that differ in their last digit are not equal, although they round to the same float64.
//
// It owns the number rules the engine and the matcher share (docs/decisions.md, "Numbers
// kept exactly"): which numbers are refused (those a float64 cannot hold, OutOfRange), how
// two compare (Cmp, exact on the decimal digits, no arithmetic), and the canonical text
// that keys and hashes use (Key: 1, 1.0 and 1e0 are one key, as they were when numbers
// were float64). It does no arithmetic: nothing in svcflow adds a JSON number to another
// except the matcher's amounts, which it converts to minor units itself.
package jsonnum

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
)

// Unmarshal is json.Unmarshal with numbers decoded as json.Number.
func Unmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	// json.Unmarshal refuses trailing data; so does this.
	if _, err := dec.Token(); err == nil {
		return errors.New("jsonnum: invalid character after top-level value")
	}
	return nil
}

// decimal is a number's value as 0.digits × 10^exp with no leading or trailing zero in
// digits (zero has no digits).
type decimal struct {
	neg    bool
	digits []byte
	exp    int64
}

// maxExp bounds the exponents read, so that adding a position count cannot overflow.
const maxExp = 1 << 50

// parse reads a JSON number's text into buf's space. ok is false for text that is not a
// JSON number.
func parse(s string, buf []byte) (d decimal, ok bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	digits := buf[:0]
	sawDigit := false
	var exp int64 // digits seen before the point, less the leading zeros dropped
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		sawDigit = true
		if len(digits) == 0 && s[i] == '0' {
			continue
		}
		digits = append(digits, s[i])
		exp++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			sawDigit = true
			if len(digits) == 0 && s[i] == '0' {
				exp--
				continue
			}
			digits = append(digits, s[i])
		}
	}
	if !sawDigit {
		return d, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		start := i
		var e int64
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if e < maxExp {
				e = e*10 + int64(s[i]-'0')
			}
		}
		if i == start {
			return d, false
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if i != len(s) {
		return d, false
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		d.neg, exp = false, 0 // -0 is 0
	}
	d.digits, d.exp = digits, exp
	return d, true
}

func (d decimal) cmp(o decimal) int {
	sign := 1
	switch {
	case len(d.digits) == 0 && len(o.digits) == 0:
		return 0
	case len(d.digits) == 0:
		if o.neg {
			return 1
		}
		return -1
	case len(o.digits) == 0:
		if d.neg {
			return -1
		}
		return 1
	case d.neg != o.neg:
		if d.neg {
			return -1
		}
		return 1
	case d.neg:
		sign = -1
	}
	switch {
	case d.exp < o.exp:
		return -sign
	case d.exp > o.exp:
		return sign
	}
	return sign * bytes.Compare(d.digits, o.digits)
}

// Cmp compares two JSON numbers exactly: -1, 0 or 1. ok is false when either is not a
// JSON number's text.
func Cmp(a, b string) (c int, ok bool) {
	var ba, bb [40]byte
	x, ok1 := parse(a, ba[:])
	y, ok2 := parse(b, bb[:])
	if !ok1 || !ok2 {
		return 0, false
	}
	return x.cmp(y), true
}

// CmpFloat compares a JSON number with a float64 taken as its shortest decimal form (a Go
// caller's 0.1 means 0.1, not the binary fraction nearest it). ok is false for text that is
// not a number and for NaN.
func CmpFloat(a string, f float64) (c int, ok bool) {
	if math.IsNaN(f) {
		return 0, false
	}
	if math.IsInf(f, 0) {
		if _, ok := Cmp(a, "0"); !ok {
			return 0, false
		}
		if f > 0 {
			return -1, true
		}
		return 1, true
	}
	var buf [32]byte
	return Cmp(a, string(strconv.AppendFloat(buf[:0], f, 'g', -1, 64)))
}

// Exact reports the float64 that a JSON number's text is exactly, as its shortest decimal
// form: 1.5, 1.0, 1e2 and 0.1 are; 123456789012345678901234567891 and
// 0.1000000000000000055511151231257827 are not (they would come back changed).
func Exact(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	c, ok := CmpFloat(s, f)
	return f, ok && c == 0
}

// AppendKey appends the canonical text of a JSON number, for keys and hashes: a number a
// float64 holds exactly (Exact) as encoding/json writes that float64 (1.0 and 1e0 are 1),
// any other as its digits in one canonical form, so that numbers equal by Cmp have one key
// and numbers that differ have two.
func AppendKey(dst []byte, s string) []byte {
	if f, ok := Exact(s); ok {
		if f == 0 {
			return append(dst, '0') // -0 is 0 (Cmp says so): one key
		}
		return AppendFloat(dst, f)
	}
	var buf [40]byte
	d, ok := parse(s, buf[:])
	if !ok {
		return append(dst, s...)
	}
	if d.neg {
		dst = append(dst, '-')
	}
	// 0.digits × 10^exp, written plainly when the point falls within or just after the
	// digits (integers up to 40 digits, fractions down to 1e-6), else d.ddde±x.
	n := int64(len(d.digits))
	switch {
	case d.exp >= n && d.exp <= 40:
		dst = append(dst, d.digits...)
		for range d.exp - n {
			dst = append(dst, '0')
		}
	case d.exp > 0 && d.exp < n:
		dst = append(dst, d.digits[:d.exp]...)
		dst = append(dst, '.')
		dst = append(dst, d.digits[d.exp:]...)
	case d.exp <= 0 && d.exp > -6:
		dst = append(dst, "0."...)
		for range -d.exp {
			dst = append(dst, '0')
		}
		dst = append(dst, d.digits...)
	default:
		dst = append(dst, d.digits[0])
		if len(d.digits) > 1 {
			dst = append(dst, '.')
			dst = append(dst, d.digits[1:]...)
		}
		dst = append(dst, 'e')
		if d.exp > 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, d.exp-1, 10)
	}
	return dst
}

// AppendFloat writes f as encoding/json does: shortest round-trip digits, plain notation
// between 1e-6 and 1e21, exponent notation outside.
func AppendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	n := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json
		b := dst[n:]
		if m := len(b); m >= 4 && b[m-4] == 'e' && b[m-3] == '-' && b[m-2] == '0' {
			b[m-2] = b[m-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}

// Valid reports whether s is a JSON number's text.
func Valid(s string) bool {
	var buf [40]byte
	_, ok := parse(s, buf[:])
	return ok
}

// OutOfRange finds the first number in data, valid JSON, that a float64 cannot hold (its
// magnitude rounds past the largest float64: 1e400), and returns its JSON pointer within
// data. A number too small to hold (1e-400) is not refused: it is kept as written, and it
// compares as what it is. The scan costs about what json.Valid does; only a document that
// has such a number is walked again to name where.
func OutOfRange(data []byte) (pointer string, found bool) {
	at := -1
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case c == '-' || (c >= '0' && c <= '9'):
			start := i
			big := false
			for i+1 < len(data) && isNumberByte(data[i+1]) {
				i++
				if data[i] == 'e' || data[i] == 'E' {
					big = true
				}
			}
			// Without an exponent, only a number of more than 309 digits can overflow.
			if big || i+1-start > 309 {
				if _, err := strconv.ParseFloat(string(data[start:i+1]), 64); err != nil {
					at = start
				}
			}
		}
		if at >= 0 {
			break
		}
	}
	if at < 0 {
		return "", false
	}
	return pointerAt(data, at), true
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// pointerAt is the JSON pointer of the value that starts at offset at in data.
func pointerAt(data []byte, at int) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type level struct {
		object bool
		key    string
		index  int
		keyed  bool // in an object: the next string is a value, not a key
	}
	var stack []level
	for {
		// Before reading the next token, the offset of the value it starts.
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *level
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil {
					if top.object {
						top.keyed = false
					} else {
						top.index++
					}
				}
				stack = append(stack, level{object: t == '{', index: -1})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.object && !top.keyed {
				top.key, top.keyed = t, true
				continue
			}
		}
		if top != nil {
			if top.object {
				top.keyed = false
			} else {
				top.index++
			}
		}
		if n, ok := tok.(json.Number); ok && int(dec.InputOffset())-len(n) == at {
			var sb strings.Builder
			for _, l := range stack {
				sb.WriteByte('/')
				if l.object {
					sb.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(l.key))
				} else {
					sb.WriteString(strconv.Itoa(l.index))
				}
			}
			return sb.String()
		}
	}
}
