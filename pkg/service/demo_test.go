package service

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/query"
)

// TestDemoOutOfTheBox starts the main job with the default settings (on a
// temporary data directory and free ports) and measures how long the demo
// takes to hold, read through the datasource's query engine:
//
//   - CPU and heap flame graphs of service flamehouse are not empty;
//   - the Spans query ranks at least one span;
//   - a ranked span is in otel_traces (the Trace query of its trace shows
//     it) and its own flame graph (spanSelector) is not empty.
//
// The demo is meant to hold within 60 s; the test waits up to 3 minutes
// (the machine may be busy) and logs the time it took.
func TestDemoOutOfTheBox(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine; skipped under -short")
	}
	cfg := localConfig(t)
	ctx := context.Background()
	start := time.Now()
	svc, err := Start(ctx, cfg, slog.New(slog.DiscardHandler), Everything)
	require.NoError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			_ = svc.Stop(ctx)
		}
	}()
	engine := &query.Engine{Conn: svc.Conn(), Tables: cfg.Schema}

	var last string
	deadline := start.Add(3 * time.Minute)
	for {
		holds, why, err := demoHolds(ctx, engine, start)
		require.NoError(t, err)
		if holds {
			t.Logf("the demo holds %.1f s after start: %s", time.Since(start).Seconds(), why)
			break
		}
		if why != last {
			t.Logf("%.1f s: %s", time.Since(start).Seconds(), why)
			last = why
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo does not hold %s after start: %s", time.Since(start).Round(time.Second), why)
		}
		time.Sleep(2 * time.Second)
	}
	stopped = true
	require.NoError(t, svc.Stop(ctx), "clean stop")
}

const (
	cpuType  = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	heapType = "memory:inuse_space:bytes:space:bytes"
	demoSel  = `{service_name="flamehouse"}`
)

// demoHolds checks the demo once; why says what holds or what is missing.
func demoHolds(ctx context.Context, e *query.Engine, start time.Time) (holds bool, why string, err error) {
	from, to := start.Add(-time.Minute), time.Now().Add(time.Minute)
	for _, typ := range []string{cpuType, heapType} {
		total, err := flameTotal(ctx, e, from, to, map[string]any{"profileTypeId": typ, "labelSelector": demoSel})
		if err != nil || total <= 0 {
			return false, "no " + typ + " flame graph of service flamehouse yet", err
		}
	}
	frames, err := run(ctx, e, from, to, map[string]any{"queryType": "spans", "profileTypeId": cpuType, "labelSelector": demoSel, "limit": 50})
	if err != nil {
		return false, "", err
	}
	spans := frames[0]
	if spans.Rows() == 0 {
		return false, "flame graphs, but the Spans query ranks no span yet", nil
	}
	for i := range spans.Rows() {
		traceID, spanID := cell[string](spans, "traceID", i), cell[string](spans, "spanID", i)
		trace, err := run(ctx, e, from, to, map[string]any{"queryType": "traces", "traceId": traceID, "profileTypeId": cpuType})
		if err != nil {
			return false, "", err
		}
		if !slices.Contains(column[string](trace[0], "spanID"), spanID) {
			continue // not written yet
		}
		total, err := flameTotal(ctx, e, from, to, map[string]any{"profileTypeId": cpuType, "labelSelector": demoSel, "spanSelector": []string{spanID}})
		if err != nil {
			return false, "", err
		}
		if total > 0 {
			return true, fmt.Sprintf("%d spans ranked; span %s (%s) of trace %s is in otel_traces with %s of CPU samples",
				spans.Rows(), spanID, cell[string](spans, "operationName", i), traceID, time.Duration(total)), nil
		}
	}
	return false, fmt.Sprintf("%d spans ranked, none of them in otel_traces with a flame graph yet", spans.Rows()), nil
}

// run runs one query, as the datasource's QueryData does, over [from, to).
func run(ctx context.Context, e *query.Engine, from, to time.Time, q map[string]any) (data.Frames, error) {
	raw, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	r, err := query.ParseRequest(raw, from, to, 15*time.Second, query.Options{SpanPadding: time.Minute})
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", raw, err)
	}
	frames, err := e.Run(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", raw, err)
	}
	return frames, nil
}

// flameTotal is a profile query's root total (0 for an empty flame graph).
func flameTotal(ctx context.Context, e *query.Engine, from, to time.Time, q map[string]any) (int64, error) {
	q["queryType"] = "profile"
	frames, err := run(ctx, e, from, to, q)
	if err != nil || frames[0].Rows() == 0 {
		return 0, err
	}
	return cell[int64](frames[0], "value", 0), nil
}

func column[T any](f *data.Frame, name string) []T {
	field, _ := f.FieldByName(name)
	if field == nil {
		return nil
	}
	out := make([]T, field.Len())
	for i := range out {
		out[i], _ = field.At(i).(T)
	}
	return out
}

func cell[T any](f *data.Frame, name string, row int) T {
	var zero T
	field, _ := f.FieldByName(name)
	if field == nil || row >= field.Len() {
		return zero
	}
	v, _ := field.At(row).(T)
	return v
}

// TestSelfTracingOff: with selfprofile.traces=false the main job creates no
// traces table (the self-profiles still arrive).
func TestSelfTracingOff(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine; skipped under -short")
	}
	cfg := localConfig(t)
	cfg.SelfProfile.Traces = false
	ctx := context.Background()
	svc, err := Start(ctx, cfg, slog.New(slog.DiscardHandler), Everything)
	require.NoError(t, err)
	defer func() { require.NoError(t, svc.Stop(ctx)) }()
	require.Nil(t, svc.tracer)
	var printed strings.Builder
	svc.Describe(&printed)
	require.NotContains(t, printed.String(), "Demo traces")
	require.Eventually(t, func() bool {
		var n uint64
		return svc.Conn().QueryRow(ctx, "SELECT count() FROM otel.otel_profile_samples WHERE ServiceName = 'flamehouse'").Scan(&n) == nil && n > 0
	}, 2*time.Minute, time.Second, "the heap profile sent at start arrives")
	var tables uint64
	require.NoError(t, svc.Conn().QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = 'otel' AND name LIKE 'otel_traces%'").Scan(&tables))
	require.Zero(t, tables)
}

// localConfig is the default configuration on a temporary data directory
// and free loopback ports.
func localConfig(t *testing.T) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Embedded.DataDir, cfg.Embedded.ListenAddress = t.TempDir(), "127.0.0.1:0"
	cfg.Ingest.Receiver.GRPCListenAddress, cfg.Ingest.Receiver.HTTPListenAddress = "127.0.0.1:0", "127.0.0.1:0"
	cfg.PyroscopeAPI.ListenAddress = "127.0.0.1:0"
	return cfg
}
