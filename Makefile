# svcflow: `make help` lists the targets.
SHELL := /bin/bash
PG_DSN ?= postgres://postgres@127.0.0.1:5432/test?sslmode=disable
GO ?= go

.PHONY: help run test test-short vet fuzz openapi client client-ts test-ts ts-deps lint-openapi build bench bench-runs bench-runs-traced bench-chain bench-runs-pg bench-queue bench-match bench-http bench-io bench-deliveries bench-pauses bench-agents bench-gateway bench-tables bench-foreach bench-match-http bench-match-million bench-fair bench-waits bench-runs-list bench-vs-temporal e2e load chaos

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-14s %s\n", $$1, $$2}'

run: ## run the service on embedded SQLite (./svcflow.db), runtime on 127.0.0.1:8080
	$(GO) run ./hosts/svcflow serve

test: ## the test suite CI runs: vet, gofmt, race tests (PostgreSQL, MariaDB too when SVC_TEST_POSTGRES_DSN, SVC_TEST_MYSQL_DSN are set)
	bash .ci/test

test-short: ## unit tests without the race detector, SQLite only
	$(GO) test ./...

vet: ## go vet and gofmt
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)

# The hosted page's render figures (e2e/run.mjs, step perf): cold and blank loads each, warm twice
# as many. Four in CI (13 s of its 26); `make e2e E2E_PERF_ROUNDS=16` for a figure to quote.
E2E_PERF_ROUNDS ?= 4
e2e: ## headless Chromium against svcflow serve (installs Debian's chromium and e2e/'s playwright-core when missing); screenshots in e2e/artifacts
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)
	@test -d e2e/node_modules/playwright-core || (cd e2e && npm ci --no-audit --no-fund)
	SVC_E2E=1 SVC_E2E_PERF_ROUNDS=$(E2E_PERF_ROUNDS) $(GO) test -run TestBrowserEndToEnd -count=1 -v ./hosts/svcflow/

# The PostgreSQL scenario creates and drops its own database on $SVC_TEST_POSTGRES_DSN's server
# (default postgres://postgres@127.0.0.1:5432/postgres) and restarts the machine's cluster once.
CHAOS ?= all
chaos: ## 200 runs while processes are SIGKILLed, then check nothing was lost or doubled: PostgreSQL (3 workers killed, PostgreSQL restarted once) and SQLite (serve killed); CHAOS=postgres or sqlite for one
	$(GO) run ./hosts/chaos -scenario $(CHAOS)

FUZZTIME ?= 30s
fuzz: ## every fuzz target (func Fuzz... in a _test.go) for FUZZTIME (default 30s), one after another; CI's .ci/fuzz runs them all at once
	FUZZTIME=$(FUZZTIME) GO=$(GO) .ci/fuzz --serial

openapi: ## regenerate openapi/openapi.yaml (3.1), openapi-3.0.yaml (Huma's 3.0 downgrade) and the integrator's integrator.yaml, integrator-3.0.yaml from the code
	$(GO) run ./hosts/svcflow openapi > openapi/openapi.yaml
	$(GO) run ./hosts/svcflow openapi --version 3.0 > openapi/openapi-3.0.yaml
	$(GO) run ./hosts/svcflow openapi --doc integrator > openapi/integrator.yaml
	$(GO) run ./hosts/svcflow openapi --doc integrator --version 3.0 > openapi/integrator-3.0.yaml

lint-openapi: ## lint openapi/'s four documents (runtime, integrator; 3.1 and 3.0) with Redocly CLI (openapi/redocly.yaml; npm ci in openapi/ when needed)
	bash .ci/lint-openapi

client: ## regenerate the Go clients: examples/client/client.gen.go (runtime, openapi/openapi-3.0.yaml) and examples/client/integrator/integrator.gen.go (gateway, openapi/integrator-3.0.yaml); oapi-codegen pinned in examples/client/tools.mod
	$(GO) generate ./examples/client/...

