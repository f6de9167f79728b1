package pprofconv

import (
	"bytes"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
)

var sink [][]byte

func TestConvertHeapProfileKeepsEveryValue(t *testing.T) {
	var buf bytes.Buffer
	for range 1000 {
		sink = append(sink, make([]byte, 4096))
	}
	require.NoError(t, pprof.Lookup("heap").WriteTo(&buf, 0))
	p, err := profile.Parse(&buf)
	require.NoError(t, err)

	req, err := Convert(p, Options{ResourceAttributes: []string{"service.name", "demo"}})
	require.NoError(t, err)
	require.Len(t, req.ResourceProfiles[0].ScopeProfiles[0].Profiles, len(p.SampleType), "one OTLP profile per sample type")

	opts := convert.DefaultOptions("")
	opts.Now = func() time.Time { return time.Unix(0, p.TimeNanos).Add(time.Second) }
	res, err := convert.Convert(req, opts)
	require.NoError(t, err)
	require.Empty(t, res.Rejected, "converted pprof passes OTLP validation")

	want := map[string]int64{}
	for i, st := range p.SampleType {
		for _, s := range p.Sample {
			want["memory:"+st.Type+":"+st.Unit+":space:bytes"] += s.Value[i]
		}
	}
	got := map[string]int64{}
	for _, s := range res.Batch.Samples {
		got[s.Meta.ProfileType] += s.Value
		require.Equal(t, "demo", s.Meta.Series.Service)
	}
	require.Equal(t, want, got)
}

func TestConvertRejectsEmptyProfiles(t *testing.T) {
	_, err := Convert(&profile.Profile{}, Options{})
	require.ErrorIs(t, err, errNoSamples)
}
