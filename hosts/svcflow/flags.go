package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/gateway"
	"github.com/svcflow/svcflow/hosts/metrics"
)

// Each command has a configuration of its own, made of the flag groups below: a group is
// declared once and added to the commands that use it. A flag no group of a command
// declares is not on its flag set, so giving it is an error that says which commands take
// it, and `svcflow <command> --help` lists the command's flags and no other.

// config is one command's configuration: its flags and what it does with them.
type config interface {
	// flags declares the command's flags on fs.
	flags(fs *flag.FlagSet)
	// run does the command's work, logging to log; its error exits 1.
	run(ctx context.Context, log *slog.Logger, stdout io.Writer) error
}

// checker is a config whose flags take values that can be refused before anything starts
// (exit 2, as for a flag that does not parse).
type checker interface {
	check() error
}

// command names a config and says what it is for.
type command struct {
	name  string
	args  string // the synopsis of its flags, for usage lines
	about string
	new   func() config
}

// commands are the binary's commands, in the order the usage lists them (license, whose
// subcommands take flags of their own, is licenseCommand).
var commands = []command{
	{"serve", "[--db DSN] [--runtime-addr ADDR] [--gateway-addr ADDR] [--workers N] [call flags]",
		"The runtime API, the gateway and a worker in one process: the zero-setup default on embedded SQLite.",
		func() config {
			return &processConfig{cmd: "serve", api: &apiFlags{}, gateway: &gatewayFlags{}, worker: &workerFlags{}}
		}},
	{"runtime", "[--db DSN] [--runtime-addr ADDR] [call flags]",
		"The runtime API alone; workers run elsewhere on the same database.",
		func() config { return &processConfig{cmd: "runtime", api: &apiFlags{}} }},
	{"gateway", "[--db DSN] [--gateway-addr ADDR] --runtime-url URL",
		"The gateway alone, forwarding runtime routes to --runtime-url.",
		func() config { return &gatewayConfig{} }},
	{"worker", "[--db DSN] [--workers N] [--health-addr ADDR] [call flags]",
		"A worker alone: it runs the jobs; run many against one PostgreSQL.",
		func() config { return &processConfig{cmd: "worker", worker: &workerFlags{}, health: &healthFlags{}} }},
	{"migrate", "[--db DSN]",
		"Applies this build's migrations to the database, then exits.",
		func() config { return &migrateConfig{} }},
	{"rotate-master-key", "[--db DSN] [--grace 2s]",
		"Re-seals org config, OAuth tokens and webhook secrets under a new master key while the service runs.",
		func() config { return &rotateConfig{} }},
	{"openapi", "[--doc runtime|integrator] [--version 3.1|3.0]",
		"Writes an OpenAPI document to standard output: runtime, the runtime's routes (X-Org-Id); integrator, every route at the gateway's address, by credential (3.0: Huma's downgrade, for 3.0-only tools).",
		func() config { return &openapiConfig{} }},
}

// commandLines are the usage's line for each command.
func commandLines() string {
	var b strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&b, "  svcflow %-7s %s\n", c.name, c.args)
	}
	return b.String()
}

func lookupCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// flagSet is c's flag set with its configuration. It prints nothing itself: parse reports.
func (c command) flagSet() (config, *flag.FlagSet) {
	cfg := c.new()
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	cfg.flags(fs)
	return cfg, fs
}

// parse reads args into c's configuration. help is true for -h/--help; a usage error
// (a flag c does not take, a value that does not parse or is refused, an argument) is
// returned with the words to print.
func (c command) parse(args []string) (cfg config, fs *flag.FlagSet, help bool, err error) {
	cfg, fs = c.flagSet()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, fs, true, nil
		}
		return nil, fs, false, c.flagError(err)
	}
	if fs.NArg() > 0 {
		return nil, fs, false, fmt.Errorf("svcflow %s: unexpected argument %q: %s takes flags only (svcflow %s --help)", c.name, fs.Arg(0), c.name, c.name)
	}
	if ch, ok := cfg.(checker); ok {
		if err := ch.check(); err != nil {
			return nil, fs, false, fmt.Errorf("svcflow %s: %w", c.name, err)
		}
	}
	return cfg, fs, false, nil
}

