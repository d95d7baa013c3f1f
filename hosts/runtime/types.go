package runtime

import (
	"encoding/json"
	"io"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/jsonnum"
)

// JSONObject is a JSON object carried as its raw bytes. The schema accepts any object, so
// Huma checks only that it is one and the engine's own validation reports what is wrong
// inside it, with pointers such as /definition/actions/2/properties.
type JSONObject json.RawMessage

// MarshalJSON writes the bytes as they are (null when empty).
func (o JSONObject) MarshalJSON() ([]byte, error) {
	if len(o) == 0 {
		return []byte("null"), nil
	}
	return o, nil
}

// UnmarshalJSON keeps a copy of the bytes.
func (o *JSONObject) UnmarshalJSON(b []byte) error {
	*o = append((*o)[:0], b...)
	return nil
}

// Schema is an object with any members.
func (JSONObject) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeObject, AdditionalProperties: &huma.Schema{}}
}

// answer is the output of an operation that answers a body alone, with the operation's
// default status.
type answer[T any] struct{ Body T }

// List is the body of every list route (DESIGN.md, "lists").
type List[T any] struct {
	Items      []T    `json:"items" nullable:"false" doc:"This page of results."`
	NextCursor string `json:"next_cursor" doc:"Pass as ?cursor= for the next page; empty when this is the last page."`
}

func listOf[T, U any](p svctype.Page[T], conv func(T) U) List[U] {
	items := make([]U, 0, len(p.Items))
	for _, it := range p.Items {
		items = append(items, conv(it))
	}
	return List[U]{Items: items, NextCursor: p.NextCursor}
}

func same[T any](t T) T { return t }

// Paging is embedded in every list input.
type Paging struct {
	Limit  int    `query:"limit" default:"50" minimum:"1" maximum:"500" doc:"Page size (default 50, at most 500)."`
	Cursor string `query:"cursor" doc:"Opaque cursor from the previous page's next_cursor; one the server did not issue is 400 invalid_cursor."`
}

func (p Paging) options() svctype.ListOptions {
	return svctype.ListOptions{Limit: p.Limit, Cursor: p.Cursor}
}

// jsonAppender is an answer body that writes its own JSON, already compact and valid.
type jsonAppender interface {
	appendJSON(b []byte) []byte
}

// jsonFormat is Huma's JSON format, but a body that writes its own JSON (a page of a large
// context value) is written as it is, not scanned again by encoding/json, and a body that
// is not UTF-8 is refused (unmarshalUTF8).
var jsonFormat = huma.Format{
	Marshal: func(w io.Writer, v any) error {
		if a, ok := v.(jsonAppender); ok {
			_, err := w.Write(a.appendJSON(nil))
			return err
		}
		return huma.DefaultJSONFormat.Marshal(w, v)
	},
	Unmarshal: unmarshalUTF8,
}

// Object is a JSON object whose numbers are kept as the client wrote them (json.Number):
// a submission's or a row's values are data (an account number, an amount), not floats
// to round. Its schema is any JSON object.
type Object map[string]any

// UnmarshalJSON decodes an object with its numbers as json.Number.
func (o *Object) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := jsonnum.Unmarshal(b, &m); err != nil {
		return err
	}
	*o = m
	return nil
}

// Schema is an object of any members, as map[string]any's would be.
func (Object) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeObject, AdditionalProperties: &huma.Schema{}}
}
