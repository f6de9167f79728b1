package service

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/otelcoltest"
	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// TestSelfTracingOverOTLP runs the main job with
// selfprofile.traces_otlp_endpoint at a real OpenTelemetry Collector's
// OTLP/HTTP receiver, whose contrib ClickHouse exporter writes what it
// receives into a database of its own on the main job's engine. The spans
// that arrive there are the ones in otel.otel_traces (same trace and span
// ids), each carrying pyroscope.profile.id = its span id, the attribute
// Grafana's trace to profiles reads; and CPU samples are linked to some of
// them: the path from a Tempo (or any OTLP backend) span to its flame graph.
func TestSelfTracingOverOTLP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine and a Collector; skipped under -short")
	}
	require.Equal(t, query.ProfileIDTag, selftrace.ProfileIDAttribute, "the Trace query and self-tracing name the same attribute")
	bin := otelcoltest.Build(t, otelcoltest.ClickHouseCollector)
	receiver := freeAddr(t)
	cfg := localConfig(t)
	cfg.SelfProfile.Interval = 2 * time.Second // samples within seconds
	cfg.SelfProfile.TracesOTLPEndpoint = "http://" + receiver
	ctx := context.Background()
	svc, err := Start(ctx, cfg, slog.New(slog.DiscardHandler), Everything)
	require.NoError(t, err)
	defer func() { require.NoError(t, svc.Stop(ctx)) }()
	var printed strings.Builder
	svc.Describe(&printed)
	require.Contains(t, printed.String(), "Demo traces over OTLP: http://"+receiver+"/v1/traces")

	// Spans sent before the Collector listens are lost (connection
	// refused is not retried); the profiler makes new ones every interval.
	exporter := otelcoltest.ClickHouseExporterAt("http://"+svc.HTTPAddress(), "default", "", "collected")
	col := otelcoltest.Start(t, bin, otelcoltest.Config{
		HTTPEndpoint: receiver,
		Exporters:    map[string]any{"clickhouse": exporter},
		Pipelines:    map[string]otelcoltest.Pipeline{"traces": {Exporters: []string{"clickhouse"}}},
	})
	conn := svc.Conn()
	// A span the Collector wrote, found in our table with the same ids,
	// marked for Grafana, with CPU samples linked to it.
	const q = `SELECT c.SpanName, c.SpanId, c.SpanAttributes['` + selftrace.ProfileIDAttribute + `'], o.TraceId = c.TraceId
		FROM collected.otel_traces AS c
		INNER JOIN otel.otel_traces AS o ON o.SpanId = c.SpanId
		WHERE c.SpanId IN (SELECT SpanId FROM otel.otel_profile_samples WHERE ServiceName = 'flamehouse' AND SpanId != '')
		ORDER BY c.Timestamp LIMIT 1`
	var name, spanID, mark string
	var sameTrace bool
	require.Eventually(t, func() bool {
		return conn.QueryRow(ctx, q).Scan(&name, &spanID, &mark, &sameTrace) == nil
	}, 3*time.Minute, time.Second, "a span received over OTLP with CPU samples; Collector log:\n%s", col.Logs())
	t.Logf("span %s (%s) arrived over OTLP with %s=%s", spanID, name, selftrace.ProfileIDAttribute, mark)
	require.Equal(t, spanID, mark)
	require.True(t, sameTrace, "the same trace id over OTLP and in otel_traces")

	// Every span that went both ways carries the same attributes both ways.
	var unmarked, differing uint64
	require.NoError(t, conn.QueryRow(ctx, `SELECT
			countIf(c.SpanAttributes['`+selftrace.ProfileIDAttribute+`'] != c.SpanId),
			countIf(c.SpanAttributes != o.SpanAttributes OR c.TraceId != o.TraceId OR c.ParentSpanId != o.ParentSpanId)
		FROM collected.otel_traces AS c INNER JOIN otel.otel_traces AS o ON o.SpanId = c.SpanId`).Scan(&unmarked, &differing))
	require.Zero(t, unmarked, "every span of self-tracing runs its work under selftrace.Do")
	require.Zero(t, differing)
}

// freeAddr is a loopback host:port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
