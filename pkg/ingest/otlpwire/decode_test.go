package otlpwire

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/profilegen"
)

// smallConfig is a node agent's small report.
func smallConfig() profilegen.Config {
	cfg := profilegen.DefaultConfig()
	cfg.SamplesPerSecond, cfg.Pods, cfg.Stacks, cfg.Locations, cfg.Functions = 320, 40, 5000, 8000, 3000
	return cfg
}

var reportStart = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func TestDecodeRoundTrip(t *testing.T) {
	tiny := smallConfig()
	tiny.SamplesPerSecond, tiny.Pods, tiny.Stacks = 20, 3, 200
	tests := []struct {
		name string
		req  *collectorpb.ExportProfilesServiceRequest
	}{
		{"empty", &collectorpb.ExportProfilesServiceRequest{}},
		{"every field", fullRequest()},
		{"profilegen node-small-report", profilegen.New(smallConfig()).Report(reportStart)},
		{"profilegen tiny", profilegen.New(tiny).Report(reportStart)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload, err := proto.Marshal(tt.req)
			require.NoError(t, err)
			got := requireSameAsProto(t, payload)
			require.Equal(t, normalize(fromProto(tt.req)), normalize(got), "the content of the original message")
			require.False(t, got.Unknown)

			// Strings and bytes alias the payload.
			for _, s := range got.Dictionary.Strings {
				if s != "" {
					requireAliases(t, payload, unsafe.StringData(s))
				}
			}
			for _, l := range got.Dictionary.Links {
				if len(l.TraceID) > 0 {
					requireAliases(t, payload, &l.TraceID[0])
				}
			}
		})
	}
}

func requireAliases(t *testing.T, payload []byte, p *byte) {
	t.Helper()
	start := uintptr(unsafe.Pointer(&payload[0]))
	require.True(t, uintptr(unsafe.Pointer(p)) >= start && uintptr(unsafe.Pointer(p)) < start+uintptr(len(payload)), "aliases the payload")
}

// TestDecodeAllocations checks that allocations do not grow with samples or
// table entries, and that the tables are allocated at their exact size.
func TestDecodeAllocations(t *testing.T) {
	tests := []struct {
		name string
		cfg  profilegen.Config
	}{
		{"node-small-report", smallConfig()}, // the 10k/s service report is measured by BenchmarkDecode
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload, err := proto.Marshal(profilegen.New(tt.cfg).Report(reportStart))
			require.NoError(t, err)
			allocs := testing.AllocsPerRun(3, func() {
				_, err := Decode(payload)
				require.NoError(t, err)
			})
			// At most: the Request, 4 shared arrays, 7 tables, the lists of
			// resources, scopes, profiles, samples, resource and scope
			// attributes, and a buffer for profile attributes.
			require.LessOrEqual(t, allocs, 19.0)

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			r, err := Decode(payload)
			runtime.ReadMemStats(&after)
			require.NoError(t, err)
			allocated := after.TotalAlloc - before.TotalAlloc
			// Size classes and page rounding aside, nothing is allocated
			// beyond what the Request holds: no table or array grows past
			// its counted size.
			minimal := minimalSize(r)
			require.LessOrEqual(t, allocated, minimal+minimal/16)
			t.Logf("payload %d B, allocated %d B (%.2fx), at least needed %d B", len(payload), allocated, float64(allocated)/float64(len(payload)), minimal)
		})
	}
}

// minimalSize is the memory the Request's tables and arrays need at least.
func minimalSize(r *Request) uint64 {
	size := func(n int, elem uintptr) uint64 { return uint64(n) * uint64(elem) }
	d := &r.Dictionary
	total := size(len(r.Int32s), 4) + size(len(r.Int64s), 8) + size(len(r.Uint64s), 8) + size(len(r.Lines), unsafe.Sizeof(Line{})) +
		size(len(d.Mappings), unsafe.Sizeof(Mapping{})) + size(len(d.Locations), unsafe.Sizeof(Location{})) +
		size(len(d.Functions), unsafe.Sizeof(Function{})) + size(len(d.Links), unsafe.Sizeof(Link{})) +
		size(len(d.Strings), unsafe.Sizeof("")) + size(len(d.Attributes), unsafe.Sizeof(KeyValueAndUnit{})) +
		size(len(d.Stacks), unsafe.Sizeof(Stack{})) + size(len(r.Resources), unsafe.Sizeof(ResourceProfiles{})) +
		uint64(unsafe.Sizeof(Request{}))
	for _, rp := range r.Resources {
		total += size(len(rp.Resource.Attributes), unsafe.Sizeof(KeyValue{})) + size(len(rp.Scopes), unsafe.Sizeof(ScopeProfiles{}))
		for _, sp := range rp.Scopes {
			total += size(len(sp.Scope.Attributes), unsafe.Sizeof(KeyValue{})) + size(len(sp.Profiles), unsafe.Sizeof(Profile{}))
			for _, p := range sp.Profiles {
				total += size(len(p.Samples), unsafe.Sizeof(Sample{}))
			}
		}
	}
	return total
}
