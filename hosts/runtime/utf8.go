package runtime

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
)

// A JSON body is text, and svcflow keeps text exactly or refuses it: encoding/json puts
// U+FFFD in place of each byte that is not UTF-8, so "bad-\xff" was stored as "bad-\uFFFD"
// and a sign-in code mailed to "\uFFFDa@b.example", neither of which anyone sent. Every JSON
// body a Huma route decodes is checked first (Huma has read it under the route's
// MaxBodyBytes by then, so no body is buffered past its limit); a multipart upload is not
// JSON and keeps its bytes. A \u escape is JSON's own and is taken as it is.

const (
	codeInvalidUTF8 = "invalid_utf8"
	// invalidUTF8 begins the message of the refusal (humaError finds it by it).
	invalidUTF8 = "request body is not valid UTF-8"
)

// errInvalidUTF8 says where a body stops being UTF-8.
type errInvalidUTF8 struct{ offset int }

func (e errInvalidUTF8) Error() string {
	return fmt.Sprintf("%s: byte %d does not begin a UTF-8 character", invalidUTF8, e.offset)
}

// unmarshalUTF8 is Huma's JSON decoding of a body that is UTF-8, and errInvalidUTF8 of one
// that is not.
func unmarshalUTF8(data []byte, v any) error {
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return errInvalidUTF8{offset: i}
	}
	return huma.DefaultJSONFormat.Unmarshal(data, v)
}

// isInvalidUTF8 reports whether a Huma error detail is the refusal of unmarshalUTF8.
func isInvalidUTF8(message string) bool { return strings.HasPrefix(message, invalidUTF8) }

// JSONFormats are the body formats of svcflow's Huma APIs (the runtime's and the
// gateway's): JSON, refused when it is not UTF-8 (400 invalid_utf8).
func JSONFormats() map[string]huma.Format {
	return map[string]huma.Format{"application/json": jsonFormat, "json": jsonFormat}
}
