package forms_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/forms"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/<shape>/ from the current output")

// TestConvertGolden converts every testdata/<shape>/*.input.json and compares the
// conversion (shape, notes, schema) with *.golden.json. go test ./forms -run Golden -update
// rewrites the goldens; read their diff before committing it.
func TestConvertGolden(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob(filepath.Join("testdata", "*", "*.input.json"))
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	shapes := map[forms.Shape]bool{}
	for _, in := range inputs {
		shape := forms.Shape(filepath.Base(filepath.Dir(in)))
		shapes[shape] = true
		name := string(shape) + "/" + strings.TrimSuffix(filepath.Base(in), ".input.json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(in)
			require.NoError(t, err)
			conv, err := forms.Convert(raw)
			require.NoError(t, err)
			require.Equal(t, shape, conv.Shape, "the directory names the shape")
			if shape != forms.ShapeV1 {
				require.Empty(t, forms.Validate(conv.Schema), "a converted form is valid")
			}
			got, err := json.MarshalIndent(conv, "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')
			golden := strings.TrimSuffix(in, ".input.json") + ".golden.json"
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "no golden file: run go test ./forms -run Golden -update")
			require.Equal(t, string(want), string(got))

			// Normalizing the result again changes nothing.
			again, err := forms.Normalize(mustJSON(t, conv.Schema))
			require.NoError(t, err)
			require.Equal(t, string(mustJSON(t, conv.Schema)), string(mustJSON(t, again)))
		})
	}
	for _, s := range []forms.Shape{forms.ShapeV1, forms.ShapeComponents, forms.ShapeFieldList, forms.ShapeJSONSchema} {
		require.True(t, shapes[s], "testdata has no %s case", s)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestConvertErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		raw  string
		err  error
	}{
		{"not JSON", `{"pages": [`, forms.ErrMalformed},
		{"empty", ``, forms.ErrMalformed},
		{"trailing data", `{"fields": []} {}`, forms.ErrMalformed},
		{"v1 member of the wrong type", `{"version": "form_schema_v1", "pages": [{"id": "p", "fields": [{"key": "a", "required": "yes"}]}]}`, forms.ErrMalformed},
		{"null", `null`, forms.ErrUnrecognized},
		{"string", `"form"`, forms.ErrUnrecognized},
		{"object of no shape", `{"title": "x"}`, forms.ErrUnrecognized},
		{"components not an array", `{"components": {"a": 1}}`, forms.ErrUnrecognized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := forms.Normalize(json.RawMessage(tc.raw))
			require.ErrorIs(t, err, tc.err)
		})
	}
}

func TestConvertShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		raw   string
		shape forms.Shape
		keys  []string
		types []forms.FieldType
	}{
		{"bare array", `[{"key": "a"}]`, forms.ShapeFieldList, []string{"a"}, []forms.FieldType{forms.TypeText}},
		{"empty array", `[]`, forms.ShapeFieldList, nil, nil},
		{"fields object", `{"fields": [{"name": "Full Name", "type": "TextArea"}]}`, forms.ShapeFieldList, []string{"full_name"}, []forms.FieldType{forms.TypeMultiline}},
		{"components", `{"components": [{"type": "textfield", "key": "a"}]}`, forms.ShapeComponents, []string{"a"}, []forms.FieldType{forms.TypeText}},
		{"json schema without type", `{"properties": {"n": {"type": "number"}}}`, forms.ShapeJSONSchema, []string{"n"}, []forms.FieldType{forms.TypeNumber}},
		{"json schema without properties", `{"type": "object"}`, forms.ShapeJSONSchema, nil, nil},
		{"v1 without pages", `{"version": "form_schema_v1"}`, forms.ShapeV1, nil, nil},
		{"pages before components", `{"pages": [], "components": [{"key": "x"}]}`, forms.ShapeV1, nil, nil},
		{"keys deduplicated", `[{"key": "a"}, {"key": "A"}, {"key": "a_2"}, {"key": "a"}]`, forms.ShapeFieldList, []string{"a", "a_2", "a_2_2", "a_3"}, nil},
		{"label names a keyless field", `[{"label": "E-mail address", "type": "email"}]`, forms.ShapeFieldList, []string{"e_mail_address"}, []forms.FieldType{forms.TypeEmail}},
		{"leading digit", `[{"key": "2fa"}]`, forms.ShapeFieldList, []string{"field_2fa"}, nil},
		{"nothing usable in the key", `[{"key": "日本"}]`, forms.ShapeFieldList, []string{"field"}, nil},
		{"boolean field", `[{"key": "ok", "type": "bool"}]`, forms.ShapeFieldList, []string{"ok"}, []forms.FieldType{forms.TypeSelect}},
		{"multiselect", `[{"key": "m", "type": "multiselect", "options": ["a"]}]`, forms.ShapeFieldList, []string{"m"}, []forms.FieldType{forms.TypeSelect}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conv, err := forms.Convert(json.RawMessage(tc.raw))
			require.NoError(t, err)
			require.Equal(t, tc.shape, conv.Shape)
			var keys []string
			var types []forms.FieldType
			for _, p := range conv.Schema.Pages {
				for _, f := range p.Fields {
					keys = append(keys, f.Key)
					types = append(types, f.Type)
				}
			}
			require.Equal(t, tc.keys, keys)
			if tc.types != nil {
				require.Equal(t, tc.types, types)
			}
			if tc.shape != forms.ShapeV1 {
				require.Empty(t, forms.Validate(conv.Schema))
			}
		})
	}
}

func TestSnakeCaseKeys(t *testing.T) {
	t.Parallel()
	for given, want := range map[string]string{
		"firstName":        "first_name",
		"FirstName":        "first_name",
		"HTTPServer":       "http_server",
		"invoiceID":        "invoice_id",
		"address2":         "address2",
		"first-name":       "first_name",
		"  Street  Name ":  "street_name",
		"über_größe":       "uber_grosse",
		"already_snake_42": "already_snake_42",
		"__x__y__":         "x_y",
	} {
		conv, err := forms.Convert(json.RawMessage(`[{"key": ` + string(mustJSON(t, given)) + `}]`))
		require.NoError(t, err)
		require.Equal(t, want, conv.Schema.Pages[0].Fields[0].Key, given)
	}
}

// FuzzNormalize: no input makes Normalize panic, and every older shape it converts gives a
// form that Validate accepts and that survives a JSON round trip.
//
//	go test ./forms -run '^$' -fuzz FuzzNormalize -fuzztime 60s
func FuzzNormalize(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "*", "*.input.json"))
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`[]`, `{}`, `null`, `[{"type": "select"}]`, `{"properties": {"a": true}}`,
		`{"components": [{"type": "panel", "components": [{"type": "columns", "columns": [{"components": [{}]}]}]}]}`,
		`[{"key": "n", "type": "number", "min": 1e400, "default": -0}]`,
		`{"type": "object", "properties": {"b": {"type": "boolean", "default": "maybe"}}, "required": "b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		conv, err := forms.Convert(raw)
		if err != nil {
			return
		}
		b, err := json.Marshal(conv.Schema)
		if err != nil {
			t.Fatalf("converted schema does not marshal: %v", err)
		}
		if conv.Shape == forms.ShapeV1 {
			_ = forms.Validate(conv.Schema)
			return
		}
		if ps := forms.Validate(conv.Schema); len(ps) > 0 {
			t.Fatalf("converted %s is invalid: %v\n%s", conv.Shape, ps, b)
		}
		again, err := forms.Normalize(b)
		if err != nil {
			t.Fatalf("converted schema does not read back: %v", err)
		}
		if b2, _ := json.Marshal(again); !bytes.Equal(b, b2) {
			t.Fatalf("round trip changed the schema:\n%s\n%s", b, b2)
		}
	})
}
