package ebpfagent

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

func TestLogBufferReady(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		ready  bool
	}{
		{"both lines", []string{"a Attached tracer program\n", "b Attached sched monitor\n"}, true},
		{"a line split across writes", []string{"x Attached tracer pro", "gram\ny Attached sch", "ed monitor"}, true},
		{"one line only", []string{"Attached tracer program\n", "Attached prctl monitor\n"}, false},
		{"nothing", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newLogBuffer(ReadyLines)
			for _, w := range tc.writes {
				_, err := b.Write([]byte(w))
				require.NoError(t, err)
			}
			select {
			case <-b.ready:
				require.True(t, tc.ready, "ready too early")
			default:
				require.False(t, tc.ready, "not ready")
			}
		})
	}
}

// request builds an agent-shaped request: process pid, samples of the
// given sample type with timestamps (and values when given).
func request(pid *commonpb.AnyValue, sampleType string, period int64, samples ...*pb.Sample) *collectorpb.ExportProfilesServiceRequest {
	return &collectorpb.ExportProfilesServiceRequest{
		Dictionary: &pb.ProfilesDictionary{StringTable: []string{"", sampleType, "count", "nanoseconds"}},
		ResourceProfiles: []*pb.ResourceProfiles{{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "process.pid", Value: pid}}},
			ScopeProfiles: []*pb.ScopeProfiles{{Profiles: []*pb.Profile{{
				SampleType: &pb.ValueType{TypeStrindex: 1, UnitStrindex: 2}, Period: period, Samples: samples,
			}}}},
		}},
	}
}

func intPID(pid int64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: pid}}
}

func TestCountRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *collectorpb.ExportProfilesServiceRequest
		want Tally
	}{
		{
			name: "CPU samples: timestamps only, times the period",
			req: request(intPID(42), "samples", 50_000_000,
				&pb.Sample{TimestampsUnixNano: []uint64{30, 10, 20}}, &pb.Sample{TimestampsUnixNano: []uint64{40}}),
			want: Tally{{PID: 42, Type: "samples/count"}: {Samples: 2, Events: 4, EventsTimesPeriod: 200_000_000, First: 10, Last: 40}},
		},
		{
			name: "off-CPU: values and timestamps, no period",
			req:  request(intPID(7), "off_cpu", 0, &pb.Sample{Values: []int64{5, 6}, TimestampsUnixNano: []uint64{1, 2}}),
			want: Tally{{PID: 7, Type: "off_cpu/count"}: {Samples: 1, Events: 2, Values: 11, First: 1, Last: 2}},
		},
		{
			name: "CPU counts: a value without timestamps is one event of value x period",
			req:  request(intPID(5), "samples", 10, &pb.Sample{Values: []int64{4}}, &pb.Sample{Values: []int64{2, 3}, TimestampsUnixNano: []uint64{7, 8}}),
			want: Tally{{PID: 5, Type: "samples/count"}: {Samples: 2, Events: 3, Values: 9, EventsTimesPeriod: 90, First: 7, Last: 8}},
		},
		{
			name: "one value without timestamps is one event",
			req:  request(&commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "9"}}, "samples", 0, &pb.Sample{Values: []int64{3}}),
			want: Tally{{PID: 9, Type: "samples/count"}: {Samples: 1, Events: 1, Values: 3}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload, err := proto.Marshal(tc.req)
			require.NoError(t, err)
			got, err := CountRequest(payload)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err := CountRequest([]byte{0xff})
	require.ErrorContains(t, err, "decode the request")
}

// receiver is an OTLP profiles gRPC endpoint that keeps what it gets and
// answers with a fixed partial success.
type receiver struct {
	collectorpb.UnimplementedProfilesServiceServer
	rejected int64
	mu       sync.Mutex
	got      [][]byte
}

func (r *receiver) Export(_ context.Context, req *collectorpb.ExportProfilesServiceRequest) (*collectorpb.ExportProfilesServiceResponse, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.got = append(r.got, b)
	r.mu.Unlock()
	if r.rejected == 0 {
		return &collectorpb.ExportProfilesServiceResponse{}, nil
	}
	return &collectorpb.ExportProfilesServiceResponse{PartialSuccess: &collectorpb.ExportProfilesPartialSuccess{RejectedProfiles: r.rejected, ErrorMessage: "no"}}, nil
}

func serve(t *testing.T, r *receiver) string {
	t.Helper()
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	collectorpb.RegisterProfilesServiceServer(srv, r)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// TestProxy: a request reaches every receiver as it was sent, the sender
// gets the first receiver's answer, and the proxy keeps the request, its
// tally and every receiver's answer.
func TestProxy(t *testing.T) {
	first, second := &receiver{}, &receiver{rejected: 1}
	p, err := StartProxy(serve(t, first), serve(t, second))
	require.NoError(t, err)
	defer p.Stop()
	req := request(intPID(42), "samples", 10, &pb.Sample{TimestampsUnixNano: []uint64{1, 2}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := p.Send(ctx, req)
	require.NoError(t, err)
	require.Zero(t, resp.GetPartialSuccess().GetRejectedProfiles(), "the first receiver's answer")
	p.Drain()

	sent, err := proto.Marshal(req)
	require.NoError(t, err)
	require.Equal(t, [][]byte{sent}, first.got)
	require.Equal(t, [][]byte{sent}, second.got)
	rs := p.Requests()
	require.Len(t, rs, 1)
	require.Equal(t, sent, rs[0].Payload)
	require.Equal(t, Tally{{PID: 42, Type: "samples/count"}: {Samples: 1, Events: 2, EventsTimesPeriod: 20, First: 1, Last: 2}}, p.Sent())
	require.Len(t, rs[0].Answers, 2)
	require.NoError(t, rs[0].Answers[0].Err)
	require.Zero(t, rs[0].Answers[0].Rejected)
	require.Equal(t, int64(1), rs[0].Answers[1].Rejected)
	require.Equal(t, "no", rs[0].Answers[1].Message)

	_, err = StartProxy()
	require.ErrorContains(t, err, "needs a target")
}
