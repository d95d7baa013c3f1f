package oauthtools

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"net/url"
	"regexp"
	"strings"

	"github.com/svcflow/svcflow/engine/outbound"
)

// gmail_send: POST {gmail}/users/me/messages/send {"raw": base64url(RFC 2822 message)}.
// Properties: to (an address or a list, "Name <a@b>" allowed), subject, body (plain text).
func buildGmailSend(apis APIs, props map[string]any) (outbound.Request, error) {
	to, err := recipients(props["to"])
	if err != nil {
		return outbound.Request{}, err
	}
	subject, err := text(props, "subject")
	if err != nil {
		return outbound.Request{}, err
	}
	if strings.ContainsAny(subject, "\r\n") {
		return outbound.Request{}, errors.New(`property "subject" must be one line`)
	}
	body, err := text(props, "body")
	if err != nil {
		return outbound.Request{}, err
	}
	raw, err := rfc2822(to, subject, body)
	if err != nil {
		return outbound.Request{}, err
	}
	return outbound.Request{
		Method: "POST",
		URL:    apis.Gmail + "/users/me/messages/send",
		Body:   map[string]string{"raw": base64.RawURLEncoding.EncodeToString(raw)},
	}, nil
}

// recipients reads to: a string (one address or a comma-separated list) or a list of them.
func recipients(v any) ([]*mail.Address, error) {
	var parts []string
	switch x := v.(type) {
	case string:
		parts = []string{x}
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, errors.New(`property "to": every recipient must be a string`)
			}
			parts = append(parts, s)
		}
	case nil:
		return nil, errors.New(`property "to" is required`)
	default:
		return nil, errors.New(`property "to" must be an address or a list of addresses`)
	}
	joined := strings.Join(parts, ", ")
	if strings.TrimSpace(joined) == "" || strings.ContainsAny(joined, "\r\n") {
		return nil, errors.New(`property "to" must name at least one address, on one line`)
	}
	addrs, err := mail.ParseAddressList(joined)
	if err != nil {
		return nil, fmt.Errorf(`property "to": %v`, err)
	}
	return addrs, nil
}

// rfc2822 builds a plain-text UTF-8 message: the subject encoded-word when not ASCII, the
// body quoted-printable (with CRLF line ends).
func rfc2822(to []*mail.Address, subject, body string) ([]byte, error) {
	var b strings.Builder
	names := make([]string, len(to))
	for i, a := range to {
		names[i] = a.String()
	}
	b.WriteString("To: " + strings.Join(names, ", ") + "\r\n")
	b.WriteString("Subject: " + mime.QEncoding.Encode("utf-8", subject) + "\r\n")
	b.WriteString("MIME-Version: 1.0\r\n")
	b.WriteString("Content-Type: text/plain; charset=\"UTF-8\"\r\n")
	b.WriteString("Content-Transfer-Encoding: quoted-printable\r\n\r\n")
	w := quotedprintable.NewWriter(&b)
	if _, err := w.Write([]byte(body)); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

var spreadsheetID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,200}$`)

// google_sheets_append_row: POST {sheets}/spreadsheets/{id}/values/{range}:append
// ?valueInputOption=USER_ENTERED {"range", "majorDimension": "ROWS", "values": [row]}.
// Properties: spreadsheet_id, range (A1 notation: "Sheet1!A1"), values (the row: a list
// of strings, numbers, booleans or nulls).
func buildSheetsAppend(apis APIs, props map[string]any) (outbound.Request, error) {
	id, err := text(props, "spreadsheet_id")
	if err != nil {
		return outbound.Request{}, err
	}
	if !spreadsheetID.MatchString(id) {
		return outbound.Request{}, errors.New(`property "spreadsheet_id" must be a spreadsheet id (letters, digits, '-' and '_')`)
	}
	rng, err := text(props, "range")
	if err != nil {
		return outbound.Request{}, err
	}
	if len(rng) > 500 || strings.ContainsAny(rng, "\r\n") {
		return outbound.Request{}, errors.New(`property "range" must be a range in A1 notation`)
	}
	row, ok := props["values"].([]any)
	if !ok || len(row) == 0 {
		return outbound.Request{}, errors.New(`property "values" must be a non-empty list: the row's cells`)
	}
	for i, cell := range row {
		switch cell.(type) {
		case string, float64, json.Number, int, int64, bool, nil:
		default:
			return outbound.Request{}, fmt.Errorf(`property "values": cell %d must be a string, a number, a boolean or null`, i)
		}
	}
	u := apis.Sheets + "/spreadsheets/" + url.PathEscape(id) + "/values/" + url.PathEscape(rng) + ":append?valueInputOption=USER_ENTERED"
	return outbound.Request{
		Method: "POST",
		URL:    u,
		Body:   map[string]any{"range": rng, "majorDimension": "ROWS", "values": []any{row}},
	}, nil
}

// slack_post_message: POST {slack}/chat.postMessage {"channel", "text"}.
func buildSlackPost(apis APIs, props map[string]any) (outbound.Request, error) {
	channel, err := text(props, "channel")
	if err != nil {
		return outbound.Request{}, err
	}
	msg, err := text(props, "text")
	if err != nil {
		return outbound.Request{}, err
	}
	return outbound.Request{
		Method:  "POST",
		URL:     apis.Slack + "/chat.postMessage",
		Headers: map[string]string{"Content-Type": "application/json; charset=utf-8"},
		Body:    map[string]string{"channel": channel, "text": msg},
	}, nil
}

// checkSlack: Slack answers its errors with 200 and {"ok": false, "error": "<code>"}.
func checkSlack(body any) error {
	m, _ := body.(map[string]any)
	if ok, _ := m["ok"].(bool); ok {
		return nil
	}
	code, _ := m["error"].(string)
	if code == "" {
		code = "no ok:true in the answer"
	}
	if len(code) > 200 {
		code = code[:200]
	}
	return fmt.Errorf("Slack answered ok:false: %s", code)
}

// microsoft_teams_post_message: POST {graph}/teams/{team_id}/channels/{channel_id}/messages
// {"body": {"contentType", "content"}}. Properties: team_id, channel_id, text, and
// content_type ("text", the default, or "html").
func buildTeamsPost(apis APIs, props map[string]any) (outbound.Request, error) {
	team, err := text(props, "team_id")
	if err != nil {
		return outbound.Request{}, err
	}
	channel, err := text(props, "channel_id")
	if err != nil {
		return outbound.Request{}, err
	}
	msg, err := text(props, "text")
	if err != nil {
		return outbound.Request{}, err
	}
	contentType := "text"
	if v, ok := props["content_type"]; ok && v != nil {
		s, _ := v.(string)
		if s != "text" && s != "html" {
			return outbound.Request{}, errors.New(`property "content_type" must be "text" or "html"`)
		}
		contentType = s
	}
	return outbound.Request{
		Method: "POST",
		URL:    apis.Graph + "/teams/" + url.PathEscape(team) + "/channels/" + url.PathEscape(channel) + "/messages",
		Body:   map[string]any{"body": map[string]string{"contentType": contentType, "content": msg}},
	}, nil
}
