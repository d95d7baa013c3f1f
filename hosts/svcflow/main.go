// Command svcflow is the one binary: serve (runtime + worker in one process, the zero-setup
// default on embedded SQLite), runtime, worker, migrate, rotate-master-key and openapi.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/gateway"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
	"github.com/svcflow/svcflow/hosts/identity"
	"github.com/svcflow/svcflow/hosts/license"
	"github.com/svcflow/svcflow/hosts/metrics"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/hosts/telemetry"
	"github.com/svcflow/svcflow/hosts/worker"
)

// version is the release, set with -ldflags "-X main.version=...".
var version = "dev"

// usage is what `svcflow help` prints: a line per command (commands), then what the
// commands share.
var usage = "svcflow: multi-tenant workflow automation\n\nusage:\n" + commandLines() + `  svcflow license keygen                          # a new Ed25519 license key pair (JSON)
  svcflow license issue --licensee NAME --seats N [--features a,b] [--days 365] [--not-before RFC3339]
                                                  # SVC_LICENSE_KEY: the signing key (base64 seed)

svcflow <command> --help lists the command's flags; a flag the command does not take is an
error (exit 2).

DSN: sqlite:PATH, sqlite::memory:, or postgres://... (default sqlite:./svcflow.db)

--max-document-mib N (serve, runtime): the largest document version an upload may carry,
  in MiB (default 25, at most 1024). --documents-dir DIR (serve, runtime, worker): document
  content as files under DIR instead of in the database; every process of a deployment
  needs the same DIR

call flags (serve, runtime, worker): --io-concurrency N (calls to other systems in
  flight, default 512), --io-per-org N (default 256), --allow-private-targets (actions,
  OAuth tools and token calls may reach loopback and private addresses and local
  databases: single-tenant deployments and tests only), --oauth-redirect-url URL (the
  OAuth callback address)

Health: GET /healthz (liveness) and GET /readyz (readiness: the database answers and is
  migrated; 503 otherwise) on the runtime's and the gateway's addresses, and on a worker's
  --health-addr ADDR when given (off by default).

--ops-addr ADDR (serve, runtime, gateway, worker): the operator's endpoints on their own
  listener, off by default: /metrics (Prometheus) and Go's profiler (/debug/pprof/); bind
  it to loopback or a private network (127.0.0.1:9090), it has no credentials

--otlp-endpoint URL (serve, runtime, worker): OpenTelemetry traces of runs, steps, model
  calls and webhook deliveries, sent over OTLP/HTTP to URL/v1/traces (a collector, Jaeger
  or Tempo: http://localhost:4318); off by default. OTEL_EXPORTER_OTLP_ENDPOINT or
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT turn it on as well; OTEL_SERVICE_NAME (default
  svcflow), OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER[_ARG] and the exporter's other
  OTEL_EXPORTER_OTLP_* variables apply

Org config and OAuth tokens are sealed under a master key: SVC_MASTER_KEY (base64 of 32
bytes; "new,old" during a rotation), or the key file SVC_MASTER_KEY_FILE, or by default on
a SQLite file the key file PATH.masterkey, generated on first start. rotate-master-key
re-seals every value and token under a new key while the service runs.

SVC_IDENTITY_KEY (base64 of at least 32 bytes; "new,old" during a rotation) is the key the
gateway signs a signed-in person's identity with (header X-Svc-Identity); the runtime and
the gateway must share it. The gateway signs with the first; the runtime verifies with any.
serve, which runs both, makes one for the process when it is unset; a separate runtime
without it believes no identity, and a form with settings.requireAuth takes no submission.

SVC_LICENSE_PUBLIC_KEY (base64; "new,old" during a rotation) is the key the gateway
verifies licenses with (/licensing/validate); without it licensing is off. SVC_LICENSE_KEY (the signing key) lets
the platform operator issue licenses (POST /admin/licenses).

SVC_OPERATOR_TOKEN (at least 24 characters) opens the platform operator's routes under
/admin/ (tiers, accounts, licenses, usage); without it they answer 404.

Gateway sign-in codes go through --smtp-addr host:port (--smtp-from, --smtp-user and
SVC_SMTP_PASSWORD; STARTTLS whenever offered); without it a development mailer logs that a
code was sent (the code too only with --dev-show-codes).

serve and gateway print where the console is once the gateway listens. --dev-token (local
development, a loopback --gateway-addr only) makes the account dev@localhost, owner of the
organization acme, and prints a new management token for it on standard output at each
start (never in the log).

SVC_OAUTH_API_URLS=slack=URL,gmail=URL,sheets=URL,graph=URL (any of them) points the
OAuth tools at other API base URLs (a test double or a proxy).
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || (args[0] == "help" && len(args) == 1) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	name, rest := args[0], args[1:]
	if name == "help" {
		// svcflow help <command>: as svcflow <command> --help.
		name, rest = args[1], []string{"--help"}
	}
	if name == "license" {
		if len(rest) == 1 && (rest[0] == "--help" || rest[0] == "-h") {
			fmt.Fprint(stdout, usage) // its lines are the usage's
			return 0
		}
		return licenseCommand(rest, stdout, stderr)
	}
	cmd, ok := lookupCommand(name)
	if !ok {
		fmt.Fprintf(stderr, "svcflow: unknown command %q\n\n%s", name, usage)
		return 2
	}
	cfg, fs, help, err := cmd.parse(rest)
	switch {
	case help:
		cmd.printHelp(stdout, fs)
		return 0
	case err != nil:
		fmt.Fprintln(stderr, err)
		return 2
	}
	switch c := cfg.(type) {
	case *processConfig:
		if c.gateway != nil {
			c.gateway.stderr = stderr
		}
	case *gatewayConfig:
		c.gateway.stderr = stderr
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cfg.run(ctx, log, stdout); err != nil {
		log.Error(name+" failed", "err", err)
		return 1
	}
	return 0
}

func (c *openapiConfig) run(_ context.Context, _ *slog.Logger, stdout io.Writer) error {
	var (
		b   []byte
		err error
	)
	gen := map[[2]string]func(string) ([]byte, error){
		{"runtime", "3.1"}: runtime.OpenAPIYAML, {"runtime", "3.0"}: runtime.OpenAPI30YAML,
		{"integrator", "3.1"}: gateway.IntegratorYAML, {"integrator", "3.0"}: gateway.Integrator30YAML,
	}[[2]string{c.doc, c.version}]
	b, err = gen(version)
	if err == nil {
		_, err = stdout.Write(b)
	}
	return err
}

func (c *migrateConfig) run(ctx context.Context, log *slog.Logger, _ io.Writer) error {
	return withStore(ctx, c.store.dsn, log, func(st *store.Store) error {
		log.Info("migrated", "dialect", st.Dialect())
		return nil
	})
}

func (c *rotateConfig) run(ctx context.Context, log *slog.Logger, _ io.Writer) error {
	return withStore(ctx, c.store.dsn, log, func(st *store.Store) error {
		return rotateMasterKey(ctx, c.store.dsn, st, os.Getenv, c.grace, log)
	})
}

func (c *gatewayConfig) run(ctx context.Context, log *slog.Logger, stdout io.Writer) error {
	u, err := url.Parse(c.runtimeURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--runtime-url %q: the runtime's http(s) base URL is required", c.runtimeURL)
	}
	return withStore(ctx, c.store.dsn, log, func(st *store.Store) error {
		opts, err := c.gateway.options(os.Getenv, log)
		if err != nil {
			return err
		}
		if opts.IdentityKey == nil {
			log.Warn(envIdentityKey + " is unset: signed-in people are not vouched for to the runtime (requireAuth forms and SDK submits fail)")
		}
		opts.Store, opts.RuntimeURL, opts.Version, opts.Shared = gwstore.New(st.Shared()), u, version, st.Dialect() == "postgres"
		opts.Meter = c.ops.meter(ctx, log, st, gateway.Metrics()...)
		gw := gateway.New(opts)
		flushed := make(chan struct{})
		go func() { defer close(flushed); gw.RunFlusher(ctx, usageFlush) }()
		ln, err := net.Listen("tcp", c.gateway.addr)
		if err == nil {
			log.Info("gateway listening", "addr", ln.Addr().String())
			if err = c.gateway.announce(ctx, gw, ln.Addr().String(), log, stdout); err == nil {
				if err = serveListener(ctx, ln, gw.Handler()); err == nil {
					log.Info("stopped cleanly")
				}
			}
		}
		<-flushed
		return err
	})
}

// run runs serve, runtime or worker: the engine over the store, and the roles the command
// plays.
func (c *processConfig) run(ctx context.Context, log *slog.Logger, stdout io.Writer) error {
	return withStore(ctx, c.store.dsn, log, func(st *store.Store) error {
		keys, err := masterKeyring(ctx, c.store.dsn, st, os.Getenv, log)
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
		if c.engine.lease < time.Second {
			return fmt.Errorf("--lease %s: at least 1s", c.engine.lease)
		}
		descs := engine.Metrics()
		if c.gateway != nil {
			descs = append(descs, gateway.Metrics()...)
		}
		if c.worker != nil {
			descs = append(descs, worker.Metrics()...)
		}
		meter := c.ops.meter(ctx, log, st, descs...)
		tr, err := telemetry.New(ctx, telemetry.Options{Endpoint: c.engine.otlpEndpoint, Getenv: os.Getenv, Version: version, Command: c.cmd})
		if err != nil {
			return fmt.Errorf("tracing: %w", err)
		}
		defer func() {
			// Send the spans still queued: the run spans of the last runs are among them.
			flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := tr.Shutdown(flush); err != nil {
				log.Warn("tracing: spans not sent at shutdown", "err", err)
			}
		}()
		var tp trace.TracerProvider // nil: no span is made
		if tr.Provider != nil {
			tp = tr.Provider
			log.Info("tracing: sending spans over OTLP", "url", tr.URL)
		}
		e := c.engine
		cfg := engine.Config{Store: st, Logger: log, Keyring: keys, AllowPrivateTargets: e.allowPrivate, Lease: e.lease, Meter: meter, TracerProvider: tp,
			IOConcurrency: e.ioConcurrency, IOPerOrg: e.ioPerOrg,
			OAuth: engine.OAuthOptions{APIs: apis, AllowPrivateTargets: e.allowPrivate, RedirectURL: e.oauthRedirect}}
		if c.api != nil {
			cfg.MaxDocumentBytes = c.api.maxDocMiB << 20
		}
		if e.documentsDir != "" {
			cfg.Blobs = documents.NewDirBlobs(e.documentsDir)
		}
		var (
			idKey      []byte
			idPrevious [][]byte
		)
		if c.api != nil || c.gateway != nil {
			if idKey, idPrevious, err = identityKeys(os.Getenv(envIdentityKey)); err != nil {
				return err
			}
		}
		var gwOpts *gateway.Options
		if c.gateway != nil {
			opts, err := c.gateway.options(os.Getenv, log)
			if err != nil {
				return err
			}
			if c.gateway.addr != "" {
				gwOpts = &opts
			}
		}
		if idKey == nil && gwOpts != nil {
			// serve runs the runtime and the gateway in one process: they share a key
			// made for the process when none is configured.
			idKey = make([]byte, identity.MinKeyBytes)
			if _, err := rand.Read(idKey); err != nil {
				return err
			}
		}
		if gwOpts != nil {
			gwOpts.IdentityKey, gwOpts.Meter = idKey, meter
		}
		var rtOpts *runtime.Options
		if c.api != nil {
			rtOpts = &runtime.Options{Logger: log, Version: version, IdentityKey: idKey, IdentityPreviousKeys: idPrevious, LegacyCreateFromAI: c.api.legacyAI}
		}
		return c.serve(ctx, st, cfg, log, stdout, rtOpts, gwOpts)
	})
}

// withStore opens and migrates the database, runs fn, and closes it. Both sets of
// migrations run, the engine's and then the gateway's (hosts/gateway/gwstore, its tables in
// the same database), whichever command this is: the schema is whole whoever starts first.
func withStore(ctx context.Context, dsn string, log *slog.Logger, fn func(*store.Store) error) error {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := gwstore.New(st.Shared()).Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return fn(st)
}

// The gateway's store is what the gateway declares it needs.
var _ gateway.Store = (*gwstore.Store)(nil)

// serve runs the engine's roles until ctx ends, then drains them: the API finishes the
// requests in flight, the worker the steps in flight. rtOpts is nil for a process without
// the runtime API, gwOpts for one without a gateway.
func (c *processConfig) serve(ctx context.Context, st *store.Store, cfg engine.Config, log *slog.Logger, stdout io.Writer, rtOpts *runtime.Options, gwOpts *gateway.Options) error {
	eng, err := engine.New(cfg)
	if err != nil {
		return err
	}
	// A server that fails stops the worker too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	if c.worker != nil {
		w := worker.New(eng, worker.Options{Concurrency: c.worker.workers, Logger: log})
		wg.Add(1)
		go func() { defer wg.Done(); errs <- w.Run(ctx) }()
		log.Info("worker started", "concurrency", c.worker.workers, "dialect", st.Dialect())
	}
	type server struct {
		name, addr string
		h          http.Handler
	}
	var (
		servers []server
		gw      *gateway.Server
	)
	if rtOpts != nil {
		rt := runtime.New(eng, *rtOpts).Handler()
		servers = append(servers, server{"runtime", c.api.addr, rt})
		if gwOpts != nil {
			gwOpts.Store, gwOpts.Runtime, gwOpts.Logger, gwOpts.Version = gwstore.New(st.Shared()), rt, log, version
			gwOpts.Shared = st.Dialect() == "postgres" // several gateways share one database's limits
			gw = gateway.New(*gwOpts)
			wg.Add(1)
			go func() { defer wg.Done(); gw.RunFlusher(ctx, usageFlush) }()
			servers = append(servers, server{"gateway", c.gateway.addr, gw.Handler()})
		}
	}
	if c.health != nil && c.health.addr != "" {
		servers = append(servers, server{"health", c.health.addr, runtime.ProbeHandler(log, version, eng.Ready)})
	}
	for _, s := range servers {
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := serveListener(ctx, ln, s.h); err != nil {
				errs <- err
				cancel()
			}
		}()
		log.Info(s.name+" listening", "addr", ln.Addr().String(), "dialect", st.Dialect())
		if s.name == "gateway" {
			if err := c.gateway.announce(ctx, gw, ln.Addr().String(), log, stdout); err != nil {
				cancel()
				wg.Wait()
				return err
			}
		}
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

// identityKeys decodes SVC_IDENTITY_KEY: the key tokens are signed with, then during a
// rotation the keys the runtime still verifies with ("new,old"); nil when unset. The error
// never quotes the value.
func identityKeys(v string) (current []byte, previous [][]byte, err error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil, nil
	}
	for i, part := range strings.Split(v, ",") {
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(part))
		if err != nil || len(k) < identity.MinKeyBytes {
			return nil, nil, fmt.Errorf("%s: want base64 of at least %d bytes (key %d)", envIdentityKey, identity.MinKeyBytes, i+1)
		}
		if i == 0 {
			current = k
		} else {
			previous = append(previous, k)
		}
	}
	return current, previous, nil
}

// Environment of the gateway.
const (
	envSMTPPassword  = "SVC_SMTP_PASSWORD"
	envOperatorToken = "SVC_OPERATOR_TOKEN"
)

// options reads the gateway's configuration from its flags and the environment.
func (f *gatewayFlags) options(getenv func(string) string, log *slog.Logger) (gateway.Options, error) {
	o := gateway.Options{Rate: f.rate, Burst: f.burst, Logger: log, OperatorToken: strings.TrimSpace(getenv(envOperatorToken))}
	var err error
	if o.LicenseKey, o.LicensePreviousKeys, err = licensePublicKeys(getenv(envLicensePublicKey)); err != nil {
		return o, err
	}
	if v := strings.TrimSpace(getenv(envLicenseKey)); v != "" {
		if o.LicenseSigningKey, err = license.DecodeKey(v); err != nil {
			return o, fmt.Errorf("%s: %w", envLicenseKey, err)
		}
		if o.LicenseKey == nil {
			o.LicenseKey = o.LicenseSigningKey.Public().(ed25519.PublicKey)
		}
	}
	// The gateway signs with the first key; the keys after it are the runtime's.
	if o.IdentityKey, _, err = identityKeys(getenv(envIdentityKey)); err != nil {
		return o, err
	}
	if o.OperatorToken != "" && len(o.OperatorToken) < 24 {
		return o, fmt.Errorf("%s: at least 24 characters", envOperatorToken)
	}
	if f.smtpAddr == "" {
		o.Mailer = gateway.LogMailer{Log: log, ShowCodes: f.showCodes}
		return o, nil
	}
	o.Mailer, err = gateway.NewSMTPMailer(gateway.SMTPOptions{Addr: f.smtpAddr, From: f.smtpFrom, User: f.smtpUser, Password: getenv(envSMTPPassword)})
	return o, err
}

// maxDocumentMiB bounds --max-document-mib: a document version is one value in one row
// (PostgreSQL's bytea holds at most 1 GB) and is held whole in memory while it is uploaded
// and extracted.
const maxDocumentMiB = 1024

// usageFlush is how often a gateway saves the usage it counted.
const usageFlush = 5 * time.Second

// serveHTTP serves h on addr until ctx is done, then drains it (30 s at most).
func serveHTTP(ctx context.Context, log *slog.Logger, name, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	log.Info(name+" listening", "addr", ln.Addr().String())
	if err := serveListener(ctx, ln, h); err != nil {
		return err
	}
	log.Info("stopped cleanly")
	return nil
}

// opsHandler serves the operator's endpoints: /metrics and Go's profiler (net/http/pprof's
// handlers, on their own mux: nothing is registered on http.DefaultServeMux).
func opsHandler(reg *metrics.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", reg.Handler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// serveListener serves h on ln until ctx is done, then shuts the server down gracefully.
func serveListener(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
