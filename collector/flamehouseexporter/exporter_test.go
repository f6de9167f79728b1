package flamehouseexporter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pipeline"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/collector/flamehouseexporter/internal/metadata"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	fhpipeline "github.com/flamehouse/flamehouse/pkg/ingest/pipeline"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
)

// report is a generated eBPF-style report of three pods (one resource and
// profile each) as pdata; broken names the pods whose first sample gets an
// out-of-range stack index. events is its number of events, cpu its CPU
// time (events × period).
type report struct {
	pd          pprofile.Profiles
	events, cpu int64
}

func newReport(t testing.TB, seed uint64, broken ...int) report {
	t.Helper()
	g := profilegen.New(profilegen.Config{
		Service: "checkout", Pods: 3, Stacks: 60, Functions: 50, Locations: 90, MinDepth: 3, MaxDepth: 10,
		SamplesPerSecond: 90, ReportInterval: 5 * time.Second, Threads: 2, CPUs: 2, TraceFraction: 0.1, Seed: seed,
	})
	req := g.Report(time.Now().Add(-2 * time.Minute).Truncate(time.Second))
	r := report{}
	for i, rp := range req.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			for _, p := range sp.GetProfiles() {
				for _, s := range p.GetSamples() {
					if !contains(broken, i) {
						r.events += int64(len(s.GetTimestampsUnixNano()))
						r.cpu += int64(len(s.GetTimestampsUnixNano())) * p.GetPeriod()
					}
				}
				if contains(broken, i) {
					p.GetSamples()[0].StackIndex = 99999
				}
			}
		}
	}
	wire, err := proto.Marshal(req)
	require.NoError(t, err)
	r.pd, err = (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(wire)
	require.NoError(t, err)
	return r
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestFactory(t *testing.T) {
	f := NewFactory()
	require.Equal(t, metadata.Type, f.Type())
	xf, ok := f.(xexporter.Factory)
	require.True(t, ok, "the factory creates profiles exporters")
	require.Equal(t, component.StabilityLevelDevelopment, xf.ProfilesStability())
	cfg := f.CreateDefaultConfig()
	require.NoError(t, componenttest.CheckConfigStruct(cfg))
	_, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.ErrorIs(t, err, pipeline.ErrSignalNotSupported, "profiles only")
}

// TestLifecycle creates, starts and shuts down the exporter as the
// Collector does. Without create_schema, start opens no connection, so no
// server is needed.
func TestLifecycle(t *testing.T) {
	f := NewFactory().(xexporter.Factory) // checked in TestFactory
	cfg := createDefaultConfig()
	cfg.Endpoint, cfg.CreateSchema = "http://127.0.0.1:1", false
	exp, err := f.CreateProfiles(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, exp.Shutdown(context.Background()))
}

// fakeWriter answers writes from a list of errors (nil: committed) and
// counts them.
type fakeWriter struct {
	mu      sync.Mutex
	answers []error
	calls   int
	batches []*model.Batch
}

func (w *fakeWriter) Write(_ context.Context, b *model.Batch) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	var err error
	if len(w.answers) > 0 {
		err, w.answers = w.answers[0], w.answers[1:]
	}
	if err == nil {
		w.batches = append(w.batches, b)
	}
	return err
}

// helperWith runs an exporter whose pipeline writes to w behind
// exporterhelper with fast retries and no queue, so that ConsumeProfiles
// returns the push's final outcome; pushes counts the pusher's calls.
func helperWith(t *testing.T, w fhpipeline.Writer, tokens bool, pushes *atomic.Int32) xexporter.Profiles {
	t.Helper()
	set := exportertest.NewNopSettings(metadata.Type)
	cfg := createDefaultConfig()
	cfg.Endpoint = "http://127.0.0.1:1"
	tel, err := newTelemetry(set.TelemetrySettings, set.ID)
	require.NoError(t, err)
	e := &profilesExporter{
		cfg: cfg, logger: set.Logger, telemetry: tel, tokens: tokens,
		pipeline: fhpipeline.New(w, fhpipeline.Options{CPUSamplesAsTime: true}, tel),
	}
	retry := configretry.NewDefaultBackOffConfig()
	retry.InitialInterval, retry.MaxInterval, retry.MaxElapsedTime, retry.RandomizationFactor = 5*time.Millisecond, 10*time.Millisecond, 300*time.Millisecond, 0
	exp, err := createHelper(context.Background(), set, cfg, func(ctx context.Context, pd pprofile.Profiles) error {
		pushes.Add(1)
		return e.push(ctx, pd)
	}, retry)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return exp
}