# The TypeScript client's dependencies, pinned by clients/typescript/package-lock.json: `npm ci`
# when they are missing or the lock file is newer than the install.
TS := clients/typescript
ts-deps:
	@if [ ! -x $(TS)/node_modules/.bin/tsc ] || [ $(TS)/package-lock.json -nt $(TS)/node_modules/.package-lock.json ]; then \
	  cd $(TS) && npm ci --no-audit --no-fund; fi

client-ts: ts-deps ## regenerate the TypeScript client's types clients/typescript/src/integrator.ts from openapi/integrator.yaml (openapi-typescript, pinned)
	cd $(TS) && npm run --silent generate

test-ts: ts-deps ## the TypeScript client's tests (node --test) against the real binary (go build), and its types against openapi/integrator.yaml
	cd $(TS) && npm test

build: ## build ./bin/svcflow
	$(GO) build -o bin/svcflow ./hosts/svcflow

bench: bench-runs bench-chain bench-http bench-io bench-deliveries bench-pauses bench-agents bench-gateway bench-runs-pg bench-queue bench-match bench-tables bench-foreach ## every benchmark of docs/performance.md

bench-runs: ## runs/s, CPU a run (process rusage) and per-step overhead through the real worker on SQLite
	$(GO) test -run '^$$' -bench 'BenchmarkRuns/sqlite' -benchtime 3000x ./hosts/worker/

bench-runs-traced: ## bench-runs with tracing off and on (every span exported to memory), the same minute
	$(GO) test -run '^$$' -bench 'BenchmarkRuns/(sqlite|traced)$$' -benchtime 3000x ./hosts/worker/
	$(GO) test -run '^$$' -bench 'BenchmarkStepSpans' -benchmem ./engine/core/

bench-chain: ## runs/s of three quick steps (table writes) committing in one transaction and in one each, on SQLite and PostgreSQL
	SVC_TEST_POSTGRES_DSN="$${SVC_TEST_POSTGRES_DSN-$(PG_DSN)}" $(GO) test -run '^$$' -bench 'BenchmarkChainedSteps' -benchtime 3000x ./hosts/worker/

bench-io: ## 200 runs whose http action waits 1 s beside 1,000 fast runs: fast runs/s kept, slow runs' end
	$(GO) test -run '^$$' -bench 'BenchmarkSlowCallsBesideFastRuns' -benchtime 1x ./hosts/worker/

bench-deliveries: ## webhook deliveries/s to a local receiver and event-to-first-attempt p50/p99 (paced 1,000/s and burst)
	$(GO) test -run '^$$' -bench 'BenchmarkDeliveries' -benchtime 1x ./hosts/worker/

bench-pauses: ## 10,000 runs paused at a form: goroutines held, and all their expiries due at once
	$(GO) test -run '^$$' -bench 'BenchmarkPauseExpiry' -benchtime 1x ./hosts/worker/

bench-agents: ## an agent iteration's own cost on SQLite (the model answering at once), and 1,000 paused agents' goroutines
	$(GO) test -run '^$$' -bench 'BenchmarkLoopIteration' -benchtime 200x ./agent/
	$(GO) test -run '^$$' -bench 'BenchmarkAgentIteration|BenchmarkPausedAgents' -benchtime 10x ./engine/agents/

bench-gateway: ## the gateway's own cost of a runtime call (in process), and requests/s over loopback with 64 clients
	$(GO) test -run '^$$' -bench 'BenchmarkGatewayOverhead' -benchtime 20000x ./hosts/gateway/
	$(GO) test -run '^$$' -bench 'BenchmarkGatewayLoopback' -benchtime 64000x ./hosts/gateway/

