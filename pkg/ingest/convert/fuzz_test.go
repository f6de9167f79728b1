package convert

import (
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// FuzzConvert feeds arbitrary bytes through protobuf decoding and the
// converter. Nothing may panic, and whatever is accepted must be
// self-consistent: every sample's stack and every stack's frames are in
// the batch, and accepted plus rejected profiles add up.
func FuzzConvert(f *testing.F) {
	seed, err := proto.Marshal(ebpfRequest().Request())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Add(seed[:len(seed)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		var req collectorpb.ExportProfilesServiceRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		res, err := Convert(&req, testOptions())
		if err != nil {
			return
		}
		if res.Accepted() < 0 || res.Accepted() > res.Profiles {
			t.Fatalf("accepted %d of %d", res.Accepted(), res.Profiles)
		}
		for _, s := range res.Batch.Samples {
			sym := res.Batch.Symbols[model.ServiceKey{Tenant: s.Meta.Series.Tenant, Service: s.Meta.Series.Service}]
			if sym == nil || sym.Stacks[s.StackID] == nil {
				t.Fatalf("sample refers to a stack that is not in the batch")
			}
			for _, id := range sym.Stacks[s.StackID].FrameIDs {
				if sym.Frames[id] == nil {
					t.Fatalf("stack refers to a frame that is not in the batch")
				}
			}
		}
	})
}
