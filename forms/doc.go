// Package forms owns form_schema_v1: its types (Schema, Page, Field, Option and the
// fifteen field types), Validate for a schema, ValidateSubmission for a submitted payload,
// Normalize (and Convert) for the three older shapes, and EnsureKeys for a PbotForm
// pause. It is pure: it takes decoded JSON and values and returns values, with no storage,
// no HTTP, no clock and no model. The engine and hosts store forms, render them, decide
// status codes and add the submitted values to the run context. Generation with a model is
// theirs too (engine/hitl drafts a schema, POST /forms/generate): a generated form may use
// only the ten GeneratableTypes, and is held to Validate like any other.
//
// # Schemas
//
// A Schema is {version: "form_schema_v1", title?, description?, pages: [{id, title?,
// description?, fields: [{key, type, label, ...}]}]}; the payload is flat {key: value}
// whatever the page. Validate checks the shape with JSONSchema (embedded, draft 2020-12) and then the rules
// the JSON Schema cannot say, returning Problems with JSON pointers into the schema
// (/pages/0/fields/2/key) in document order:
//
//   - version is form_schema_v1; there is at least one page; page ids are non-empty and
//     unique;
//   - keys are snake_case (^[a-z][a-z0-9_]*$, at most 128 bytes) and unique across the
//     whole form, display-only fields included;
//   - every field has a label and one of the fifteen types; unknown members are refused;
//   - select and checklist have at least one option; option values are non-empty strings,
//     unique within the field;
//   - min <= max; step > 0;
//   - display-only types (content, file, signature, table, lookup, computed) are never
//     required and take no default;
//   - a default is a value the field would accept in a submission.
//
// Attributes a type does not use (options on a text field, unit on a number) are allowed
// and ignored.
//
// # Submissions
//
// ValidateSubmission checks data against a schema, with pointers /data/<key>:
//
//   - keys that are not field keys are refused: submitted values become run context keys
//     (@<key>), so an unknown key could overwrite @input or another step's output;
//   - display-only fields are never submitted (a non-null value for one is refused);
//   - null, "" (or only white space) and [] count as no value: a required field refuses
//     them, an optional one accepts them without further checks;
//   - number, money, range take a finite JSON number (float64, json.Number, any Go
//     number; not a numeric string) within min and max and, with step, a whole number of
//     steps from min (or 0), to 1e-9 relative;
//   - text and multiline take a string; email a bare address that net/mail parses
//     (local@domain, no display name, no comment); date "YYYY-MM-DD" naming a real day;
//   - select takes one option value, or an array of distinct ones when multiple;
//     checklist an array of distinct option values.
//
// The PbotForm rule that a submission carries every expected key is the engine's: a key
// the pause expects is a required field after EnsureKeys.
//
// # Older shapes
//
// Convert (Normalize without the notes) reads four shapes and tells which it read:
//
//   - form_schema_v1: an object with pages (or version form_schema_v1). Passed through
//     unchanged and not validated; a missing version is set.
//   - components: a builder's {components: [...]} (Form.io-like). Layout components
//     (panel, fieldset, well, columns, table with rows, tabs) are read in place; with
//     display "wizard" each top-level panel is a page. A container is flattened with a
//     note (its children's values are no longer nested under its key).
//   - field_list: a JSON array of fields, or {title?, description?, fields: [...]}.
//   - json_schema: {type: object, properties, required}; one field per property, in the
//     document's order.
//
// Builder and list fields are read with one vocabulary: key, name or id; label or title;
// required or validate.required; options, values, data.values, choices or enum (strings,
// numbers, booleans or {label, value}); default or defaultValue; min, max, step (or under
// validate); help, description or tooltip; placeholder; multiple; unit or currency. Types
// (case, "-" and "_" ignored): textfield, text, string, tel, phoneNumber, url, time,
// tags -> text; password -> text, masked; textarea -> multiline; number, integer (step 1)
// -> number; currency, money -> money; slider, range -> range; email; datetime, day, date
// -> date; select, dropdown, radio -> select; multiselect -> select, multiple;
// selectboxes, checkboxes, checklist -> checklist (a {value: true} default becomes the
// array of ticked values); checkbox with options -> checklist; a lone checkbox -> a
// checklist with one option of value "yes" (ticked submits ["yes"]; required means it
// must be ticked, as a builder's consent box); boolean, toggle, switch -> select yes/no;
// content, htmlelement, html -> content (HTML stripped to text); file, upload; signature;
// table; lookup; computed; hidden -> computed (a hidden value is not an input person
// fills in). Buttons are dropped.
//
// JSON Schema properties: string -> text (format email -> email, date -> date, textarea ->
// multiline, password -> masked text); enum or oneOf/anyOf of {const, title} -> select;
// number -> number and integer -> number with step 1 (minimum, maximum and multipleOf
// become min, max and step); boolean -> select with options Yes/No, values "yes"/"no",
// because a JSON Schema required boolean accepts false: required must ask for an answer,
// not for a tick; array with items.enum (or items.oneOf consts) -> checklist; title ->
// label, description -> help. Type lists take their first non-null type.
//
// Unmappable (a builder type with no equivalent, a grid or survey, an object or $ref
// property, an array of free values, a date-time format, a select whose options load
// from a URL) is kept as a text field with a note: the form still renders and still
// collects something, which an error would not for a stored form that is read on every
// visit. A builder component that is marked input: false and is unknown holds no value and
// is dropped with a note.
//
// Keys are made snake_case (firstName -> first_name, HTTPServer -> http_server,
// Prénom -> prenom), a keyless field is named from its label, a leading digit gets
// "field_", and a repeat gets "_2", "_3"; each rename is a note, because it changes the
// key a workflow reads (@first_name). Labels default to the key made readable
// (firstName -> "First name"). Option values are strings: 2 becomes "2" and a JSON Schema
// enum of numbers says so in a note. A conversion then makes the field valid, noting
// each drop: empty or repeated option values, a choice with no options left (kept as
// text), min above max (both dropped), a step that is not positive, required on a
// display-only field, a default the field would refuse. So every older shape that
// converts gives a form Validate accepts, which FuzzNormalize checks along with never
// panicking.
package forms
