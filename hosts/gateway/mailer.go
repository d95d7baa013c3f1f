package gateway

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// Mailer sends the one-time sign-in codes.
type Mailer interface {
	// SendCode mails code to the person at to, for the organization named org.
	SendCode(ctx context.Context, to, org, code string, ttl time.Duration) error
}

// SMTPOptions configure SMTPMailer.
type SMTPOptions struct {
	// Addr is the server's host:port.
	Addr string
	From string
	// User and Password log in (SMTP AUTH) when User is set; only over TLS, or to a
	// loopback server.
	User, Password string
	// TLS configures STARTTLS (taken whenever the server offers it); nil: the system's roots.
	TLS *tls.Config
	// Timeout bounds a whole send (10 s when 0).
	Timeout time.Duration
}

// SMTPMailer sends codes through an SMTP server, with STARTTLS when the server offers it.
type SMTPMailer struct {
	o    SMTPOptions
	host string
	port int
}

// NewSMTPMailer checks o and returns the mailer.
func NewSMTPMailer(o SMTPOptions) (*SMTPMailer, error) {
	host, p, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("smtp address %q: want host:port", o.Addr)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("smtp address %q: bad port", o.Addr)
	}
	if o.From == "" {
		return nil, fmt.Errorf("smtp: a From address is required (--smtp-from)")
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	return &SMTPMailer{o: o, host: host, port: port}, nil
}

// SendCode sends one message: the code, how long it lives, and that it was not asked for
// by the sender if the reader did not ask.
func (m *SMTPMailer) SendCode(ctx context.Context, to, org, code string, ttl time.Duration) error {
	msg := gomail.NewMsg()
	if err := msg.From(m.o.From); err != nil {
		return fmt.Errorf("smtp from: %w", err)
	}
	if err := msg.To(to); err != nil {
		return fmt.Errorf("smtp to: %w", err)
	}
	msg.Subject("Your sign-in code: " + code)
	msg.SetDate()
	msg.SetMessageID()
	msg.SetBodyString(gomail.TypeTextPlain, fmt.Sprintf(
		"Your sign-in code for %s is %s\r\n\r\nIt works once, for %d minutes. If you did not ask to sign in, ignore this message.\r\n",
		org, code, int(ttl.Minutes())))
	opts := []gomail.Option{gomail.WithPort(m.port), gomail.WithTimeout(m.o.Timeout), gomail.WithTLSPortPolicy(gomail.TLSOpportunistic)}
	if m.o.TLS != nil {
		opts = append(opts, gomail.WithTLSConfig(m.o.TLS))
	} else {
		opts = append(opts, gomail.WithTLSConfig(&tls.Config{ServerName: m.host, MinVersion: tls.VersionTLS12}))
	}
	if m.o.User != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(m.o.User), gomail.WithPassword(m.o.Password))
	}
	c, err := gomail.NewClient(m.host, opts...)
	if err != nil {
		return fmt.Errorf("smtp client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, m.o.Timeout)
	defer cancel()
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("smtp send: %w", err)
	}
	return nil
}

// mailConfigured reports whether m can bring a code to a person: a development mailer that
// does not even log the codes brings them to no one.
func mailConfigured(m Mailer) bool {
	lm, isLog := m.(LogMailer)
	return !isLog || lm.ShowCodes
}

// LogMailer is the development mailer (no --smtp-addr): it logs that a code was sent, and
// the code itself only when ShowCodes is set (local development, never production).
type LogMailer struct {
	Log       *slog.Logger
	ShowCodes bool
}

// SendCode logs the sending.
func (m LogMailer) SendCode(ctx context.Context, to, org, code string, ttl time.Duration) error {
	attrs := []any{"org_id", org, "expires_in", ttl.String()}
	if m.ShowCodes {
		attrs = append(attrs, "to", to, "code", code)
	}
	m.Log.InfoContext(ctx, "sign-in code sent (development mailer: no --smtp-addr)", attrs...)
	return nil
}
