package selftrace

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// OTLPTracesPath is where an OTLP/HTTP endpoint takes traces, below its
// base URL.
const OTLPTracesPath = "/v1/traces"

// ValidateOTLPEndpoint checks the base URL of an OTLP/HTTP traces endpoint:
// http or https, a host, no query or fragment. The path, if any, is the
// prefix the endpoint is served under.
func ValidateOTLPEndpoint(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	var errs error
	if u.Scheme != "http" && u.Scheme != "https" {
		errs = errors.Join(errs, fmt.Errorf("scheme must be http or https, got %q", u.Scheme))
	}
	if u.Host == "" {
		errs = errors.Join(errs, errors.New("no host"))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		errs = errors.Join(errs, errors.New("no query or fragment allowed"))
	}
	return errs
}

// OTLPTracesURL is the URL spans are POSTed to for an endpoint's base URL.
func OTLPTracesURL(base string) string { return strings.TrimSuffix(base, "/") + OTLPTracesPath }

// NewOTLPExporter returns an exporter that sends spans over OTLP/HTTP
// (protobuf, gzip) to base + OTLPTracesPath, e.g. a Tempo's or a
// Collector's receiver at http://127.0.0.1:4318. Failed exports are
// retried by the SDK's exporter for up to a minute, then reported to the
// OpenTelemetry error handler; nothing blocks the traced work.
func NewOTLPExporter(ctx context.Context, base string) (sdktrace.SpanExporter, error) {
	if err := ValidateOTLPEndpoint(base); err != nil {
		return nil, fmt.Errorf("OTLP traces endpoint %q: %w", base, err)
	}
	exp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(OTLPTracesURL(base)),
		otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	if err != nil {
		return nil, fmt.Errorf("OTLP traces exporter to %q: %w", base, err)
	}
	return exp, nil
}
