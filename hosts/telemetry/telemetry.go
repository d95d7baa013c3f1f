// Package telemetry builds the hosts' OpenTelemetry tracer provider: the SDK with an OTLP
// exporter over HTTP/protobuf, off unless an endpoint is configured (the standard
// OTEL_EXPORTER_OTLP_* variables, or svcflow's --otlp-endpoint). Only hosts import the
// SDK and the exporter; the engine makes its spans through the API (engine/tracing).
package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/svcflow/svcflow/engine/tracing"
)

// The environment variables read here (OpenTelemetry's own names). The exporter reads the
// rest of OTEL_EXPORTER_OTLP_* itself (headers, timeout, compression, certificates), and
// the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSampler        = "OTEL_TRACES_SAMPLER"
	EnvSamplerArg     = "OTEL_TRACES_SAMPLER_ARG"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
)

// Options configure Tracing.
type Options struct {
	// Endpoint is --otlp-endpoint: the collector's OTLP/HTTP base URL
	// (http://localhost:4318, spans go to /v1/traces); it wins over the environment.
	Endpoint string
	// Getenv reads the environment (os.Getenv).
	Getenv func(string) string
	// Version is the release (service.version); Command the svcflow command running
	// (svcflow.command: serve, runtime, worker, gateway).
	Version, Command string
}

// Tracing is the host's tracer provider, or nothing when tracing is off.
type Tracing struct {
	// Provider is nil when tracing is off: no exporter, no SDK, no span.
	Provider *sdktrace.TracerProvider
	// URL is where spans are sent (without a password it may hold).
	URL string
}

// Shutdown sends the spans not yet sent and stops the exporter; nothing when off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.Provider == nil {
		return nil
	}
	return t.Provider.Shutdown(ctx)
}

// New returns the host's tracing: off (a Tracing without a provider) unless an endpoint is
// given, by o.Endpoint, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT;
// off too when OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
func New(ctx context.Context, o Options) (*Tracing, error) {
	u, err := endpointURL(o)
	if err != nil || u == "" {
		return &Tracing{}, err
	}
	sampler, err := samplerFrom(o.Getenv)
	if err != nil {
		return &Tracing{}, err
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u))
	if err != nil {
		return &Tracing{}, fmt.Errorf("OTLP exporter: %w", err)
	}
	// The defaults first: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override them.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "svcflow"), attribute.String("service.version", o.Version),
			attribute.String("svcflow.command", o.Command)),
		resource.WithTelemetrySDK(), resource.WithHost(), resource.WithFromEnv())
	if err != nil {
		return &Tracing{}, fmt.Errorf("tracing resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithSampler(sampler),
		sdktrace.WithIDGenerator(tracing.IDGenerator{}))
	shown, _ := url.Parse(u) // checked above
	return &Tracing{Provider: tp, URL: shownURL(shown)}, nil
}

// endpointURL is where spans go: "" when tracing is off.
func endpointURL(o Options) (string, error) {
	if strings.EqualFold(o.Getenv(EnvSDKDisabled), "true") || o.Getenv(EnvTracesExporter) == "none" {
		return "", nil
	}
	if exp := o.Getenv(EnvTracesExporter); exp != "" && exp != "otlp" {
		return "", fmt.Errorf("%s=%s: svcflow exports traces over OTLP only (otlp or none)", EnvTracesExporter, exp)
	}
	base, name := o.Endpoint, "--otlp-endpoint"
	if base == "" {
		if v := o.Getenv(EnvTracesEndpoint); v != "" {
			// The traces endpoint is the full URL, used as it is.
			return checkURL(EnvTracesEndpoint, v)
		}
		base, name = o.Getenv(EnvEndpoint), EnvEndpoint
	}
	if base == "" {
		return "", nil
	}
	u, err := checkURL(name, base)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(u, "/") + "/v1/traces", nil
}

func checkURL(name, v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		shown := "(not a URL)"
		if err == nil {
			shown = shownURL(u)
		}
		return "", fmt.Errorf("%s %s: an http(s) URL, such as http://localhost:4318", name, shown)
	}
	return v, nil
}

// shownURL is u as logs and errors show it: no user, no password, no query (a collector
// may take a token in either).
func shownURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.Fragment = nil, "", ""
	return c.String()
}

// samplerFrom is OTEL_TRACES_SAMPLER's sampler (default: every span). A run's spans hang
// under its derived root, which reaches the SDK as a sampled remote parent: the sampler
// decides them on their trace id as it decides a root, so whole runs are kept or dropped,
// and every process decides a run alike (the trace id is the run's). The parentbased_*
// names and the plain ones are therefore the same here.
func samplerFrom(getenv func(string) string) (sdktrace.Sampler, error) {
	var base sdktrace.Sampler
	switch name := getenv(EnvSampler); name {
	case "", "always_on", "parentbased_always_on":
		base = sdktrace.AlwaysSample()
	case "always_off", "parentbased_always_off":
		base = sdktrace.NeverSample()
	case "traceidratio", "parentbased_traceidratio":
		ratio := 1.0
		if arg := getenv(EnvSamplerArg); arg != "" {
			r, err := strconv.ParseFloat(arg, 64)
			if err != nil || r < 0 || r > 1 {
				return nil, fmt.Errorf("%s=%q: a ratio between 0 and 1", EnvSamplerArg, arg)
			}
			ratio = r
		}
		base = sdktrace.TraceIDRatioBased(ratio)
	default:
		return nil, fmt.Errorf("%s=%s: always_on, always_off, traceidratio (or their parentbased_ forms)", EnvSampler, name)
	}
	return sdktrace.ParentBased(base, sdktrace.WithRemoteParentSampled(base), sdktrace.WithRemoteParentNotSampled(base)), nil
}
