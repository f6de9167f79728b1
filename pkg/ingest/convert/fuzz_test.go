package convert

import (
	"errors"
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
		decodable := proto.Unmarshal(data, &req) == nil
		res, err := Protobuf(data, testOptions())
		var reqErr *RequestError
		switch {
		case err != nil && !errors.As(err, &reqErr):
			t.Fatalf("a request error must be a *RequestError, got %T: %v", err, err)
		case !decodable && (err == nil || reqErr.Reason != ReasonMalformed):
			t.Fatalf("a payload that protobuf rejects must be rejected as malformed, got %v", err)
		case decodable && reqErr != nil && reqErr.Reason == ReasonMalformed:
			t.Fatalf("a payload that protobuf accepts was rejected as malformed: %v", err)
		case err != nil:
			return
		}
		if res.Accepted() < 0 || res.Accepted() > res.Profiles {
			t.Fatalf("accepted %d of %d", res.Accepted(), res.Profiles)
		}
		checkBatchConsistent(t, res.Batch)
	})
}

// checkBatchConsistent: every sample's series, service symbols, stack and
// frames are in the batch, and every stack matches its id and the depth
// limit.
func checkBatchConsistent(t *testing.T, batch *model.Batch) {
	series := map[*model.Series]bool{}
	for _, s := range batch.Series {
		series[s] = true
	}
	for _, s := range batch.Samples {
		if !series[s.Meta.Series] {
			t.Fatalf("sample refers to a series that is not in the batch")
		}
		sym := batch.Symbols[model.ServiceKey{Tenant: s.Meta.Series.Tenant, Service: s.Meta.Series.Service}]
		if sym == nil {
			t.Fatalf("sample's service has no symbols")
		}
		stacks, frames := sym.ByID()
		if stacks[s.StackID] == nil {
			t.Fatalf("sample refers to a stack that is not in the batch")
		}
		ids := stacks[s.StackID].FrameIDs
		if len(ids) > testOptions().MaxStackDepth || model.StackID(ids) != s.StackID {
			t.Fatalf("stack of %d frames does not match its id or exceeds the depth limit", len(ids))
		}
		for _, id := range ids {
			if frames[id] == nil || frames[id].ID != id {
				t.Fatalf("stack refers to a frame that is not in the batch")
			}
		}
	}
}
