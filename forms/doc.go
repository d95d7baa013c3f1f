// Package forms will hold form_schema_v1: types, validation, normalisation of older shapes,
// generation with a Model and submission checks. It is empty until the forms issue lands.
package forms
