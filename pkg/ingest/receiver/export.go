package receiver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc/codes"

	"github.com/flamehouse/flamehouse/pkg/ingest/pipeline"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
)

// Writer commits a batch's rows; *writer.Writer implements it.
type Writer = pipeline.Writer

// exportError is a non-success answer as each protocol states it.
type exportError struct {
	grpc       codes.Code
	http       int
	msg        string
	retryAfter time.Duration
	// reason labels the requests metric.
	reason string
	// rowsHeld says that the writer may still hold the request's rows,
	// which alias its payload: a write failed, or the request's context
	// ended while its rows were queued (they may still be written).
	rowsHeld bool
}

func (e *exportError) Error() string { return e.msg }

// Version header of the OTLP profiles development schema (opentelemetry-proto
// PR #857, honoured by the Collector since v0.163): absent or "1".
const (
	versionHeader    = "OTLP-Profiles-Development-Version"
	versionMetadata  = "otlp-profiles-development-version"
	supportedVersion = "1"
)

// checkVersion validates the version header's values before decoding.
func checkVersion(values []string) *exportError {
	switch {
	case len(values) == 0:
		return nil
	case len(values) > 1:
		return badRequest("version", "%s was sent %d times; send it once", versionHeader, len(values))
	case values[0] != supportedVersion:
		return badRequest("version", "unsupported %s %q: this server speaks version %s (OTLP profiles v1development, proto v1.10/v1.11)",
			versionHeader, values[0], supportedVersion)
	}
	return nil
}

func badRequest(reason, format string, args ...any) *exportError {
	return &exportError{grpc: codes.InvalidArgument, http: http.StatusBadRequest, msg: fmt.Sprintf(format, args...), reason: reason}
}

// retryable answers Unavailable / 503 (or ResourceExhausted / 429 for
// limits), with a Retry-After hint.
func retryable(resourceExhausted bool, after time.Duration, reason, format string, args ...any) *exportError {
	e := &exportError{
		grpc: codes.Unavailable, http: http.StatusServiceUnavailable, msg: fmt.Sprintf(format, args...),
		retryAfter: max(after, time.Second), reason: reason,
	}
	if resourceExhausted {
		e.grpc, e.http = codes.ResourceExhausted, http.StatusTooManyRequests
	}
	return e
}

// export validates, converts and writes one request (its protobuf
// encoding) for a tenant through the pipeline, and states the outcome as
// OTLP answers it: partial_success for rejected profiles, InvalidArgument /
// 400 for a request that cannot be stored, a retryable error when the rows
// were not committed. Rate limits apply between conversion and write.
func (r *Receiver) export(ctx context.Context, tenant string, payload []byte) (*collectorpb.ExportProfilesServiceResponse, *exportError) {
	out, err := r.pipeline.Export(ctx, pipeline.Request{
		Tenant: tenant, Payload: payload,
		Admit: func(events int64) error {
			if eerr := r.admit(tenant, events); eerr != nil {
				return eerr
			}
			return nil
		},
	})
	annotate(ctx, tenant, out.Profiles, len(out.Rejected), out.Events)
	if err != nil {
		var invalid *pipeline.InvalidError
		var werr *pipeline.WriteError
		var eerr *exportError
		switch {
		case errors.As(err, &invalid):
			return nil, badRequest(string(invalid.Reason), "%s", invalid.Message)
		case errors.As(err, &eerr):
			return nil, eerr
		case errors.As(err, &werr):
			return nil, writeFailure(werr.Err)
		}
		return nil, writeFailure(err)
	}
	resp := &collectorpb.ExportProfilesServiceResponse{}
	if len(out.Rejected) > 0 {
		resp.PartialSuccess = &collectorpb.ExportProfilesPartialSuccess{
			RejectedProfiles: int64(len(out.Rejected)), ErrorMessage: out.Summary,
		}
	}
	return resp, nil
}

// admit applies the tenant's rate limit to a request of events.
func (r *Receiver) admit(tenant string, events int64) *exportError {
	ok, wait := r.limiter.allow(tenant, events, time.Now())
	switch {
	case ok:
		return nil
	case wait < 0:
		return retryable(true, time.Minute, "rate_limited", "the request carries %d samples, more than tenant %q may send at once "+
			"(limits.burst); send smaller requests or raise the burst", events, tenant)
	}
	return retryable(true, wait, "rate_limited", "tenant %q is over its limit of %g samples/s; retry in %s",
		tenant, r.cfg.limitsFor(tenant).SamplesPerSecond, wait.Round(time.Millisecond))
}

// writeFailure maps a writer error to a retryable answer: nothing of the
// request was acknowledged, the sender keeps it and tries again.
func writeFailure(err error) *exportError {
	var e *exportError
	switch {
	case errors.Is(err, writer.ErrQueueFull):
		e = retryable(true, time.Second, "queue_full", "the ingest queue is full: %v", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		e = retryable(false, 2*time.Second, "timeout", "rows were not committed in time: %v", err)
	default:
		e = retryable(false, 2*time.Second, "unavailable", "ClickHouse is not accepting rows: %v", err)
	}
	e.rowsHeld = true
	return e
}

func retryAfterHeader(d time.Duration) string {
	return strconv.Itoa(int(max(d, time.Second).Round(time.Second) / time.Second))
}
