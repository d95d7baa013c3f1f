package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/svcflow/svcflow/hosts/gateway"
)

// announce tells the person who started the gateway, once it listens on addr, where the
// console is and how to sign in to it: in the log (a line a log pipeline keeps) and in
// plain words on standard error. With --dev-token it prints a development management token
// on standard output, never in the log: logs travel (to files, to collectors) and a token
// in them is a token given away.
func (f *gatewayFlags) announce(ctx context.Context, gw *gateway.Server, addr string, log *slog.Logger, stdout io.Writer) error {
	base := "http://" + browsable(addr)
	console := base + "/console"
	log.Info("console", "url", console)
	human := f.stderr
	if human == nil {
		human = io.Discard
	}
	fmt.Fprintf(human, "\nsvcflow: the console is at %s\n", console)
	switch {
	case f.devToken:
		token, ownsOrg, err := gw.DevToken(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped while starting: nothing to announce
			}
			return fmt.Errorf("--dev-token: %w", err)
		}
		log.Info("development account: a new management token is on standard output", "email", gateway.DevAccountEmail)
		fmt.Fprintf(stdout, "svcflow: development management token (account %s): %s\n", gateway.DevAccountEmail, token)
		fmt.Fprintf(human, "svcflow: sign in to the console with the development management token printed on standard output\n")
		if ownsOrg {
			fmt.Fprintf(human, "  (account %s, organization %s: the tour's runs show there); a new one at each start.\n", gateway.DevAccountEmail, gateway.DevOrgID)
		} else {
			log.Warn("development account: organization "+gateway.DevOrgID+" belongs to another account", "email", gateway.DevAccountEmail)
		}
	default:
		// Advice only: a store that cannot answer (or a stop while starting) does not stop
		// the gateway, which is already serving.
		has, err := gw.HasAccounts(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("could not tell whether the gateway has an account", "err", err)
			}
			break
		}
		if has {
			break
		}
		signup := fmt.Sprintf(`curl -s %s/gateway/signup -H Content-Type:application/json -d '{"email": "you@example.com", "name": "Me"}'`, base)
		log.Info("no gateway account yet: POST /gateway/signup makes one, or restart with --dev-token", "signup", base+"/gateway/signup")
		fmt.Fprintf(human, "svcflow: no account yet. Make one; its management_token signs you in to the console:\n  %s\n", signup)
		if gateway.Loopback(f.addr) || f.addr == "" {
			fmt.Fprintf(human, "  or, on this machine only, restart with --dev-token: it prints a management token for a local account.\n")
		}
	}
	if f.smtpAddr == "" && !f.showCodes {
		fmt.Fprintf(human, "svcflow: people sign in to forms and the SDK with a mailed code; without --smtp-addr, --dev-show-codes logs the codes.\n")
	}
	fmt.Fprintln(human)
	return nil
}

// browsable is a listen address a browser can open: an unspecified host (every interface)
// is reached at localhost.
func browsable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}