// notDefined is the flag package's error for a flag the set does not have.
const notDefined = "flag provided but not defined: -"

// flagError says what is wrong with a flag: for one that other commands take, which ones.
func (c command) flagError(err error) error {
	name, ok := strings.CutPrefix(err.Error(), notDefined)
	if !ok {
		return fmt.Errorf("svcflow %s: %w", c.name, err)
	}
	var takers []string
	for _, o := range commands {
		if _, fs := o.flagSet(); fs.Lookup(name) != nil {
			takers = append(takers, o.name)
		}
	}
	if len(takers) == 0 {
		return fmt.Errorf("svcflow %s: no flag --%s (svcflow %s --help lists its flags)", c.name, name, c.name)
	}
	msg := fmt.Sprintf("svcflow %s: --%s is for %s, not %s", c.name, name, orList(takers), c.name)
	if hint := flagHints[name]; hint != "" {
		msg = fmt.Sprintf("svcflow %s: --%s is for %s; %s %s", c.name, name, orList(takers), c.name, hint)
	}
	return errors.New(msg)
}

// flagHints explain why a command lacks a flag another one has, where the reason is not
// obvious.
var flagHints = map[string]string{
	"health-addr": "answers /healthz and /readyz on its own address",
}

func orList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// printHelp writes c's usage line, what it is for and its flags.
func (c command) printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: svcflow %s %s\n\n%s\n\nflags:\n", c.name, c.args, c.about)
	fs.VisitAll(func(f *flag.Flag) {
		kind, text := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if kind != "" {
			fmt.Fprintf(w, " %s", kind)
		}
		fmt.Fprintf(w, "\n      %s", text)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// storeFlags name the database: every command that opens one.
type storeFlags struct{ dsn string }

func (f *storeFlags) flags(fs *flag.FlagSet) {
	fs.StringVar(&f.dsn, "db", "sqlite:./svcflow.db", "the `DSN` of the database: sqlite:PATH, sqlite::memory: or postgres://...")
}

// opsFlags open the operator's endpoints: every command that serves.
type opsFlags struct{ addr string }

func (f *opsFlags) flags(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "ops-addr", "", "a listen `ADDR` for the operator's endpoints, /metrics (Prometheus) and Go's profiler (/debug/pprof/); empty: none. Bind it to loopback or a private network: it has no credentials")
}

// meter starts the operator's listener once the store is open (/metrics reads it) and
// returns the meter to count into; without --ops-addr, one that counts nothing.
func (f *opsFlags) meter(ctx context.Context, log *slog.Logger, st *store.Store, descs ...*svctype.MetricDesc) svctype.Meter {
	if f.addr == "" {
		return svctype.NopMeter{}
	}
	reg := metrics.New(log, st, descs...)
	go func() {
		if err := serveHTTP(ctx, log, "operator endpoints", f.addr, opsHandler(reg)); err != nil {
			log.Error("operator endpoints", "err", err)
		}
	}()
	return reg
}

// engineFlags tune the engine of a process that runs it (serve, runtime, worker): its
// calls to other systems ("call flags"), job leases, document storage and tracing.
type engineFlags struct {
	ioConcurrency, ioPerOrg int
	oauthRedirect           string
	allowPrivate            bool
	lease                   time.Duration
	documentsDir            string
	otlpEndpoint            string
}

func (f *engineFlags) flags(fs *flag.FlagSet) {
	fs.IntVar(&f.ioConcurrency, "io-concurrency", engine.DefaultIOConcurrency, "`N` calls to other systems (actions, models) in flight at once")
	fs.IntVar(&f.ioPerOrg, "io-per-org", engine.DefaultIOPerOrg, "`N` calls in flight at once for one organization")
	fs.StringVar(&f.oauthRedirect, "oauth-redirect-url", "", "the OAuth callback `URL` sent to providers (https://<host>/oauth/callback), unless an organization's oauth:<provider> app sets redirect_url")
	fs.BoolVar(&f.allowPrivate, "allow-private-targets", false, "let actions, OAuth tools and token calls reach loopback, private and link-local addresses and local databases (single-tenant deployments and tests only)")
	fs.DurationVar(&f.lease, "lease", 15*time.Second, "how long (a Go duration) a claimed job stays with its worker without a heartbeat: a worker that dies leaves its jobs to the others after at most this")
	fs.StringVar(&f.documentsDir, "documents-dir", "", "keep document content as files under this `DIR` instead of in the database (every runtime and worker of a deployment needs the same directory); empty: in the database")
	fs.StringVar(&f.otlpEndpoint, "otlp-endpoint", "", "the OTLP/HTTP collector's base `URL` (http://localhost:4318) to send traces to; empty: the OTEL_EXPORTER_OTLP_* variables decide (tracing is off without them)")
}

// apiFlags configure the runtime API (serve, runtime).
type apiFlags struct {
	addr      string
	legacyAI  bool
	maxDocMiB int
}

func (f *apiFlags) flags(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "runtime-addr", "127.0.0.1:8080", "the runtime API's listen `ADDR`")
	fs.BoolVar(&f.legacyAI, "legacy-create-from-ai", false, "keep the legacy POST /workflows/create-from-ai working (drafts and publishes at once); off, it answers 410")
	fs.IntVar(&f.maxDocMiB, "max-document-mib", documents.MaxSize>>20, "the largest document version a client may upload, `N` MiB (1 to 1024); a CSV of a million records is about 40 MB")
}

