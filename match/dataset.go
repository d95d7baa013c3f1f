package match

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/svcflow/svcflow/internal/jsonnum"
)

// Dataset is one side of a match read record by record: the matcher asks for a few
// top-level fields of each record once, and for a record's JSON only to write an output.
// Records (decoded maps) and RawRecords (offsets into one JSON array) are the two
// implementations; a Dataset is read by one goroutine at a time.
type Dataset interface {
	// Len is the number of records.
	Len() int
	// Fields sets dst[j] to the value of record i's top-level field names[j], the zero
	// Value (KindMissing) when the record has none. names may repeat a name. The matcher
	// keeps values' Text (descriptions, keys) until it returns, so a Text must not change
	// before then: RawRecords' point into its data.
	Fields(i int, names []string, dst []Value)
	// AppendJSON appends record i's JSON to dst.
	AppendJSON(dst []byte, i int) ([]byte, error)
}

// Kind is the JSON type of a Value.
type Kind uint8

// The kinds of a Value. KindMissing is the zero value: the record has no such field.
const (
	KindMissing Kind = iota
	KindNull
	KindBool
	KindNumber
	KindString
	KindObject
	KindArray
	// kindGo: a decoded record's value, kept as the Go value it is (Value.goValue), so that
	// Match on maps reads values exactly as it always has.
	kindGo
)

// Value is one field of a record as a Dataset reads it, never decoded further than its
// kind: Text is a string's text (escapes decoded), a number's JSON text as written
// ("12.50", "1e3"), "true" or "false", or an object's or array's JSON. A number keeps its
// text so that it reads exactly as encoding/json would decode it (strconv.ParseFloat), and
// so as a float64 or json.Number in a Record: the same key text, the same minor units.
type Value struct {
	Kind    Kind
	Text    string
	goValue any
}

// goValueOf wraps a decoded record's value.
func goValueOf(v any) Value { return Value{Kind: kindGo, goValue: v} }

// Records is a Dataset of decoded records: Match's own input, so Records(left) and
// MatchDatasets give the same pairs as Match(left, ...).
type Records []Record

// Len is the number of records.
func (rs Records) Len() int { return len(rs) }

// Fields reads the fields by map lookups.
func (rs Records) Fields(i int, names []string, dst []Value) {
	rec := rs[i]
	for j, name := range names {
		dst[j] = goValueOf(rec[name])
	}
}

// AppendJSON appends the record as encoding/json writes it (keys sorted).
func (rs Records) AppendJSON(dst []byte, i int) ([]byte, error) {
	b, err := json.Marshal(rs[i])
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// valueNumber is number for a Value.
func valueNumber(v Value) (float64, bool) {
	switch v.Kind {
	case kindGo:
		return number(v.goValue)
	case KindNumber:
		// As json.Number: ParseFloat, refusing what does not fit a float64.
		f, err := strconv.ParseFloat(v.Text, 64)
		if err != nil {
			return 0, false
		}
		return f, true
	case KindString:
		return numberFromString(v.Text)
	}
	return 0, false
}

// valueDay is day for a Value.
func valueDay(v Value) (int32, bool) {
	switch v.Kind {
	case kindGo:
		return day(v.goValue)
	case KindString:
		return parseDay(v.Text)
	}
	return 0, false
}

// valueText is text for a Value.
func valueText(v Value) string {
	switch v.Kind {
	case kindGo:
		return text(v.goValue)
	case KindString:
		return v.Text
	case KindNumber, KindBool:
		b, _ := valueKey(nil, v)
		return string(b)
	}
	return ""
}

// valueKey is keyText for a Value: a number in its shortest form (or, beyond float64, its
// text, as json.Number keeps it), an object or array as canonical JSON of what
// encoding/json decodes from it (so the last of duplicate keys wins, as in a Record).
func valueKey(dst []byte, v Value) ([]byte, bool) {
	switch v.Kind {
	case kindGo:
		return keyText(dst, v.goValue)
	case KindMissing, KindNull:
		return dst, false
	case KindString, KindBool:
		return append(dst, v.Text...), true
	case KindNumber:
		return jsonnum.AppendKey(dst, v.Text), true
	}
	dec := json.NewDecoder(strings.NewReader(v.Text))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return append(dst, v.Text...), true
	}
	return appendCanonical(dst, generic), true
}
