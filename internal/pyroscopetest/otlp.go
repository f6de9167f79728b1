package pyroscopetest

import (
	"context"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flamehouse/flamehouse/internal/otlpbuild"
)

// otlpExporter returns a function that exports a request to the server's
// OTLP/gRPC endpoint (h2c on its HTTP port).
func otlpExporter(s *Server) func(context.Context, *collectorpb.ExportProfilesServiceRequest) error {
	return func(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
		cc, err := grpc.NewClient(s.HTTPAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer func() { _ = cc.Close() }()
		_, err = collectorpb.NewProfilesServiceClient(cc).Export(ctx, req)
		return err
	}
}

// nudge is a one-sample CPU profile of service pyroscopetest-nudge dated
// 20 days before now: outside the ranges a benchmark queries, inside the
// server's default retention (31 days).
func nudge(now time.Time) *collectorpb.ExportProfilesServiceRequest {
	b := otlpbuild.New()
	rp := b.Resource("service.name", "pyroscopetest-nudge")
	sp := otlpbuild.Scope(rp, "pyroscopetest", "")
	at := now.Add(-20 * 24 * time.Hour)
	fn := b.Function("nudge", "", "nudge.go", 1)
	stack := b.Stack(b.Location(0, 0, "go", otlpbuild.Line{Function: fn, Line: 1}))
	sp.Profiles = append(sp.Profiles, &pb.Profile{
		SampleType: b.ValueType("samples", "count"), PeriodType: b.ValueType("cpu", "nanoseconds"), Period: 50_000_000,
		TimeUnixNano: uint64(at.UnixNano()), DurationNano: uint64(time.Second),
		Samples: []*pb.Sample{{StackIndex: stack, TimestampsUnixNano: []uint64{uint64(at.UnixNano())}}},
	})
	return b.Request()
}
