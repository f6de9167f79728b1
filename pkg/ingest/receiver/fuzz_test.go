package receiver

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
)

// FuzzUnmarshalJSON fuzzes the OTLP/JSON path: hex-id rewriting, protojson
// decoding and conversion. Nothing may panic; what decodes must convert or
// be rejected with an error.
func FuzzUnmarshalJSON(f *testing.F) {
	cfg := profilegen.DefaultConfig()
	cfg.Stacks, cfg.Pods, cfg.SamplesPerSecond = 20, 1, 2
	seed, err := protojson.Marshal(profilegen.New(cfg).Report(time.Unix(1_800_000_000, 0)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"dictionary":{"linkTable":[{},{"traceId":"00112233445566778899aabbccddeeff","spanId":"0011223344556677"}]}}`))
	f.Add([]byte(`{"resourceProfiles":[{"scopeProfiles":[{"profiles":[{"profileId":"zz"}]}]}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		payload, err := jsonToProtobuf(data)
		if err != nil {
			return // not a request: refused with an error, which is the point
		}
		opts := convert.DefaultOptions("")
		opts.Now = func() time.Time { return time.Unix(1_800_000_100, 0) }
		res, err := convert.Protobuf(payload, opts)
		var re *convert.RequestError
		switch {
		case err != nil && (!errors.As(err, &re) || re.Reason == convert.ReasonMalformed):
			t.Fatalf("a request that protojson accepts must decode, got %v", err)
		case err == nil && res.Accepted() > res.Profiles:
			t.Fatalf("accepted %d of %d", res.Accepted(), res.Profiles)
		}
	})
}
