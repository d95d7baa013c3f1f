package webhooks

// Checks of a registration before it is written: the URL and where it resolves, the
// event names, the filter, the payload template and the secret.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/outbound"
	"github.com/svcflow/svcflow/engine/svctype"
)

// webhookSealName is the name a registration's secret is sealed under (with the org id):
// a sealed value copied to another registration or organization does not open.
func webhookSealName(id string) string { return "webhook:" + id }

// webhookEvent resolves a registration's event name to its canonical name and alias.
func webhookEvent(name string) (canonical, alias string, p *core.Problem) {
	if name == "" {
		return "", "", &core.Problem{Pointer: "/event", Message: "required: one of " + strings.Join(events.Registrable(), ", ")}
	}
	canonical, ok := events.Canonical(name)
	if !ok {
		what := "is not an event"
		if _, known := events.Lookup(name); known {
			what = "reaches the org config webhook_url only and cannot be registered"
		}
		return "", "", &core.Problem{Pointer: "/event", Message: fmt.Sprintf("%q %s: one of %s", name, what, strings.Join(events.Registrable(), ", "))}
	}
	if canonical != name {
		alias = name
	}
	return canonical, alias, nil
}

// checkWebhookURL checks a target URL's form (not its address).
func checkWebhookURL(raw string) (*url.URL, *core.Problem) {
	bad := func(msg string) (*url.URL, *core.Problem) { return nil, &core.Problem{Pointer: "/url", Message: msg} }
	switch {
	case raw == "":
		return bad("required: an http:// or https:// URL")
	case len(raw) > MaxWebhookURLLen:
		return bad(fmt.Sprintf("at most %d bytes", MaxWebhookURLLen))
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		// Not the parser's message: it quotes the URL, which may hold a token.
		return bad("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("must be an http:// or https:// URL")
	case u.User != nil:
		return bad("must not carry credentials (user:password@): give the target a secret, which signs every delivery")
	case u.Hostname() == "":
		return bad("has no host")
	}
	return u, nil
}

// checkWebhookTarget refuses a target whose host is, or resolves to, an address that the
// outbound guard refuses, unless the engine allows private targets. This is the early,
// friendly error; the guard at connect time is what protects (a name may resolve elsewhere
// by then). A name that does not resolve within webhookResolveTimeout is accepted for the
// same reason. The message never names an address a name resolved to.
func (e *Webhooks) checkWebhookTarget(ctx context.Context, u *url.URL) *core.ValidationError {
	if e.allowPrivate {
		return nil
	}
	refused := func(what string) *core.ValidationError {
		return &core.ValidationError{Code: CodeTargetNotAllowed, Problems: []core.Problem{{Pointer: "/url", Message: what +
			": webhook targets must be public addresses (loopback, private, link-local and metadata addresses are refused)"}}}
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		var te *outbound.TargetError
		if err := outbound.CheckAddr(ip); errors.As(err, &te) {
			return refused("the host is a " + te.Reason)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, webhookResolveTimeout)
	defer cancel()
	addrs, err := e.resolveHost(ctx, host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		var te *outbound.TargetError
		if err := outbound.CheckAddr(a); errors.As(err, &te) {
			return refused(fmt.Sprintf("the host %q resolves to a %s", host, te.Reason))
		}
	}
	return nil
}

// resolveHost looks a target's host name up; tests replace it.
func (e *Webhooks) resolveHost(ctx context.Context, host string) ([]netip.Addr, error) {
	if e.resolve != nil {
		return e.resolve(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// checkWebhookFilter normalises a filter (nil when it filters nothing; tags deduplicated).
func checkWebhookFilter(f *svctype.WebhookFilter) (*svctype.WebhookFilter, []core.Problem) {
	if f.IsZero() {
		return nil, nil
	}
	var ps []core.Problem
	out := &svctype.WebhookFilter{ContentType: strings.TrimSpace(f.ContentType)}
	if len(f.Tags) > documents.MaxTags {
		ps = append(ps, core.Problem{Pointer: "/filter/tags", Message: fmt.Sprintf("at most %d tags", documents.MaxTags)})
	}
	for i, t := range f.Tags {
		switch {
		case t == "" || len(t) > documents.MaxTagLength:
			ps = append(ps, core.Problem{Pointer: fmt.Sprintf("/filter/tags/%d", i), Message: fmt.Sprintf("a tag is 1 to %d bytes", documents.MaxTagLength)})
		case !slices.Contains(out.Tags, t):
			out.Tags = append(out.Tags, t)
		}
	}
	if ct := out.ContentType; ct != "" {
		switch {
		case len(ct) > documents.MaxContentTypeLength:
			ps = append(ps, core.Problem{Pointer: "/filter/content_type", Message: fmt.Sprintf("at most %d bytes", documents.MaxContentTypeLength)})
		case !mediaTypePattern(ct):
			ps = append(ps, core.Problem{Pointer: "/filter/content_type", Message: "is not a media type (text/csv, or text/* for every text type)"})
		}
	}
	return out, ps
}

// mediaTypePattern: type/subtype with optional parameters, or type/* (which matches every
// subtype).
func mediaTypePattern(s string) bool {
	if major, ok := strings.CutSuffix(s, "/*"); ok {
		_, _, err := mime.ParseMediaType(major + "/x")
		return major != "" && !strings.ContainsAny(major, "/;* ") && err == nil
	}
	mt, _, err := mime.ParseMediaType(s)
	major, minor, ok := strings.Cut(mt, "/")
	return err == nil && ok && major != "" && minor != "" && !strings.Contains(minor, "/")
}

// checkWebhookAutoPayload bounds auto_payload (nil when empty).
func checkWebhookAutoPayload(p map[string]any) (map[string]any, []core.Problem) {
	if len(p) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(p)
	switch {
	case err != nil:
		return nil, []core.Problem{{Pointer: "/auto_payload", Message: "is not representable as JSON"}}
	case len(raw) > MaxWebhookAutoPayload:
		return nil, []core.Problem{{Pointer: "/auto_payload", Message: fmt.Sprintf("at most %d bytes as JSON", MaxWebhookAutoPayload)}}
	}
	return p, nil
}

// checkWebhookSecret: 1 to 512 bytes. The message never quotes it.
func checkWebhookSecret(s string) []core.Problem {
	if s == "" || len(s) > MaxWebhookSecretLen {
		return []core.Problem{{Pointer: "/secret", Message: fmt.Sprintf("a secret is 1 to %d bytes (\"\" in a PATCH removes it)", MaxWebhookSecretLen)}}
	}
	return nil
}

// checkWebhookShape checks what depends on several fields: a filter only on a document
// event.
func checkWebhookShape(w *svctype.Webhook) []core.Problem {
	if w.Filter == nil {
		return nil
	}
	if s, ok := events.Lookup(w.Event); ok && !s.Filterable {
		return []core.Problem{{Pointer: "/filter", Message: fmt.Sprintf("a filter is honoured for document events only (document.*), not %s", w.Event)}}
	}
	return nil
}
