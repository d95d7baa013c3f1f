package dbquery

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// kindOf sorts a column's database type name (as database/sql reports it, upper case) into
// what its values become in JSON.
type valueKind int

const (
	kindOther valueKind = iota
	kindInt
	kindFloat
	kindDecimal
	kindJSON
	kindDate
	kindBinary
)

func kindOf(typeName string) valueKind {
	t := strings.ToUpper(typeName)
	t = strings.TrimPrefix(t, "UNSIGNED ")
	switch {
	case t == "DATE":
		return kindDate
	case t == "JSON" || t == "JSONB":
		return kindJSON
	case t == "NUMERIC" || t == "DECIMAL":
		return kindDecimal
	case strings.Contains(t, "INT"): // INT2/4/8, BIGINT, TINYINT, MEDIUMINT, INTEGER; not POINT, INTERVAL
		if t == "POINT" || t == "INTERVAL" || strings.HasSuffix(t, "POINT") {
			return kindOther
		}
		return kindInt
	case t == "FLOAT" || t == "FLOAT4" || t == "FLOAT8" || t == "DOUBLE" || t == "REAL" || t == "DOUBLE PRECISION":
		return kindFloat
	case t == "BYTEA" || t == "BLOB" || strings.HasSuffix(t, "BLOB") || strings.HasSuffix(t, "BINARY") || t == "BIT":
		return kindBinary
	}
	return kindOther
}

// jsonValue turns a value database/sql scanned into what encoding/json and the engine's
// expressions take as they are: nil, bool, int64, float64, json.Number (exact decimals),
// string, or parsed JSON. Times are RFC 3339 text in UTC (a DATE column: YYYY-MM-DD).
// Bytes are text when they are UTF-8, else base64: JSON strings cannot hold other bytes.
func jsonValue(v any, kind valueKind) any {
	switch x := v.(type) {
	case nil, bool, int64:
		return x
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
		return json.Number(strconv.FormatUint(x, 10))
	case float32:
		return floatValue(float64(x))
	case float64:
		return floatValue(x)
	case time.Time:
		if kind == kindDate {
			return x.Format(time.DateOnly)
		}
		return x.UTC().Format(time.RFC3339Nano)
	case []byte:
		return textValue(x, kind)
	case string:
		return textValue([]byte(x), kind)
	}
	return v
}

// floatValue keeps a float a number unless JSON cannot write it (NaN, ±Inf).
func floatValue(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return f
}

// textValue reads what a driver handed over as text or bytes by the column's type: MySQL
// sends every value of an unprepared query as text, and DECIMAL/NUMERIC always.
func textValue(b []byte, kind valueKind) any {
	s := string(b)
	switch kind {
	case kindInt:
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
		if isJSONNumber(s) {
			return json.Number(s)
		}
	case kindFloat:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return floatValue(f)
		}
	case kindDecimal:
		if isJSONNumber(s) { // exact: 12345678901234567890.01 is not a float64
			return json.Number(s)
		}
	case kindJSON:
		var v any
		if err := json.Unmarshal(b, &v); err == nil {
			return v
		}
	}
	if utf8.Valid(b) {
		return s
	}
	return base64.StdEncoding.EncodeToString(b)
}

// isJSONNumber reports whether s is a number as JSON writes one (so not NaN, not "1.").
func isJSONNumber(s string) bool {
	return s != "" && json.Valid([]byte(s)) && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))
}

// paramValue turns a parameter as it comes from a run's context (JSON-decoded) into one
// every driver binds: whole float64s become int64 (a JSON 42 arrives as 42.0, and an
// integer column wants an integer), json.Number becomes int64 or float64, and arrays and
// objects become their JSON text (cast it in SQL: $1::jsonb, CAST(? AS JSON)).
func paramValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, int64, []byte, time.Time:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case float32:
		return paramValue(float64(x))
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), nil
		}
		return x, nil
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, nil
		}
		return x.Float64()
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(data), nil
}