bench-runs-pg: ## runs/s on PostgreSQL with 1, 2 and 4 worker processes, the statements a run sends and the PostgreSQL CPU a run; the statements of one worker by kind
	SVC_TEST_POSTGRES_DSN="$${SVC_TEST_POSTGRES_DSN-$(PG_DSN)}" $(GO) test -run '^$$' -bench 'BenchmarkRunsPostgresProcesses' -benchtime 3000x ./hosts/worker/
	SVC_TEST_POSTGRES_DSN="$${SVC_TEST_POSTGRES_DSN-$(PG_DSN)}" $(GO) test -run '^$$' -bench 'BenchmarkStatementsPerStep' -benchtime 500x -v ./hosts/worker/ | grep -v '^=== '

bench-tables: ## a keyed read on a 1,000,000-row custom table (SQLite, PostgreSQL): p50, p99, index build; the two index designs compared
	SVC_TEST_POSTGRES_DSN="$${SVC_TEST_POSTGRES_DSN-$(PG_DSN)}" $(GO) test -run '^$$' -bench 'BenchmarkKeyedRead' -benchtime 5000x -timeout 30m ./engine/store/
	$(GO) test -run '^$$' -bench 'BenchmarkIndexDesigns' -benchtime 1x -timeout 30m ./engine/store/

bench-runs-list: ## GET /runs?key= among 1,000,000 runs, and the console's first page (limit 50, with and without status filters, workflow names) among 100,000: p50, p99 on SQLite (file) and PostgreSQL
	SVC_TEST_POSTGRES_DSN="$${SVC_TEST_POSTGRES_DSN-$(PG_DSN)}" $(GO) test -run '^$$' -bench 'BenchmarkRunsByKey' -benchtime 2000x -timeout 60m -v ./engine/store/ | grep -v '^=== '
	SVC_TEST_POSTGRES_DSN="$${SVC_TEST_POSTGRES_DSN-$(PG_DSN)}" $(GO) test -run '^$$' -bench 'BenchmarkRunsFirstPage' -benchtime 200x -timeout 30m ./hosts/runtime/

bench-foreach: ## a foreach of 50,000 custom-table upserts through the worker, on SQLite and PostgreSQL
	SVC_TEST_POSTGRES_DSN="$${SVC_TEST_POSTGRES_DSN-$(PG_DSN)}" $(GO) test -run '^$$' -bench 'BenchmarkForeachWrites' -benchtime 1x -timeout 20m ./hosts/worker/

bench-fair: ## a burst's Execute-to-completed p50/p99 (400 runs, 40 clients) and another organization's run beside a 1,000-run backlog, SQLite and PostgreSQL
	SVC_TEST_POSTGRES_DSN="$${SVC_TEST_POSTGRES_DSN-$(PG_DSN)}" $(GO) test -run '^$$' -bench 'BenchmarkBurst|BenchmarkBacklog' -benchtime 1x ./hosts/worker/

bench-waits: ## what the tests no longer time: retry waits (model and outbound clients), a status wait woken by a commit, the probes
	$(GO) test -run '^$$' -bench 'BenchmarkChatRetryWaits' -benchtime 3x ./agent/llm/
	$(GO) test -run '^$$' -bench 'BenchmarkRetryWaits' -benchtime 3x ./engine/outbound/
	SVC_TEST_POSTGRES_DSN="$${SVC_TEST_POSTGRES_DSN-$(PG_DSN)}" $(GO) test -run '^$$' -bench 'BenchmarkStatusWait|BenchmarkProbes' -benchtime 50x ./hosts/runtime/

bench-queue: ## 10,000 queued runs: goroutines and heap held while they wait
	$(GO) test -run '^$$' -bench 'BenchmarkQueuedRuns' -benchtime 1x ./hosts/worker/

# bench-runs first: the in-process figure the HTTP one is compared with, taken the same minute.
bench-http: bench-runs ## runs/s and run latency p50-p99 over HTTP: the real binary, 100 clients (wait, poll, form, fair modes)
	$(GO) run ./hosts/benchhttp

