package receiver

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// holdingWriter keeps the first batch it is given past its request's end,
// as the real writer does when the sender gives up while the batch is
// being written: Write returns ctx.Err() and the rows are still read.
// Later batches are accepted at once.
type holdingWriter struct {
	mu   sync.Mutex
	held *model.Batch
}

func (w *holdingWriter) Write(ctx context.Context, b *model.Batch) error {
	w.mu.Lock()
	first := w.held == nil
	if first {
		w.held = b
	}
	w.mu.Unlock()
	if !first {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// batchText renders the strings of a batch's rows, which alias the
// request's payload.
func batchText(b *model.Batch) string {
	var lines []string
	for _, s := range b.Samples {
		lines = append(lines, fmt.Sprint(s.Meta.Series.Service, s.Meta.Series.Attributes, s.Meta.ProfileType, s.Meta.TraceID, s.Attributes, s.Value))
	}
	for svc, sym := range b.Symbols {
		for _, f := range sym.Frames {
			lines = append(lines, fmt.Sprint(svc, f.FunctionName, f.FileName, f.MappingFile, f.BuildID, f.FrameType))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestRowsHeldByTheWriterKeepTheirPayload: the payload of a request whose
// rows the writer may still read (its sender gave up mid-write) is not
// given back to gRPC's buffer pool, where the next requests would
// overwrite it; the payloads of answered requests are (and are reused).
func TestRowsHeldByTheWriterKeepTheirPayload(t *testing.T) {
	w := &holdingWriter{}
	cfg := DefaultConfig()
	cfg.GRPCListenAddress, cfg.HTTPListenAddress = "127.0.0.1:0", "127.0.0.1:0"
	r, err := New(cfg, w, func(context.Context) error { return nil }, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	r.Start()
	t.Cleanup(r.Stop)
	cc, err := grpc.NewClient(r.GRPCAddress(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	client := collectorpb.NewProfilesServiceClient(cc)

	first, _ := generated(31)
	want, err := convert.Convert(first, convert.DefaultOptions(cfg.DefaultTenant))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err = client.Export(ctx, first)
	cancel()
	require.Equal(t, codes.DeadlineExceeded, status.Code(err))
	for seed := uint64(32); seed < 40; seed++ { // payloads of the same size class as the first
		req, _ := generated(seed)
		_, err := client.Export(context.Background(), req)
		require.NoError(t, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	require.NotNil(t, w.held)
	require.Equal(t, batchText(want.Batch), batchText(w.held))
}
