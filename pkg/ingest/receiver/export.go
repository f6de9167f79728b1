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

	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
)

// Writer commits a batch's rows; *writer.Writer implements it.
type Writer interface {
	Write(ctx context.Context, b *model.Batch) error
}

// exportError is a non-success answer as each protocol states it.
type exportError struct {
	grpc       codes.Code
	http       int
	msg        string
	retryAfter time.Duration
	// reason labels the requests metric.
	reason string
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
// encoding) for a tenant. The batch's strings alias payload.
func (r *Receiver) export(ctx context.Context, tenant string, payload []byte) (*collectorpb.ExportProfilesServiceResponse, *exportError) {
	opts := convert.DefaultOptions(tenant)
	opts.CPUSamplesAsTime = r.cfg.CPUSamplesAsTime
	res, err := convert.Protobuf(payload, opts)
	if err != nil {
		var re *convert.RequestError
		if errors.As(err, &re) {
			r.metrics.rejected.WithLabelValues(tenant, string(re.Reason)).Add(float64(re.Profiles))
			return nil, badRequest(string(re.Reason), "%s", re.Message)
		}
		return nil, badRequest("invalid", "%v", err)
	}
	r.metrics.received.WithLabelValues(tenant).Add(float64(res.Profiles))
	annotate(ctx, tenant, res.Profiles, len(res.Rejected), res.Batch.Events)
	for reason, n := range res.ReasonCounts() {
		r.metrics.rejected.WithLabelValues(tenant, string(reason)).Add(float64(n))
	}
	if res.Profiles > 0 && res.Accepted() == 0 {
		return nil, badRequest("all_rejected", "%s", res.Summary(maxMessageBytes))
	}
	if ok, wait := r.limiter.allow(tenant, res.Batch.Events, time.Now()); !ok {
		if wait < 0 {
			return nil, retryable(true, time.Minute, "rate_limited", "the request carries %d samples, more than tenant %q may send at once "+
				"(limits.burst); send smaller requests or raise the burst", res.Batch.Events, tenant)
		}
		return nil, retryable(true, wait, "rate_limited", "tenant %q is over its limit of %g samples/s; retry in %s",
			tenant, r.cfg.limitsFor(tenant).SamplesPerSecond, wait.Round(time.Millisecond))
	}
	if err := r.writer.Write(ctx, res.Batch); err != nil {
		return nil, writeFailure(err)
	}
	r.metrics.samples.WithLabelValues(tenant).Add(float64(res.Batch.Events))
	resp := &collectorpb.ExportProfilesServiceResponse{}
	if len(res.Rejected) > 0 {
		resp.PartialSuccess = &collectorpb.ExportProfilesPartialSuccess{
			RejectedProfiles: int64(len(res.Rejected)), ErrorMessage: res.Summary(maxMessageBytes),
		}
	}
	return resp, nil
}

// maxMessageBytes bounds partial_success and error messages.
const maxMessageBytes = 4096

// writeFailure maps a writer error to a retryable answer: nothing of the
// request was acknowledged, the sender keeps it and tries again.
func writeFailure(err error) *exportError {
	switch {
	case errors.Is(err, writer.ErrQueueFull):
		return retryable(true, time.Second, "queue_full", "the ingest queue is full: %v", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return retryable(false, 2*time.Second, "timeout", "rows were not committed in time: %v", err)
	}
	return retryable(false, 2*time.Second, "unavailable", "ClickHouse is not accepting rows: %v", err)
}

func retryAfterHeader(d time.Duration) string {
	return strconv.Itoa(int(max(d, time.Second).Round(time.Second) / time.Second))
}
