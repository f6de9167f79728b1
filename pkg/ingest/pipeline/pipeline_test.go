package pipeline

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
)

// fakeWriter records the batches it is given and answers with err.
type fakeWriter struct {
	mu      sync.Mutex
	batches []*model.Batch
	err     error
}

func (w *fakeWriter) Write(_ context.Context, b *model.Batch) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.batches = append(w.batches, b)
	return nil
}

// counts records what the pipeline reports.
type counts struct {
	mu       sync.Mutex
	received int
	rejected map[convert.Reason]int
	rows     int
	events   int64
}

func (c *counts) Received(_ string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.received += n
}

func (c *counts) Rejected(_ string, r convert.Reason, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rejected == nil {
		c.rejected = map[convert.Reason]int{}
	}
	c.rejected[r] += n
}

func (c *counts) Written(_ string, rows int, events int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rows += rows
	c.events += events
}

// request is a generated report of three pods, one profile each; break
// names the profiles (by pod index) whose first sample gets an
// out-of-range stack index.
func request(t *testing.T, broken ...int) []byte {
	t.Helper()
	g := profilegen.New(profilegen.Config{
		Service: "checkout", Pods: 3, Stacks: 50, Functions: 40, Locations: 80, MinDepth: 3, MaxDepth: 8,
		SamplesPerSecond: 60, ReportInterval: 5 * time.Second, Threads: 2, CPUs: 2, Seed: 3,
	})
	req := g.Report(time.Now().Add(-time.Minute).Truncate(time.Second))
	for _, i := range broken {
		req.GetResourceProfiles()[i].GetScopeProfiles()[0].GetProfiles()[0].GetSamples()[0].StackIndex = 99999
	}
	payload, err := proto.Marshal(req)
	require.NoError(t, err)
	return payload
}

func TestExport(t *testing.T) {
	ctx := context.Background()
	errAdmit := errors.New("over the limit")
	for _, tc := range []struct {
		name      string
		payload   func(t *testing.T) []byte
		writerErr error
		admit     error
		// want
		accepted, rejected int
		written            bool
		check              func(t *testing.T, out *Outcome, err error)
	}{
		{
			name: "valid", payload: func(t *testing.T) []byte { return request(t) }, accepted: 3, written: true,
			check: func(t *testing.T, out *Outcome, err error) {
				require.NoError(t, err)
				require.Empty(t, out.Summary)
				require.NoError(t, out.RejectedError())
			},
		},
		{
			name: "one profile out of range", payload: func(t *testing.T) []byte { return request(t, 1) }, accepted: 2, rejected: 1, written: true,
			check: func(t *testing.T, out *Outcome, err error) {
				require.NoError(t, err, "the other profiles are written")
				require.Contains(t, out.Summary, "resource_profiles[1].scope_profiles[0].profiles[0]: samples[0]: stack_index 99999 is out of range")
				require.ErrorContains(t, out.RejectedError(), "dropped invalid profiles, wrote the other 2: 1 of 3 profiles rejected")
				require.Equal(t, convert.ReasonIndexOutOfRange, out.Rejected[0].Reason)
			},
		},
		{
			name: "every profile invalid", payload: func(t *testing.T) []byte { return request(t, 0, 1, 2) }, rejected: 3,
			check: func(t *testing.T, _ *Outcome, err error) {
				var invalid *InvalidError
				require.ErrorAs(t, err, &invalid)
				require.Equal(t, ReasonAllRejected, invalid.Reason)
			},
		},
		{
			name: "not protobuf", payload: func(*testing.T) []byte { return []byte{0xff, 0xff, 0xff} },
			check: func(t *testing.T, _ *Outcome, err error) {
				var invalid *InvalidError
				require.ErrorAs(t, err, &invalid)
				require.Equal(t, convert.ReasonMalformed, invalid.Reason)
			},
		},
		{
			name: "write fails", payload: func(t *testing.T) []byte { return request(t) }, writerErr: writer.ErrQueueFull, accepted: 3,
			check: func(t *testing.T, _ *Outcome, err error) {
				var werr *WriteError
				require.ErrorAs(t, err, &werr)
				require.ErrorIs(t, err, writer.ErrQueueFull)
			},
		},
		{
			name: "not admitted", payload: func(t *testing.T) []byte { return request(t) }, admit: errAdmit, accepted: 3,
			check: func(t *testing.T, _ *Outcome, err error) {
				require.ErrorIs(t, err, errAdmit)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &fakeWriter{err: tc.writerErr}
			rec := &counts{}
			p := New(w, Options{CPUSamplesAsTime: true}, rec)
			var admitted int64
			out, err := p.Export(ctx, Request{
				Tenant: "acme", Payload: tc.payload(t), DedupToken: "token-1",
				Admit: func(events int64) error { admitted = events; return tc.admit },
			})
			tc.check(t, out, err)
			require.Equal(t, tc.accepted, out.Accepted)
			require.Len(t, out.Rejected, tc.rejected)
			if !tc.written {
				require.Empty(t, w.batches)
				require.Zero(t, rec.rows)
				return
			}
			require.Len(t, w.batches, 1)
			b := w.batches[0]
			require.Equal(t, "token-1", b.DedupToken, "the request's token reaches the writer")
			require.Equal(t, len(b.Samples), out.Rows)
			require.Equal(t, b.Events, out.Events)
			require.Equal(t, out.Events, admitted, "admission is asked for the request's events")
			require.Equal(t, out.Rows, rec.rows)
			require.Equal(t, out.Events, rec.events)
			require.Equal(t, 3, rec.received)
			require.Equal(t, tc.rejected, rec.rejected[convert.ReasonIndexOutOfRange])
			for _, s := range b.Samples {
				require.Equal(t, "acme", s.Meta.Series.Tenant)
			}
		})
	}
}

// TestExportSameRowsForSameBytes: the same request converts to the same
// rows whichever caller sends it (the receiver and the Collector exporter
// hand the pipeline the same wire bytes).
func TestExportSameRowsForSameBytes(t *testing.T) {
	payload := request(t)
	var got [2]*model.Batch
	for i := range got {
		w := &fakeWriter{}
		_, err := New(w, Options{CPUSamplesAsTime: true}, nil).Export(context.Background(), Request{Payload: payload})
		require.NoError(t, err)
		got[i] = w.batches[0]
	}
	require.Len(t, got[1].Samples, len(got[0].Samples))
	for i := range got[0].Samples {
		a, b := got[0].Samples[i], got[1].Samples[i]
		require.Equal(t, [4]any{a.Timestamp, a.StackID, a.Value, a.Meta.Series.ID}, [4]any{b.Timestamp, b.StackID, b.Value, b.Meta.Series.ID})
	}
}

// TestExportWaitsForAConversionSlot: with every conversion slot taken, a
// request waits; one whose context ends meanwhile gets a WriteError (send
// again) and writes nothing, and once a slot is free requests convert.
func TestExportWaitsForAConversionSlot(t *testing.T) {
	w := &fakeWriter{}
	p := New(w, Options{MaxConcurrentConversions: 1}, nil)
	p.slots <- struct{}{} // a conversion under way

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := p.Export(ctx, Request{Payload: request(t)})
	var werr *WriteError
	require.ErrorAs(t, err, &werr)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Empty(t, w.batches)

	payload := request(t)
	done := make(chan error, 1)
	go func() {
		_, err := p.Export(context.Background(), Request{Payload: payload})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("converted while the only slot was taken: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	<-p.slots // the conversion under way ends
	require.NoError(t, <-done)
	require.Len(t, w.batches, 1)
	require.Empty(t, p.slots, "the slot is given back")
}