func createHelper(ctx context.Context, set exporter.Settings, cfg *Config, push func(context.Context, pprofile.Profiles) error,
	retry configretry.BackOffConfig,
) (xexporter.Profiles, error) {
	return xexporterhelper.NewProfiles(ctx, set, cfg, push, exporterhelper.WithRetry(retry),
		exporterhelper.WithQueue(configoptional.None[exporterhelper.QueueBatchConfig]()))
}

// TestPermanentAndRetryableErrors: invalid profiles are permanent errors,
// never retried, and the valid rest of a push is written once; failures
// to commit are retried until they succeed or the retries run out.
func TestPermanentAndRetryableErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		broken    []int
		answers   []error
		permanent bool
		err       string
		pushes    int32
		written   int // batches committed
	}{
		{name: "valid", pushes: 1, written: 1},
		{
			name: "one invalid profile", broken: []int{1}, permanent: true, pushes: 1, written: 1,
			err: "dropped invalid profiles, wrote the other 2: 1 of 3 profiles rejected: resource_profiles[1].scope_profiles[0].profiles[0]: " +
				"samples[0]: stack_index 99999 is out of range",
		},
		{name: "every profile invalid", broken: []int{0, 1, 2}, permanent: true, pushes: 1, err: "dropped all 3 profiles: 3 of 3 profiles rejected"},
		{name: "commit fails twice", answers: []error{writer.ErrClosed, &writer.WriteError{Err: errors.New("connection refused")}}, pushes: 3, written: 1},
		// A full write queue throttles retries by a second: past the test's
		// 300 ms of retries, the push gives up after one attempt, retryable.
		{name: "queue stays full", answers: repeat(writer.ErrQueueFull, 1000), pushes: 1, err: "the write queue is full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &fakeWriter{answers: tc.answers}
			var pushes atomic.Int32
			exp := helperWith(t, w, false, &pushes)
			err := exp.ConsumeProfiles(context.Background(), newReport(t, 1, tc.broken...).pd)
			if tc.err == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.err)
				require.Equal(t, tc.permanent, consumererror.IsPermanent(err), "permanent: %v", err)
			}
			require.Equal(t, tc.pushes, pushes.Load(), "pushes")
			require.Len(t, w.batches, tc.written)
		})
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// TestContentToken: with a persistent queue each push carries a token of
// its content, the same after the queue's encoding round trip (a replay
// after a crash reads the request back from storage) and different for
// another request or tenant.
func TestContentToken(t *testing.T) {
	w := &fakeWriter{}
	var pushes atomic.Int32
	exp := helperWith(t, w, true, &pushes)
	r := newReport(t, 2)
	require.NoError(t, exp.ConsumeProfiles(context.Background(), r.pd))

	wire, err := (&pprofile.ProtoMarshaler{}).MarshalProfiles(r.pd)
	require.NoError(t, err)
	again, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(wire)
	require.NoError(t, err)
	require.NoError(t, exp.ConsumeProfiles(context.Background(), again))

	other := newReport(t, 3)
	require.NoError(t, exp.ConsumeProfiles(context.Background(), other.pd))
	require.Len(t, w.batches, 3)
	tok := w.batches[0].DedupToken
	require.NotEmpty(t, tok)
	require.Equal(t, tok, w.batches[1].DedupToken, "the same request, read back, has the same token")
	require.NotEqual(t, tok, w.batches[2].DedupToken)
	require.NotEqual(t, contentToken("a", wire), contentToken("b", wire), "tenants do not share tokens")

	plain := &fakeWriter{}
	require.NoError(t, helperWith(t, plain, false, &pushes).ConsumeProfiles(context.Background(), r.pd))
	require.Empty(t, plain.batches[0].DedupToken, "without a persistent queue requests share inserts")
}

func TestNotStarted(t *testing.T) {
	e := &profilesExporter{cfg: createDefaultConfig()}
	require.ErrorContains(t, e.push(context.Background(), pprofile.NewProfiles()), "not started")
}

// wireOf is pdata's protobuf encoding, the bytes the exporter pushes.
func wireOf(t testing.TB, pd pprofile.Profiles) []byte {
	t.Helper()
	wire, err := (&pprofile.ProtoMarshaler{}).MarshalProfiles(pd)
	require.NoError(t, err)
	return wire
}

func sprint(v any) string { return fmt.Sprintf("%v %+v %#v", v, v, v) }
