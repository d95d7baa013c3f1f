package runtime

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
)

// ReadyTimeout bounds the store's answer to a readiness probe: a database that takes longer
// to read a few rows is not ready to serve requests, whatever it answers later.
const ReadyTimeout = 2 * time.Second

// Problem codes of GET /readyz.
const (
	codeStoreUnavailable  = "store_unavailable"
	codeMigrationsPending = "migrations_pending"
)

// Probe is the answer of GET /healthz and of a ready GET /readyz.
type Probe struct {
	Status string `json:"status" enum:"ok,ready" example:"ready" doc:"ok (/healthz: the process serves) or ready (/readyz: its store answers)."`
}

// RegisterProbes registers GET /healthz (liveness: the process serves; nothing else is
// asked) and GET /readyz (readiness: ready answers within ReadyTimeout) on api, as the
// operations prefix+"liveness" and prefix+"readiness". Neither takes X-Org-Id. A /readyz
// that is not ready answers 503 with a problem: migrations_pending when the schema is
// behind this build, store_unavailable otherwise; the store's own error is logged, never
// answered (it may name a host or a database).
func RegisterProbes(api huma.API, prefix string, log *slog.Logger, ready func(context.Context) error) {
	huma.Register(api, huma.Operation{
		OperationID: prefix + "liveness", Method: http.MethodGet, Path: "/healthz", Tags: []string{"Health"},
		Summary:     "Liveness probe (no X-Org-Id)",
		Description: "200 whenever the process serves HTTP. It asks nothing of the database: restart the process only when this fails.",
	}, func(context.Context, *struct{}) (*struct{ Body Probe }, error) {
		return &struct{ Body Probe }{Body: Probe{Status: "ok"}}, nil
	})
	huma.Register(api, huma.Operation{
		OperationID: prefix + "readiness", Method: http.MethodGet, Path: "/readyz", Tags: []string{"Health"},
		Summary: "Readiness probe (no X-Org-Id)",
		Description: "200 when the database answers a trivial query within " + ReadyTimeout.String() + " and has every migration of this build applied; " +
			"503 otherwise, with code store_unavailable or migrations_pending. Send traffic only while this answers 200.",
		Errors: []int{http.StatusServiceUnavailable},
	}, func(ctx context.Context, _ *struct{}) (*struct{ Body Probe }, error) {
		ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
		defer cancel()
		if err := ready(ctx); err != nil {
			log.WarnContext(ctx, "not ready", "err", err)
			return nil, notReady(err)
		}
		return &struct{ Body Probe }{Body: Probe{Status: "ready"}}, nil
	})
}

// notReady is the 503 of a store that is not ready: migrations_pending when its schema is
// behind (knownProblem), store_unavailable for any other error, whatever it is: a probe
// asks whether to send traffic, and no error of the store says yes.
func notReady(err error) *Problem {
	if p := knownProblem(err, failure{}); p != nil && p.Status == http.StatusServiceUnavailable {
		return p
	}
	return newProblem(http.StatusServiceUnavailable, codeStoreUnavailable,
		"the database did not answer a trivial query (within "+ReadyTimeout.String()+"): the cause is logged")
}

// ProbeHandler serves GET /healthz and GET /readyz alone (RegisterProbes), for a process
// that serves no API: `svcflow worker --health-addr`. It publishes no OpenAPI document.
func ProbeHandler(log *slog.Logger, version string, ready func(context.Context) error) http.Handler {
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		writeProblem(w, newProblem(http.StatusNotFound, codeNotFound, "this listener serves /healthz and /readyz only"))
	})
	cfg := huma.DefaultConfig("svcflow worker", version)
	cfg.CreateHooks = nil
	cfg.OpenAPIPath, cfg.DocsPath, cfg.SchemasPath = "", "", ""
	RegisterProbes(humachi.New(r, cfg), "worker-", log, ready)
	return r
}
