package flamehouseexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/collector/flamehouseexporter/internal/pdatawire"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
)

// BenchmarkPushCPU measures what a push costs the Collector's CPU before
// the write, on the peer benchmark's dense request (one node's 5 s report:
// 10 pods, 5,000 events, about 1 MiB): the OTLP receiver's decoding into
// pdata; the exporter's filling of the ingest's decoded form from pdata
// (pdatawire) or, where it must go the wire way, its encoding back to the
// wire (ProtoMarshaler); and Flamehouse's validation and conversion,
// from the wire (decode included: what the ingest service runs alone) and
// from pdata (pdatawire included: what the exporter runs).
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
		{"exporter-pdatawire", func(b *testing.B) {
			pd, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(wire)
			require.NoError(b, err)
			for b.Loop() {
				req, ok := pdatawire.Request(pd)
				require.True(b, ok)
				pdatawire.Release(req) // as the exporter does once converted
			}
		}},
		{"convert-wire", func(b *testing.B) {
			for b.Loop() {
				_, err := convert.Protobuf(wire, convert.DefaultOptions(""))
				require.NoError(b, err)
			}
		}},
		{"convert-pdatawire", func(b *testing.B) {
			pd, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(wire)
			require.NoError(b, err)
			for b.Loop() {
				req, ok := pdatawire.Request(pd)
				require.True(b, ok)
				_, err := convert.Decoded(req, convert.DefaultOptions(""))
				require.NoError(b, err)
				pdatawire.Release(req)
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
