package forms_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/forms"
	"github.com/svcflow/svcflow/internal/fuzzbound"
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

// FuzzNormalize: Convert answers a conversion or ErrMalformed / ErrUnrecognized (always
// ErrMalformed for what is not JSON), the same one twice, within fuzzbound.Bound; every older
// shape it converts gives a form that Validate accepts and that survives a JSON round trip
// unchanged; a form_schema_v1 document comes back as it is, but for a missing version,
// which is set and noted, and Validate judges it without failing.
//
//	go test ./forms -run '^$' -fuzz '^FuzzNormalize$' -fuzztime 30s
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
		`{"display": "wizard", "components": [{"type": "panel", "key": "p"}, {"type": "panel", "key": "p"}, {"type": "panel", "key": "p_2"}, {"type": "panel", "key": "p"}]}`,
		`{"pages": [{"id": "a", "fields": [{"key": "x", "type": "text"}]}]}`,
		`{"version": "form_schema_v1", "pages": "no"}`,
		`{"fields": [{"name": "__proto__", "type": "text"}, {"name": "constructor"}]}`,
		`[{"key": "a"}, {"key": "a"}, {"key": "a_2"}, {"key": "a"}]`,
		`{"a": 1} trailing`, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var conv *forms.Conversion
		var err error
		fuzzbound.Within(t, "Convert", func() { conv, err = forms.Convert(raw) })
		if err != nil {
			switch {
			case !json.Valid(raw) && !errors.Is(err, forms.ErrMalformed):
				t.Fatalf("not JSON, yet %v rather than ErrMalformed", err)
			case !errors.Is(err, forms.ErrMalformed) && !errors.Is(err, forms.ErrUnrecognized):
				t.Fatalf("Convert failed with %v: neither ErrMalformed nor ErrUnrecognized", err)
			}
			return
		}
		b, err := json.Marshal(conv.Schema)
		if err != nil {
			t.Fatalf("converted schema does not marshal: %v", err)
		}
		again, err := forms.Convert(raw)
		if err != nil {
			t.Fatalf("the second conversion failed: %v", err)
		}
		if b1, b2 := mustJSON(t, conv), mustJSON(t, again); !bytes.Equal(b1, b2) {
			t.Fatalf("two conversions differ:\n%s\n%s", b1, b2)
		}
		if conv.Shape == forms.ShapeV1 {
			// Passed through as it is ("version": "" too), but a missing version is set.
			var given struct{ Version *string }
			_ = json.Unmarshal(raw, &given)
			switch {
			case given.Version == nil && (conv.Schema.Version != forms.Version || len(conv.Notes) != 1 || conv.Notes[0].Pointer != "/version"):
				t.Fatalf("a form_schema_v1 document without a version came back with %q, notes %+v", conv.Schema.Version, conv.Notes)
			case given.Version != nil && (conv.Schema.Version != *given.Version || len(conv.Notes) != 0):
				t.Fatalf("a form_schema_v1 document of version %q came back with %q, notes %+v", *given.Version, conv.Schema.Version, conv.Notes)
			}
			fuzzbound.Within(t, "Validate", func() { _ = forms.Validate(conv.Schema) })
			return
		}
		var ps []forms.Problem
		fuzzbound.Within(t, "Validate", func() { ps = forms.Validate(conv.Schema) })
		if len(ps) > 0 {
			t.Fatalf("converted %s is invalid: %v\n%s", conv.Shape, ps, b)
		}
		back, err := forms.Normalize(b)
		if err != nil {
			t.Fatalf("converted schema does not read back: %v", err)
		}
		if b2, _ := json.Marshal(back); !bytes.Equal(b, b2) {
			t.Fatalf("round trip changed the schema:\n%s\n%s", b, b2)
		}
	})
}

// TestConvertManyPagesOfOneKey: 50,000 wizard panels with the same key get ids p, p_2, ...
// p_50000 in time linear in their number. Page ids were found by trying p_2, p_3, ... from
// the start for every page: 8,000 panels (216 KB) took 6 s, 50,000 would take minutes;
// the test gives up after 30 s, far above the 50 ms or so the conversion takes now.
func TestConvertManyPagesOfOneKey(t *testing.T) {
	t.Parallel()
	const n = 50_000
	raw := []byte(`{"display": "wizard", "components": [` + strings.Repeat(`{"type": "panel", "key": "p"},`, n-1) + `{"type": "panel", "key": "p"}]}`)
	done := make(chan *forms.Conversion, 1)
	go func() {
		conv, err := forms.Convert(raw)
		if err != nil {
			t.Error(err)
		}
		done <- conv
	}()
	select {
	case conv := <-done:
		require.NotNil(t, conv)
		require.Len(t, conv.Schema.Pages, n)
		require.Equal(t, "p", conv.Schema.Pages[0].ID)
		require.Equal(t, "p_2", conv.Schema.Pages[1].ID)
		require.Equal(t, "p_50000", conv.Schema.Pages[n-1].ID)
	case <-time.After(30 * time.Second):
		t.Fatal("converting 50,000 panels of one key did not end in 30 s: page ids are not found in linear time")
	}
}
