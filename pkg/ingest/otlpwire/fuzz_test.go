package otlpwire

import (
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/profilegen"
)

// FuzzDecode checks Decode against proto.Unmarshal on arbitrary input: both
// fail or neither does, and when both succeed the content and every
// message's Unknown flag agree. Seeds: small profilegen reports, a request
// that sets every field, and hand-built wire cases.
func FuzzDecode(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		requireSameAsProto(t, payload)
	})
}

func fuzzSeeds(f *testing.F) [][]byte {
	f.Helper()
	cfg := smallConfig()
	cfg.SamplesPerSecond, cfg.Pods, cfg.Stacks, cfg.Locations, cfg.Functions = 4, 2, 20, 60, 30
	cfg.MinDepth, cfg.MaxDepth = 2, 6
	var seeds [][]byte
	for _, seed := range []uint64{1, 2} {
		cfg.Seed = seed
		raw, err := proto.Marshal(profilegen.New(cfg).Report(reportStart))
		if err != nil {
			f.Fatal(err)
		}
		if len(raw) >= 64<<10 {
			f.Fatalf("seed of %d bytes", len(raw))
		}
		seeds = append(seeds, raw)
	}
	full, err := proto.Marshal(fullRequest())
	if err != nil {
		f.Fatal(err)
	}
	g := generator{rng: rand.New(rand.NewPCG(3, 5))}
	for range 16 {
		seeds = append(seeds, g.request())
	}
	return append(seeds, full,
		[]byte{},
		cat(inSample(fixed64Field(1, 1), groupField(20, varintField(1, 1))), inDictionary(varintField(5, 1))),
		inSample(packedVarints(2, 1, 300), varintField(2, 2), packedTimestamps(1), fixed64Field(5, 2)),
		inAttrValue(msgField(5, msgField(1, strField(1, "x")), unknownVarint), strField(1, "a"), msgField(6)),
		inResourceProfiles(msgField(1, msgField(3, strField(3, "k")))),
		nested(40),
	)
}
