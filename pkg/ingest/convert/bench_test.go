package convert

import (
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/profilegen"
)

// BenchmarkDecodeAndConvert measures the ingest CPU work per event on
// eBPF-shaped reports: wire decoding (otlpwire), validation, stack
// resolution and row building (no ClickHouse). Goal: >= 200k samples/s per
// core.
func BenchmarkDecodeAndConvert(b *testing.B) {
	for _, shape := range []struct {
		name string
		cfg  func(*profilegen.Config)
	}{
		{"service-10k-per-s", func(*profilegen.Config) {}},
		// One node's 5 s report: 1,600 events from 40 processes, about 1k
		// stacks over 8k locations (the reference "small report").
		{"node-small-report", func(c *profilegen.Config) {
			c.SamplesPerSecond, c.Pods, c.Stacks, c.Locations, c.Functions = 320, 40, 5_000, 8_000, 3_000
		}},
	} {
		b.Run(shape.name, func(b *testing.B) {
			cfg := profilegen.DefaultConfig()
			shape.cfg(&cfg)
			g := profilegen.New(cfg)
			start := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
			payload, err := proto.Marshal(g.Report(start))
			if err != nil {
				b.Fatal(err)
			}
			opts := DefaultOptions("")
			opts.Now = func() time.Time { return start.Add(time.Minute) }
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				res, err := Protobuf(payload, opts)
				if err != nil || len(res.Rejected) > 0 {
					b.Fatal(err, res.Rejected)
				}
				res.Release() // as the pipeline does once the writer took the batch
			}
			events := float64(g.Events()) * float64(b.N)
			b.ReportMetric(events/b.Elapsed().Seconds(), "samples/s")
			b.ReportMetric(float64(len(payload))/float64(g.Events()), "bytes/sample")
		})
	}
}

// BenchmarkDecodeAndConvertClusterReports converts the node reports of
// the W-cluster workload that the end-to-end benchmark sends: 100 nodes of
// 40 pods each, 25.6k samples/s in all, one report per node and 5 s.
func BenchmarkDecodeAndConvertClusterReports(b *testing.B) {
	g := profilegen.New(profilegen.WCluster())
	start := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	var bodies [][]byte
	size := 0
	for _, req := range g.NodeReports(start, profilegen.WClusterPodsPerNode) {
		body, err := proto.Marshal(req)
		if err != nil {
			b.Fatal(err)
		}
		bodies = append(bodies, body)
		size += len(body)
	}
	opts := DefaultOptions("")
	opts.Now = func() time.Time { return start.Add(time.Minute) }
	b.SetBytes(int64(size / len(bodies)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		res, err := Protobuf(bodies[i%len(bodies)], opts)
		if err != nil || len(res.Rejected) > 0 {
			b.Fatal(err, res.Rejected)
		}
		res.Release() // as the pipeline does once the writer took the batch
		i++
	}
	events := float64(g.Events()) / float64(len(bodies))
	b.ReportMetric(events*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(size)/float64(g.Events()), "bytes/sample")
}

// BenchmarkDecodeOnly is what the generated protobuf code alone costs on
// the small report, for comparison: the converter decodes with otlpwire
// (see its BenchmarkDecode).
func BenchmarkDecodeOnly(b *testing.B) {
	cfg := profilegen.DefaultConfig()
	cfg.SamplesPerSecond, cfg.Pods, cfg.Stacks, cfg.Locations, cfg.Functions = 320, 40, 5_000, 8_000, 3_000
	g := profilegen.New(cfg)
	payload, err := proto.Marshal(g.Report(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		var req collectorpb.ExportProfilesServiceRequest
		if err := proto.Unmarshal(payload, &req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(g.Events())*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
