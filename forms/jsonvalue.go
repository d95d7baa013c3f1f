package forms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// object is a JSON object that remembers its members' order: the order of a JSON
// Schema's properties, or of a builder's components, is the order of the form's fields.
// A repeated member name keeps the last value, as encoding/json does.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) any {
	if o == nil {
		return nil
	}
	return o.vals[k]
}

func (o *object) has(k string) bool {
	if o == nil {
		return false
	}
	_, ok := o.vals[k]
	return ok
}

// str returns member k when it is a string.
func (o *object) str(k string) string {
	s, _ := o.get(k).(string)
	return s
}

func (o *object) obj(k string) *object {
	v, _ := o.get(k).(*object)
	return v
}

func (o *object) arr(k string) ([]any, bool) {
	v, ok := o.get(k).([]any)
	return v, ok
}

func (o *object) boolean(k string) bool {
	b, _ := o.get(k).(bool)
	return b
}

// parseOrdered decodes one JSON value into *object, []any, string, json.Number, bool or
// nil. json.Valid runs first: it refuses trailing data and nesting deeper than
// encoding/json's limit, which bounds the recursion below.
func parseOrdered(raw []byte) (any, error) {
	if !json.Valid(raw) {
		var v any
		err := json.Unmarshal(raw, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return readValue(dec)
}

func readValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := readValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return o, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := readValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return a, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

// plain turns a parsed value into what encoding/json would have given with UseNumber
// (map[string]any for objects), for a field's default.
func plain(v any) any {
	switch t := v.(type) {
	case *object:
		m := make(map[string]any, len(t.keys))
		for _, k := range t.keys {
			m[k] = plain(t.vals[k])
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, e := range t {
			a[i] = plain(e)
		}
		return a
	}
	return v
}

// finite returns v as a float64 when it is a finite JSON number (or a Go number).
func finite(v any) (float64, bool) {
	if n, ok := v.(json.Number); ok {
		f, err := strconv.ParseFloat(string(n), 64)
		return f, err == nil && !math.IsInf(f, 0)
	}
	f, ok := number(v)
	return f, ok && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// scalarText is the text of a string, number or boolean (an option value), and false for
// anything else.
func scalarText(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case json.Number:
		return string(t), true
	case bool:
		return strconv.FormatBool(t), true
	}
	return "", false
}
