package receiver

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
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
	mu       sync.Mutex
	held     *model.Batch
	received chan struct{} // closed when the first batch is held
	returned chan struct{} // closed when the held batch's Write returned
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
	close(w.received)
	<-ctx.Done()
	close(w.returned)
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
// given back to its buffer pool, where the next requests would overwrite
// it; the payloads of answered requests are (and are reused). Over gRPC
// and over OTLP/HTTP, whose bodies of a declared length are pooled too.
func TestRowsHeldByTheWriterKeepTheirPayload(t *testing.T) {
	for _, protocol := range []string{"grpc", "http"} {
		t.Run(protocol, func(t *testing.T) {
			// One processor: a buffer given back goes to the pool of the
			// processor that gave it back, and the next request must find it.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			w := &holdingWriter{received: make(chan struct{}), returned: make(chan struct{})}
			cfg := DefaultConfig()
			cfg.GRPCListenAddress, cfg.HTTPListenAddress = "127.0.0.1:0", "127.0.0.1:0"
			r, err := New(cfg, w, func(context.Context) error { return nil }, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
			require.NoError(t, err)
			r.Start()
			t.Cleanup(r.Stop)
			export := exportOver(t, protocol, r)

			first, _ := generated(31)
			var later []*collectorpb.ExportProfilesServiceRequest
			for seed := uint64(32); seed < 40; seed++ { // payloads of the same size class as the first
				req, _ := generated(seed)
				later = append(later, req)
			}
			want, err := convert.Convert(first, convert.DefaultOptions(cfg.DefaultTenant))
			require.NoError(t, err)
			// The sender gives up once the writer holds the request's rows
			// (not after a fixed time: on a loaded machine the request may
			// not reach the writer that soon).
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-w.received:
				case <-time.After(time.Minute):
				}
				cancel()
			}()
			err = export(ctx, first)
			require.ErrorIs(t, err, context.Canceled)
			select { // the server notices that the sender left, and ends its request
			case <-w.returned:
			case <-time.After(10 * time.Second):
				t.Fatal("the request the sender gave up on did not end")
			}
			for _, req := range later {
				require.NoError(t, export(context.Background(), req))
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			require.Equal(t, batchText(want.Batch), batchText(w.held))
		})
	}
}

// exportOver returns a function that exports a request to r over the
// protocol ("grpc", or "http" with protobuf bodies of a declared length),
// and fails for anything but a success.
func exportOver(t *testing.T, protocol string, r *Receiver) func(context.Context, *collectorpb.ExportProfilesServiceRequest) error {
	t.Helper()
	if protocol == "http" {
		return func(ctx context.Context, m *collectorpb.ExportProfilesServiceRequest) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.HTTPAddress()+ProfilesPath, bytes.NewReader(marshal(t, m)))
			require.NoError(t, err)
			req.Header.Set("Content-Type", contentProtobuf)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("HTTP %d", resp.StatusCode)
			}
			return nil
		}
	}
	cc, err := grpc.NewClient(r.GRPCAddress(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	client := collectorpb.NewProfilesServiceClient(cc)
	return func(ctx context.Context, m *collectorpb.ExportProfilesServiceRequest) error {
		_, err := client.Export(ctx, m)
		switch status.Code(err) {
		case codes.DeadlineExceeded:
			return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		case codes.Canceled:
			return fmt.Errorf("%w: %w", context.Canceled, err)
		}
		return err
	}
}