func (f *apiFlags) check() error {
	if f.maxDocMiB < 1 || f.maxDocMiB > maxDocumentMiB {
		return fmt.Errorf("--max-document-mib is from 1 to %d, not %d", maxDocumentMiB, f.maxDocMiB)
	}
	return nil
}

// gatewayFlags configure the gateway (serve, gateway): its address, rate limits and the
// mail that carries sign-in codes.
type gatewayFlags struct {
	addr                         string
	rate                         float64
	burst                        int
	smtpAddr, smtpFrom, smtpUser string
	showCodes                    bool
	devToken                     bool
	stderr                       io.Writer // the person at the terminal: where the console is
}

func (f *gatewayFlags) flags(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "gateway-addr", "127.0.0.1:8081", "the gateway's listen `ADDR`; empty on serve: no gateway")
	fs.Float64Var(&f.rate, "rate", gateway.DefaultRate, "`N` requests a second each key may make (token bucket refill)")
	fs.IntVar(&f.burst, "burst", gateway.DefaultBurst, "`N` requests a key may make at once (token bucket size)")
	fs.StringVar(&f.smtpAddr, "smtp-addr", "", "the SMTP server (`HOST:PORT`) sign-in codes are sent through; empty: a development mailer that only logs")
	fs.StringVar(&f.smtpFrom, "smtp-from", "", "the From `ADDRESS` of sign-in code mail (required with --smtp-addr)")
	fs.StringVar(&f.smtpUser, "smtp-user", "", "the SMTP AUTH `USER` (password in SVC_SMTP_PASSWORD)")
	fs.BoolVar(&f.showCodes, "dev-show-codes", false, "without --smtp-addr: log the sign-in codes themselves (local development only)")
	fs.BoolVar(&f.devToken, "dev-token", false, "make a development account (dev@localhost, owning organization acme, the README tour's) and print a new management token for it on standard output at each start; refused unless the gateway listens on loopback only (local development only)")
}

