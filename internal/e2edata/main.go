// Command e2edata loads the browser tests' data for the exporter-table
// datasource: generated CPU profiles of one service, sent as OTLP both to
// Flamehouse's ingest and through a real OpenTelemetry Collector whose
// contrib ClickHouse exporter writes them into otel_profiles, so that the
// two datasources (schema flamehouse and schema otel) can be compared in a
// real Grafana. Both endpoints answer once the rows are committed.
//
//	go run ./internal/e2edata -clickhouse http://127.0.0.1:8123 -database otel -ingest http://127.0.0.1:4318
//
// It prints a JSON summary on stdout: the service, the profile type, the
// time range the profiles cover and their CPU time computed from the
// requests (events × period), the oracle the specs compare with.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/otelcoltest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/otlphttp"
)

// Summary is what the specs read.
type Summary struct {
	Service     string `json:"service"`
	ProfileType string `json:"profileType"`
	// From and To bound the profiles (Unix milliseconds, [From, To)).
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// CPUNanos is the CPU time of every profile sent.
	CPUNanos int64 `json:"cpuNanos"`
	Requests int   `json:"requests"`
}

func main() {
	chURL := flag.String("clickhouse", "http://127.0.0.1:8123", "ClickHouse HTTP interface the Collector's exporter writes to")
	user := flag.String("clickhouse.user", "default", "ClickHouse user")
	password := flag.String("clickhouse.password", "", "ClickHouse password")
	database := flag.String("database", "otel", "database of otel_profiles and of Flamehouse's tables")
	ingest := flag.String("ingest", "http://127.0.0.1:4318", "Flamehouse's OTLP/HTTP base URL")
	service := flag.String("service", "e2e-exporter", "service.name of the generated profiles")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	summary, err := load(context.Background(), log, *chURL, *user, *password, *database, *ingest, *service)
	if err != nil {
		log.Error("e2edata", "error", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(summary); err != nil {
		log.Error("e2edata", "error", err)
		os.Exit(1)
	}
}

// cpuType is the profile type id of the generated eBPF-style CPU profiles.
const cpuType = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

func load(ctx context.Context, log *slog.Logger, chURL, user, password, database, ingest, service string) (Summary, error) {
	bin, cached, err := otelcoltest.BuildModule(otelcoltest.ClickHouseCollector)
	if err != nil {
		return Summary{}, fmt.Errorf("build the Collector: %w", err)
	}
	log.Info("Collector ready", "binary", bin, "cached", cached)
	dir, err := os.MkdirTemp("", "e2edata-")
	if err != nil {
		return Summary{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	col, err := otelcoltest.Launch(bin, otelcoltest.Config{
		Exporters: map[string]any{"clickhouse": otelcoltest.ClickHouseExporterAt(chURL, user, password, database)},
		Pipelines: map[string]otelcoltest.Pipeline{"profiles": {Exporters: []string{"clickhouse"}}},
	}, dir)
	if err != nil {
		return Summary{}, err
	}
	defer func() {
		if err := col.Stop(); err != nil {
			log.Warn("Collector stop", "error", err)
		}
	}()

	// Two minutes of profiles of four pods, ending a minute ago: a settled
	// range inside Explore's default last hour.
	g := profilegen.New(profilegen.Config{
		Service: service, Pods: 4, Stacks: 300, Functions: 150, Locations: 500, MinDepth: 5, MaxDepth: 20,
		SamplesPerSecond: 200, ReportInterval: 5 * time.Second, TraceFraction: 0, Threads: 4, CPUs: 4, Seed: 12,
	})
	end := time.Now().Add(-time.Minute).Truncate(5 * time.Second)
	start := end.Add(-2 * time.Minute)
	var reqs []*collectorpb.ExportProfilesServiceRequest
	for t := start; t.Before(end); t = t.Add(5 * time.Second) {
		reqs = append(reqs, g.Report(t))
	}
	targets := map[string]*otlphttp.Client{
		"collector":  otlphttp.New("http://"+col.HTTPEndpoint, ""),
		"flamehouse": otlphttp.New(ingest, ""),
	}
	for _, req := range reqs {
		for name, c := range targets {
			resp, err := c.Export(ctx, req)
			if err != nil {
				return Summary{}, fmt.Errorf("export to %s: %w", name, err)
			}
			if ps := resp.GetPartialSuccess(); ps.GetRejectedProfiles() > 0 {
				return Summary{}, fmt.Errorf("%s rejected %d profiles: %s", name, ps.GetRejectedProfiles(), ps.GetErrorMessage())
			}
		}
	}
	log.Info("sent", "requests", len(reqs), "to", "Collector and Flamehouse")
	return Summary{
		Service: service, ProfileType: cpuType, From: start.UnixMilli(), To: end.UnixMilli(),
		CPUNanos: cpuNanos(reqs), Requests: len(reqs),
	}, nil
}

// cpuNanos is the CPU time the requests carry: each event of an eBPF-style
// sample (one timestamp) stands for one sampling period.
func cpuNanos(reqs []*collectorpb.ExportProfilesServiceRequest) int64 {
	var sum int64
	for _, req := range reqs {
		for _, rp := range req.GetResourceProfiles() {
			for _, sp := range rp.GetScopeProfiles() {
				for _, p := range sp.GetProfiles() {
					for _, s := range p.GetSamples() {
						sum += int64(len(s.GetTimestampsUnixNano())) * p.GetPeriod()
					}
				}
			}
		}
	}
	return sum
}
