package receiver

import (
	"context"
	"net/http"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // accept gzip-compressed requests (the eBPF profiler sends them)
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// grpcService implements OTLP ProfilesService/Export.
type grpcService struct {
	collectorpb.UnimplementedProfilesServiceServer
	r *Receiver
}

// Export handles one OTLP/gRPC export.
func (s *grpcService) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) (*collectorpb.ExportProfilesServiceResponse, error) {
	r := s.r
	md, _ := metadata.FromIncomingContext(ctx)
	if eerr := checkVersion(md.Get(versionMetadata)); eerr != nil {
		return nil, r.grpcError(eerr)
	}
	var authorization string
	if v := md.Get("authorization"); len(v) > 0 {
		authorization = v[0]
	}
	tenant, err := r.cfg.authenticate(authorization)
	if err != nil {
		return nil, r.grpcError(&exportError{grpc: codes.Unauthenticated, reason: "unauthenticated", msg: err.Error()})
	}
	size := proto.Size(req)
	r.metrics.requestBytes.Observe(float64(size))
	if limit := r.cfg.requestLimit(tenant); size > limit {
		return nil, r.grpcError(&exportError{
			grpc: codes.ResourceExhausted, reason: "too_large",
			msg: "the request is larger than the tenant's limit; send smaller batches",
		})
	}
	ctx, cancel := contextWithTimeout(ctx, r.cfg.RequestTimeout)
	defer cancel()
	resp, eerr := r.export(ctx, tenant, req)
	if eerr != nil {
		return nil, r.grpcError(eerr)
	}
	r.metrics.requests.WithLabelValues("grpc", "ok").Inc()
	return resp, nil
}

// grpcError states an export error as a gRPC status; retryable ones carry
// a RetryInfo-style hint in the message.
func (r *Receiver) grpcError(e *exportError) error {
	r.metrics.requests.WithLabelValues("grpc", e.reason).Inc()
	code := e.grpc
	if code == 0 {
		code = grpcCodeForHTTP(e.http)
	}
	return status.Error(code, e.msg)
}

// grpcCodeForHTTP maps the HTTP-only errors to gRPC codes.
func grpcCodeForHTTP(status int) codes.Code {
	switch status {
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	case http.StatusUnsupportedMediaType, http.StatusMethodNotAllowed, http.StatusBadRequest:
		return codes.InvalidArgument
	}
	return codes.Internal
}

// contextWithTimeout bounds a request by the configured timeout, keeping a
// shorter deadline the sender set.
func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
