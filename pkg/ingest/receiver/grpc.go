package receiver

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip" // accept gzip-compressed requests (the eBPF profiler sends them)
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// grpcService implements OTLP ProfilesService/Export on the raw request
// bytes: the converter decodes the wire format itself (package otlpwire),
// so the generated message is never built.
type grpcService struct {
	r *Receiver
}

// rawRequest is an Export request's protobuf encoding, in a pooled buffer
// that the handler holds a reference to (the received frames are copied
// into one of payloads, or it is the one buffer they came in; an OTLP/HTTP
// body of a declared length is read into one of payloads). undecodable,
// when set, says why its gzip body could not be decompressed
// (requestDecompressor), and payload is empty.
type rawRequest struct {
	buf         mem.Buffer
	payload     []byte
	undecodable string
}

// payloads holds the buffers of gRPC payloads that span several frames,
// and of OTLP/HTTP bodies of a declared length.
var payloads payloadPool

// release gives the payload's buffer back to its pool (payloads, or
// gRPC's own for a payload that came in one buffer), so that the
// next request reuses it instead of allocating: the largest allocation of
// a request, and most of the heap's churn at high rates. Only once
// nothing refers to the payload any more.
func (r *rawRequest) release() {
	if r.buf != nil {
		r.buf.Free()
		r.buf, r.payload = nil, nil
	}
}

// answered releases the payload once its request was answered with eerr,
// unless the writer may still read the rows, which alias the payload
// (eerr.rowsHeld): that one is left to the garbage collector.
func (r *rawRequest) answered(eerr *exportError) {
	if eerr == nil || !eerr.rowsHeld {
		r.release()
	}
}

// undecodableMark starts what requestDecompressor hands on for a body it
// could not decompress: a protobuf message never starts with 0x00 (field
// number 0 does not exist), so the codec tells the two apart.
const undecodableMark = 0x00

// requestDecompressor decompresses gzip requests for this server alone (a
// server option; gRPC's registered gzip compressor, which clients in the
// same process use, is left alone). gRPC answers a body its decompressor
// refuses with Internal, written before the handler runs; a corrupt body is
// the sender's fault and must be InvalidArgument, as OTLP/HTTP answers 400.
// So a corrupt body is handed on as undecodableMark and the reason, and
// the handler answers it. At most limit+1 bytes are decompressed: gRPC
// then refuses a larger message (ResourceExhausted) without inflating a
// gzip bomb.
type requestDecompressor struct{ limit int }

func (requestDecompressor) Type() string { return "gzip" }

func (d requestDecompressor) Do(r io.Reader) ([]byte, error) {
	zr, err := gzip.NewReader(r)
	if err == nil {
		var out []byte
		if out, err = io.ReadAll(io.LimitReader(zr, int64(d.limit)+1)); err == nil {
			return out, nil
		}
	}
	return append([]byte{undecodableMark}, err.Error()...), nil
}

// exportMethod is ProfilesService/Export's full gRPC method name.
const exportMethod = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"

// profilesServiceDesc is collectorpb.ProfilesService_ServiceDesc with a
// handler that takes the request as bytes (see rawCodec).
var profilesServiceDesc = grpc.ServiceDesc{
	ServiceName: collectorpb.ProfilesService_ServiceDesc.ServiceName,
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Export", Handler: exportHandler}},
	Streams:     []grpc.StreamDesc{},
	Metadata:    collectorpb.ProfilesService_ServiceDesc.Metadata,
}

func exportHandler(srv any, ctx context.Context, //nolint:revive // context-as-argument: the signature of grpc.MethodHandler
	dec func(any) error, interceptor grpc.UnaryServerInterceptor,
) (any, error) {
	in := new(rawRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	s := srv.(*grpcService) // registered with this type only
	if interceptor == nil {
		return s.Export(ctx, in)
	}
	handler := func(ctx context.Context, req any) (any, error) {
		return s.Export(ctx, req.(*rawRequest)) // built above
	}
	return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: exportMethod}, handler)
}

// rawCodec is the server's codec: protobuf for every message, except that
// a *rawRequest receives the request bytes as they are.
type rawCodec struct{ proto encoding.CodecV2 }

func newRawCodec() rawCodec { return rawCodec{proto: encoding.GetCodecV2("proto")} }

func (c rawCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if raw, ok := v.(*rawRequest); ok {
		buf := data.MaterializeToBuffer(&payloads) // a reference of our own: gRPC frees data
		if p := buf.ReadOnlyData(); len(p) > 0 && p[0] == undecodableMark {
			raw.undecodable = string(p[1:])
			buf.Free()
			return nil
		}
		raw.buf, raw.payload = buf, buf.ReadOnlyData()
		return nil
	}
	return c.proto.Unmarshal(data, v)
}

func (rawCodec) Name() string { return "proto" }

// Export handles one OTLP/gRPC export, under a server span that continues
// the sender's trace.
func (s *grpcService) Export(ctx context.Context, req *rawRequest) (*collectorpb.ExportProfilesServiceResponse, error) {
	r := s.r
	md, _ := metadata.FromIncomingContext(ctx)
	ctx, span := r.startSpan(selftrace.ExtractGRPC(ctx, md), grpcSpanName, attribute.String("rpc.system", "grpc"),
		attribute.String("rpc.service", collectorpb.ProfilesService_ServiceDesc.ServiceName), attribute.String("rpc.method", "Export"))
	var resp *collectorpb.ExportProfilesServiceResponse
	var eerr *exportError
	selftrace.Do(ctx, func(ctx context.Context) { resp, eerr = s.export(ctx, md, req) })
	req.answered(eerr)
	code := codes.OK
	if eerr != nil {
		code = eerr.code()
	}
	span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(code)))
	endSpan(span, eerr)
	if eerr != nil {
		return nil, r.grpcError(eerr)
	}
	r.metrics.requests.WithLabelValues("grpc", "ok").Inc()
	return resp, nil
}

// export checks and exports one request.
func (s *grpcService) export(ctx context.Context, md metadata.MD, req *rawRequest) (*collectorpb.ExportProfilesServiceResponse, *exportError) {
	r := s.r
	if eerr := checkVersion(md.Get(versionMetadata)); eerr != nil {
		return nil, eerr
	}
	var authorization string
	if v := md.Get("authorization"); len(v) > 0 {
		authorization = v[0]
	}
	tenant, err := r.cfg.Authenticate(authorization)
	if err != nil {
		return nil, &exportError{grpc: codes.Unauthenticated, reason: "unauthenticated", msg: err.Error()}
	}
	if req.undecodable != "" {
		return nil, badRequest("decode", "invalid gzip body: %s", req.undecodable)
	}
	size := len(req.payload)
	r.metrics.requestBytes.Observe(float64(size))
	if limit := r.cfg.requestLimit(tenant); size > limit {
		return nil, &exportError{
			grpc: codes.ResourceExhausted, reason: "too_large",
			msg: "the request is larger than the tenant's limit; send smaller batches",
		}
	}
	ctx, cancel := contextWithTimeout(ctx, r.cfg.RequestTimeout)
	defer cancel()
	return r.export(ctx, tenant, req.payload)
}

// grpcError states an export error as a gRPC status; retryable ones carry
// a RetryInfo-style hint in the message.
func (r *Receiver) grpcError(e *exportError) error {
	r.metrics.requests.WithLabelValues("grpc", e.reason).Inc()
	return status.Error(e.code(), e.msg)
}

// code is the error's gRPC status code.
func (e *exportError) code() codes.Code {
	if e.grpc == 0 {
		return grpcCodeForHTTP(e.http)
	}
	return e.grpc
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
