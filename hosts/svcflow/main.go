// Command svcflow is the one binary: serve (runtime + worker in one process, the zero-setup
// default on embedded SQLite), runtime, worker, migrate, rotate-master-key and openapi.
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/identity"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/hosts/worker"
)

// version is the release, set with -ldflags "-X main.version=...".
var version = "dev"

const usage = `svcflow: multi-tenant workflow automation

usage:
  svcflow serve   [--db DSN] [--runtime-addr ADDR] [--gateway-addr ADDR] [--workers N] [call flags]
  svcflow runtime [--db DSN] [--runtime-addr ADDR]
  svcflow worker  [--db DSN] [--workers N] [call flags]
  svcflow migrate [--db DSN]
  svcflow rotate-master-key [--db DSN] [--grace 2s]
  svcflow openapi

DSN: sqlite:PATH, sqlite::memory:, or postgres://... (default sqlite:./svcflow.db)

call flags: --io-concurrency N (calls to other systems in flight, default 512),
  --io-per-org N (default 256), --allow-private-targets (actions, OAuth tools and token
  calls may reach loopback and private addresses and local databases: single-tenant
  deployments and tests only), --oauth-redirect-url URL (the OAuth callback address)

Org config and OAuth tokens are sealed under a master key: SVC_MASTER_KEY (base64 of 32
bytes; "new,old" during a rotation), or the key file SVC_MASTER_KEY_FILE, or by default on
a SQLite file the key file PATH.masterkey, generated on first start. rotate-master-key
re-seals every value and token under a new key while the service runs.

SVC_IDENTITY_KEY (base64 of at least 32 bytes) is the key the gateway signs a signed-in
person's identity with (header X-Svc-Identity); without it no identity is believed and a
form with settings.requireAuth takes no submission.

SVC_OAUTH_API_URLS=slack=URL,gmail=URL,sheets=URL,graph=URL (any of them) points the
OAuth tools at other API base URLs (a test double or a proxy).
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd, rest := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("db", "sqlite:./svcflow.db", "database: sqlite:PATH, sqlite::memory: or postgres://...")
	runtimeAddr := fs.String("runtime-addr", "127.0.0.1:8080", "runtime API listen address")
	gatewayAddr := fs.String("gateway-addr", "127.0.0.1:8081", "gateway listen address (the gateway is not part of this build yet)")
	workers := fs.Int("workers", 4, "jobs a worker runs at once (step slots; calls in flight hold none)")
	ioConcurrency := fs.Int("io-concurrency", engine.DefaultIOConcurrency, "calls to other systems (actions, models) in flight at once")
	ioPerOrg := fs.Int("io-per-org", engine.DefaultIOPerOrg, "calls in flight at once for one organization")
	oauthRedirect := fs.String("oauth-redirect-url", "", "the OAuth callback address sent to providers (https://<host>/oauth/callback), unless an organization's oauth:<provider> app sets redirect_url")
	allowPrivate := fs.Bool("allow-private-targets", false, "let actions reach loopback, private and link-local addresses and local databases (single-tenant deployments and tests only)")
	grace := fs.Duration("grace", 2*time.Second, "rotate-master-key: how long to wait for writes under the old key before the confirming pass")
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	switch cmd {
	case "openapi":
		var b []byte
		if b, err = runtime.OpenAPIYAML(version); err == nil {
			_, err = stdout.Write(b)
		}
	case "migrate":
		err = withStore(ctx, *dsn, log, func(st *store.Store) error {
			log.Info("migrated", "dialect", st.Dialect())
			return nil
		})
	case "serve", "runtime", "worker":
		if cmd == "serve" && *gatewayAddr != "" {
			log.Info("the gateway is not part of this build; --gateway-addr is reserved for it", "gateway_addr", *gatewayAddr)
		}
		err = withStore(ctx, *dsn, log, func(st *store.Store) error {
			keys, err := masterKeyring(ctx, *dsn, st, os.Getenv, log)
			if err != nil {
				return fmt.Errorf("master key: %w", err)
			}
			apis, named, err := oauthAPIs(os.Getenv(envOAuthAPIURLs))
			if err != nil {
				return err
			}
			if len(named) > 0 {
				log.Info("OAuth tool APIs from "+envOAuthAPIURLs, "apis", strings.Join(named, ","))
			}
			cfg := engine.Config{Store: st, Logger: log, Keyring: keys, AllowPrivateTargets: *allowPrivate,
				IOConcurrency: *ioConcurrency, IOPerOrg: *ioPerOrg,
				OAuth: engine.OAuthOptions{APIs: apis, AllowPrivateTargets: *allowPrivate, RedirectURL: *oauthRedirect}}
			idKey, err := identityKey(os.Getenv(envIdentityKey))
			if err != nil {
				return err
			}
			return serve(ctx, st, cfg, log, cmd, *runtimeAddr, *workers, idKey)
		})
	case "rotate-master-key":
		err = withStore(ctx, *dsn, log, func(st *store.Store) error {
			return rotateMasterKey(ctx, *dsn, st, os.Getenv, *grace, log)
		})
	default:
		fmt.Fprintf(stderr, "svcflow: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		log.Error(cmd+" failed", "err", err)
		return 1
	}
	return 0
}

// withStore opens and migrates the database, runs fn, and closes it.
func withStore(ctx context.Context, dsn string, log *slog.Logger, fn func(*store.Store) error) error {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return fn(st)
}

// serve runs the runtime API and/or a worker until ctx ends, then drains both: the API
// finishes the requests in flight, the worker the steps in flight.
func serve(ctx context.Context, st *store.Store, cfg engine.Config, log *slog.Logger, cmd, addr string, workers int, idKey []byte) error {
	eng, err := engine.New(cfg)
	if err != nil {
		return err
	}
	// A server that fails stops the worker too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	if cmd == "serve" || cmd == "worker" {
		w := worker.New(eng, worker.Options{Concurrency: workers, Logger: log})
		wg.Add(1)
		go func() { defer wg.Done(); errs <- w.Run(ctx) }()
		log.Info("worker started", "concurrency", workers, "dialect", st.Dialect())
	}
	if cmd == "serve" || cmd == "runtime" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		srv := &http.Server{
			Handler:           runtime.New(eng, runtime.Options{Logger: log, Version: version, IdentityKey: idKey}).Handler(),
			ReadHeaderTimeout: 10 * time.Second,
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs <- err
				cancel()
			}
		}()
		go func() {
			<-ctx.Done()
			shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdown)
		}()
		log.Info("runtime listening", "addr", ln.Addr().String(), "dialect", st.Dialect())
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	log.Info("stopped cleanly")
	return nil
}

// envIdentityKey names the gateway's identity key (hosts/identity).
const envIdentityKey = "SVC_IDENTITY_KEY"

// identityKey decodes SVC_IDENTITY_KEY: nil when unset. The error never quotes the value.
func identityKey(v string) ([]byte, error) {
	if v == "" {
		return nil, nil
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil || len(k) < identity.MinKeyBytes {
		return nil, fmt.Errorf("%s: want base64 of at least %d bytes", envIdentityKey, identity.MinKeyBytes)
	}
	return k, nil
}
