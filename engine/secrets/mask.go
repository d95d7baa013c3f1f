package secrets

import "unicode/utf8"

// Masked is what a listing shows for a value too short to show any of: eight bullets.
const Masked = "••••••••"

// MaskMinLength is the shortest value (in characters) whose last four characters Mask
// shows; a shorter one is all mask.
const MaskMinLength = 12

// Mask hides a value for listings: never the plaintext, at most its last four characters
// and only for values of at least MaskMinLength characters ("••••••••abcd"); any shorter
// value, and any value that is not valid UTF-8, is the fixed Masked. The length of the
// value is not revealed: the mask is the same length for every value.
func Mask(value string) string {
	n := utf8.RuneCountInString(value)
	if n < MaskMinLength || !utf8.ValidString(value) {
		return Masked
	}
	tail := value
	for range n - 4 {
		_, size := utf8.DecodeRuneInString(tail)
		tail = tail[size:]
	}
	return Masked + tail
}
