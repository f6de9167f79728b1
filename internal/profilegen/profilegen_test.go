package profilegen

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
)

func TestReportIsValidAndComplete(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Stacks = 2000
	g := New(cfg)
	start := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	req := g.Report(start)
	raw, err := proto.Marshal(req)
	require.NoError(t, err)
	t.Logf("report: %d events, %d bytes (%.0f B/event), %d stacks, %d locations",
		g.Events(), len(raw), float64(len(raw))/float64(g.Events()), len(req.Dictionary.StackTable), len(req.Dictionary.LocationTable))

	opts := convert.DefaultOptions("")
	opts.Now = func() time.Time { return start.Add(time.Minute) }
	res, err := convert.Convert(req, opts)
	require.NoError(t, err)
	require.Empty(t, res.Rejected, "generated reports pass every validation rule")
	require.Equal(t, cfg.Pods, res.Profiles)
	require.Equal(t, int64(g.Events()), res.Batch.Events, "every event is accounted for")
	var total int64
	traced := 0
	for _, s := range res.Batch.Samples {
		total += s.Value
		if s.Meta.TraceID != "" {
			traced++
		}
	}
	require.Equal(t, int64(g.Events())*50_000_000, total)
	require.Positive(t, traced)
}

func TestDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Stacks = 500
	cfg.SamplesPerSecond = 100
	start := time.Unix(1_800_000_000, 0)
	a, err := proto.Marshal(New(cfg).Report(start))
	require.NoError(t, err)
	b, err := proto.Marshal(New(cfg).Report(start))
	require.NoError(t, err)
	require.Equal(t, a, b)
}