# The svcflow side is benchhttp -mode wait; the Temporal side is hosts/benchhttp/temporal, a module of its own (the
# Go SDK stays out of svcflow's go.mod), which starts `temporal server start-dev` per round. TEMPORAL names the CLI
# (go install github.com/temporalio/cli/cmd/temporal@v1.5.1); without one, svcflow is set beside issue 35's 38.5 runs/s.
TEMPORAL ?= temporal
TEMPORAL_ACTIVITIES ?= local
# 10 pollers of each kind ran 64-76 runs/s here where the SDK's default 2 ran 44-58 (32: 56).
TEMPORAL_POLLERS ?= 10
ROUNDS ?= 3
bench-vs-temporal: ## 3-step runs over HTTP (100 clients, 3,000 runs, 3,000 keys) beside the Temporal dev server with a Go SDK worker, ROUNDS rounds alternating: runs/s, p50, p99, CPU a run, the ratio
	$(GO) build -o bin/svcflow ./hosts/svcflow
	$(GO) build -o bin/benchhttp ./hosts/benchhttp
	cd hosts/benchhttp/temporal && $(GO) run . -vs -temporal '$(TEMPORAL)' -activities $(TEMPORAL_ACTIVITIES) -pollers $(TEMPORAL_POLLERS) -rounds $(ROUNDS) \
	  -svcflow '$(CURDIR)/bin/benchhttp -binary $(CURDIR)/bin/svcflow -mode wait -clients 100 -runs 3000 -keys 3000'

# make load: issue 21's figures from outside, each phase on fresh processes (hosts/benchhttp -mode load). PostgreSQL:
# SVC_TEST_POSTGRES_DSN's server, else the local one. LOAD_FLAGS='-save-baseline -baseline-note "quiet machine"'
# replaces docs/load-baseline.json; LOAD_FLAGS=-fail-on-regression exits 1 on a REGRESSION.
LOAD_FLAGS ?=
load: ## runs/s, run and step p50/p99 on SQLite and on PostgreSQL with 1, 2, 4 workers; webhook deliveries/s; gateway req/s; beside docs/load-baseline.json
	$(GO) run ./hosts/benchhttp -mode load -runs 3000 -hook-runs 2000 -gateway-requests 40000 $(LOAD_FLAGS)

bench-match: ## match quality and speed: precision, recall, records/s and peak memory on a seeded noisy set
	$(GO) run ./match/cmd/benchmatch

MATCH_N ?= 50000
# python3-pandas (apt) is /usr/bin/python3's: a python3 earlier on PATH (pyenv) may not have it.
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
bench-match-http: ## the matcher end to end over HTTP (inline JSON, doc: CSV), its whole result read as NDJSON, beside pandas on the same files (python3-pandas)
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	$(GO) run ./match/cmd/benchmatch -n $(MATCH_N) -write "$$d" && \
	$(GO) run ./hosts/benchhttp -mode match -data "$$d" && \
	for i in 1 2 3; do $(PYTHON) hosts/benchhttp/pandas_match.py "$$d"; $(PYTHON) hosts/benchhttp/pandas_match.py "$$d" --csv; done

bench-match-million: ## 1,000,000 x 1,028,616 from two CSV documents over HTTP: time, the server's peak memory (documents in the database, and as files), pandas on the same files
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	$(GO) run ./match/cmd/benchmatch -n 1000000 -write "$$d" && \
	$(GO) build -o "$$d/svcflow" ./hosts/svcflow && \
	$(GO) run ./hosts/benchhttp -mode match -data "$$d" -variants doc -repeat 2 -binary "$$d/svcflow" && \
	$(GO) run ./hosts/benchhttp -mode match -data "$$d" -variants doc -repeat 2 -doc-files -binary "$$d/svcflow" && \
	$(PYTHON) hosts/benchhttp/pandas_match.py "$$d" --csv