func (f *gatewayFlags) check() error {
	if f.devToken && f.addr != "" && !gateway.Loopback(f.addr) {
		return fmt.Errorf("--dev-token: the gateway listens on %q, not on loopback only; a development token is for a gateway nobody else can reach (--gateway-addr 127.0.0.1:8081), elsewhere sign up (POST /gateway/signup)", f.addr)
	}
	return nil
}

// workerFlags size a worker (serve, worker).
type workerFlags struct{ workers int }

func (f *workerFlags) flags(fs *flag.FlagSet) {
	fs.IntVar(&f.workers, "workers", 4, "`N` jobs a worker runs at once (step slots; calls in flight hold none)")
}

// healthFlags give a worker, which serves no API, a listener for the probes.
type healthFlags struct{ addr string }

func (f *healthFlags) flags(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "health-addr", "", "a listen `ADDR` for GET /healthz and GET /readyz; empty: none")
}

// processConfig is the configuration of serve, runtime and worker: the engine, and the
// roles the process plays, each with its flags. A nil role is one the command does not
// play and whose flags it does not take.
type processConfig struct {
	cmd    string
	store  storeFlags
	ops    opsFlags
	engine engineFlags

	api     *apiFlags     // serve, runtime
	gateway *gatewayFlags // serve
	worker  *workerFlags  // serve, worker
	health  *healthFlags  // worker
}

func (c *processConfig) flags(fs *flag.FlagSet) {
	c.store.flags(fs)
	c.ops.flags(fs)
	c.engine.flags(fs)
	if c.api != nil {
		c.api.flags(fs)
	}
	if c.gateway != nil {
		c.gateway.flags(fs)
	}
	if c.worker != nil {
		c.worker.flags(fs)
	}
	if c.health != nil {
		c.health.flags(fs)
	}
}

func (c *processConfig) check() error {
	if c.api != nil {
		if err := c.api.check(); err != nil {
			return err
		}
	}
	if c.gateway != nil {
		return c.gateway.check()
	}
	return nil
}

// gatewayConfig is `svcflow gateway`: a gateway in front of a runtime elsewhere.
type gatewayConfig struct {
	store      storeFlags
	ops        opsFlags
	gateway    gatewayFlags
	runtimeURL string
}

func (c *gatewayConfig) check() error { return c.gateway.check() }

func (c *gatewayConfig) flags(fs *flag.FlagSet) {
	c.store.flags(fs)
	c.ops.flags(fs)
	c.gateway.flags(fs)
	fs.StringVar(&c.runtimeURL, "runtime-url", "", "the runtime's base `URL` (http://host:port) the gateway forwards runtime routes to (required)")
}

// migrateConfig is `svcflow migrate`.
type migrateConfig struct{ store storeFlags }

func (c *migrateConfig) flags(fs *flag.FlagSet) { c.store.flags(fs) }

// rotateConfig is `svcflow rotate-master-key`.
type rotateConfig struct {
	store storeFlags
	grace time.Duration
}

func (c *rotateConfig) flags(fs *flag.FlagSet) {
	c.store.flags(fs)
	fs.DurationVar(&c.grace, "grace", 2*time.Second, "how long (a Go duration) to wait for writes under the old key before the confirming pass")
}

// openapiConfig is `svcflow openapi`.
type openapiConfig struct{ version, doc string }

func (c *openapiConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.version, "version", "3.1", "the document's OpenAPI `VERSION`, 3.1 or 3.0 (Huma's downgrade, for tools that read 3.0 only)")
	fs.StringVar(&c.doc, "doc", "runtime", "which `DOCUMENT`: runtime (the runtime's routes, X-Org-Id) or integrator (every route at the gateway's address, the runtime's through it)")
}

func (c *openapiConfig) check() error {
	if c.version != "3.1" && c.version != "3.0" {
		return fmt.Errorf("--version %q: 3.1 or 3.0", c.version)
	}
	if c.doc != "runtime" && c.doc != "integrator" {
		return fmt.Errorf("--doc %q: runtime or integrator", c.doc)
	}
	return nil
}
