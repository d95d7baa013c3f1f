package outbound

import (
	"sort"
	"strings"
)

// Redacted is what stands in a text where a secret was.
const Redacted = "[redacted]"

// wholeTokenBelow is the length under which a secret is redacted only where it stands as
// a whole token: a 1-byte secret "a" blanked wherever the letter occurs would leave no
// word of an error readable, while one of 6 bytes or more is rare enough inside other
// words to be blanked wherever it occurs (a server may glue it to other text).
const wholeTokenBelow = 6

// Redact returns text with every occurrence of every secret replaced by [redacted],
// whatever the secret's length: secrets of 6 bytes or more wherever they occur, shorter
// ones where they stand as a whole token (not preceded or followed by a letter or a digit
// where the secret itself begins or ends with one). Overlapping occurrences of several
// secrets become one [redacted]; the text a replacement writes is never searched again.
func Redact(text string, secrets []string) string {
	if text == "" || len(secrets) == 0 {
		return text
	}
	type span struct{ from, to int }
	var spans []span
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		for at := 0; at <= len(text)-len(sec); {
			i := strings.Index(text[at:], sec)
			if i < 0 {
				break
			}
			from, to := at+i, at+i+len(sec)
			if len(sec) >= wholeTokenBelow || wholeToken(text, sec, from, to) {
				spans = append(spans, span{from, to})
			}
			at = from + 1
		}
	}
	if len(spans) == 0 {
		return text
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for i := 0; i < len(spans); {
		from, to := spans[i].from, spans[i].to
		for i++; i < len(spans) && spans[i].from <= to; i++ {
			to = max(to, spans[i].to)
		}
		b.WriteString(text[last:from])
		b.WriteString(Redacted)
		last = to
	}
	b.WriteString(text[last:])
	return b.String()
}

// wholeToken reports whether sec at text[from:to] is not part of a longer word: where sec
// begins (ends) with a word byte, the byte before (after) it is not one.
func wholeToken(text, sec string, from, to int) bool {
	if wordByte(sec[0]) && from > 0 && wordByte(text[from-1]) {
		return false
	}
	if wordByte(sec[len(sec)-1]) && to < len(text) && wordByte(text[to]) {
		return false
	}
	return true
}

// wordByte: ASCII letters and digits, and every byte of a multi-byte UTF-8 character (a
// letter of another script, most likely).
func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
