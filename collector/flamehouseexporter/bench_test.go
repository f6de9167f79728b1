package flamehouseexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
)

// BenchmarkPushCPU measures what a push costs the Collector's CPU before
// the write, on the peer benchmark's dense request (one node's 5 s report:
// 10 pods, 5,000 events, about 1 MiB): the OTLP receiver's decoding into
// pdata, the exporter's encoding back to the wire (ProtoMarshaler), and
// Flamehouse's decode, validation and conversion, which the ingest service
// runs alone.
func BenchmarkPushCPU(b *testing.B) {
	g := profilegen.New(profilegen.DefaultConfig())
	req := g.NodeReports(time.Now().Add(-time.Minute).Truncate(5*time.Second), 10)[0]
	wire, err := proto.Marshal(req)
	require.NoError(b, err)
	var events int64
	for _, rp := range req.GetResourceProfiles() {
		for _, p := range rp.GetScopeProfiles()[0].GetProfiles() {
			for _, s := range p.GetSamples() {
				events += int64(len(s.GetTimestampsUnixNano()))
			}
		}
	}
	b.Logf("request: %d bytes, %d events", len(wire), events)
	steps := []struct {
		name string
		run  func(b *testing.B)
	}{
		{"receiver-unmarshal", func(b *testing.B) {
			for b.Loop() {
				_, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(wire)
				require.NoError(b, err)
			}
		}},
		{"exporter-marshal", func(b *testing.B) {
			pd, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(wire)
			require.NoError(b, err)
			for b.Loop() {
				_, err := (&pprofile.ProtoMarshaler{}).MarshalProfiles(pd)
				require.NoError(b, err)
			}
		}},
		{"convert", func(b *testing.B) {
			for b.Loop() {
				_, err := convert.Protobuf(wire, convert.DefaultOptions(""))
				require.NoError(b, err)
			}
		}},
	}
	for _, s := range steps {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			s.run(b)
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
