package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// sink records what NotifyUnsymbolized reports, copying it.
type sink struct {
	mu    sync.Mutex
	calls map[string][]model.Executable
}

func (s *sink) Unsymbolized(tenant string, exes []model.Executable) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string][]model.Executable{}
	}
	for _, e := range exes {
		s.calls[tenant] = append(s.calls[tenant], model.Executable{BuildID: strings.Clone(e.BuildID), File: strings.Clone(e.File)})
	}
}

func TestNotifyUnsymbolized(t *testing.T) {
	frame := func(fn, file, buildID string, addr uint64) *model.Frame {
		return &model.Frame{FunctionName: fn, MappingFile: file, BuildID: buildID, Address: addr}
	}
	batch := func() *model.Batch {
		b := model.NewBatch()
		b.ServiceSymbols(model.ServiceKey{Tenant: "acme", Service: "checkout"}).Frames = []*model.Frame{
			frame("main", "/app", "AA01", 0x10),                   // symbolized: not reported
			frame("", "/lib/libc.so.6", "bb02", 0x20),             // unsymbolized
			frame("", "/lib/libc.so.6", "bb02", 0x30),             // same build id: once
			frame("", "/lib/libssl.so", "CC03", 0x40),             // upper case: reported lower case
			frame("", "[vdso]", "", 0x50),                         // no build id: nothing to fetch
			{SystemName: "sys", MappingFile: "/x", BuildID: "dd"}, // named by its system name
		}
		b.ServiceSymbols(model.ServiceKey{Tenant: "acme", Service: "cart"}).Frames = []*model.Frame{frame("", "/lib/libc.so.6", "bb02", 0x20)}
		b.ServiceSymbols(model.ServiceKey{Tenant: "other", Service: "cart"}).Frames = []*model.Frame{frame("", "/lib/libc.so.6", "bb02", 0x20)}
		return b
	}
	for _, tc := range []struct {
		name     string
		writeErr error
		want     map[string][]model.Executable
	}{
		{name: "committed", want: map[string][]model.Executable{
			"acme":  {{BuildID: "bb02", File: "/lib/libc.so.6"}, {BuildID: "cc03", File: "/lib/libssl.so"}},
			"other": {{BuildID: "bb02", File: "/lib/libc.so.6"}},
		}},
		{name: "not committed", writeErr: errors.New("clickhouse is down")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s sink
			w := NotifyUnsymbolized(&fakeWriter{err: tc.writeErr}, &s)
			err := w.Write(context.Background(), batch())
			require.ErrorIs(t, err, tc.writeErr)
			for _, exes := range s.calls {
				slices.SortFunc(exes, func(a, b model.Executable) int { return strings.Compare(a.BuildID, b.BuildID) })
			}
			require.Equal(t, tc.want, s.calls)
		})
	}
}

// nopSink discards what it hears.
type nopSink struct{ exes int }

func (s *nopSink) Unsymbolized(_ string, exes []model.Executable) { s.exes += len(exes) }

// BenchmarkExportUnsymbolizedHook measures what the hook adds to Export:
// the same generated report (2,000 stacks, a third of the native frames
// unsymbolized in two libraries) with and without a sink. Figures:
// ns/request and the frames each request carries.
func BenchmarkExportUnsymbolizedHook(b *testing.B) {
	g := profilegen.New(profilegen.Config{
		Service: "checkout", Pods: 10, Stacks: 2000, Functions: 400, Locations: 1500, MinDepth: 8, MaxDepth: 40,
		SamplesPerSecond: 100, ReportInterval: 10 * time.Second, Threads: 4, CPUs: 2, Seed: 7,
	})
	payload, err := proto.Marshal(g.Report(time.Now().Add(-time.Minute).Truncate(time.Second)))
	require.NoError(b, err)
	b.Run("scan-only", func(b *testing.B) { // the hook's own work on one request's batch
		res, err := convert.Protobuf(payload, convert.DefaultOptions("acme"))
		require.NoError(b, err)
		b.ReportAllocs()
		for b.Loop() {
			if len(UnsymbolizedExecutables(res.Batch)) == 0 {
				b.Fatal("the report has unsymbolized frames with build ids")
			}
		}
	})
	for _, hook := range []bool{false, true} {
		b.Run(fmt.Sprintf("hook=%t", hook), func(b *testing.B) {
			d, s := &discardWriter{}, &nopSink{}
			var w Writer = d
			if hook {
				w = NotifyUnsymbolized(w, s)
			}
			p := New(w, Options{CPUSamplesAsTime: true}, nil)
			b.ReportAllocs()
			for b.Loop() {
				_, err := p.Export(context.Background(), Request{Tenant: "acme", Payload: payload})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(d.frames), "frames/request")
			b.ReportMetric(float64(d.unsymbolized), "unsymbolized-frames/request")
			if hook && s.exes == 0 {
				b.Fatal("the report has unsymbolized frames with build ids")
			}
		})
	}
}

// discardWriter commits nothing and counts the last batch's frames.
type discardWriter struct{ frames, unsymbolized int }

func (w *discardWriter) Write(_ context.Context, batch *model.Batch) error {
	w.frames, w.unsymbolized = 0, 0
	for _, sym := range batch.Symbols {
		w.frames += len(sym.Frames)
		for _, f := range sym.Frames {
			if !f.Symbolized() && f.BuildID != "" {
				w.unsymbolized++
			}
		}
	}
	return nil
}
