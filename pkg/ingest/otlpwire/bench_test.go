package otlpwire

import (
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/profilegen"
)

// BenchmarkDecode compares Decode with proto.Unmarshal into the generated
// types on profilegen reports: a service at 10k samples/s (DefaultConfig)
// and a node agent's small report.
func BenchmarkDecode(b *testing.B) {
	shapes := []struct {
		name string
		cfg  profilegen.Config
	}{
		{"service-10k-per-s", profilegen.DefaultConfig()},
		{"node-small-report", smallConfig()},
	}
	for _, shape := range shapes {
		g := profilegen.New(shape.cfg)
		payload, err := proto.Marshal(g.Report(reportStart))
		if err != nil {
			b.Fatal(err)
		}
		events := float64(g.Events())
		run := func(b *testing.B, decode func() error) {
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				if err := decode(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(events*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		}
		b.Run("otlpwire/"+shape.name, func(b *testing.B) {
			run(b, func() error {
				_, err := Decode(payload)
				return err
			})
		})
		b.Run("proto/"+shape.name, func(b *testing.B) {
			run(b, func() error {
				var msg collectorpb.ExportProfilesServiceRequest
				return proto.Unmarshal(payload, &msg)
			})
		})
	}
}
