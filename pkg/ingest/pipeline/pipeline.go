// Package pipeline is the protocol-free part of storing OTLP profiles:
// decode, validate and convert a request (package convert), account for
// what it held, and write its rows (package writer), returning only once
// they are committed. Flamehouse's OTLP receiver (package receiver) and the
// OpenTelemetry Collector exporter (collector/flamehouseexporter) both call
// Pipeline.Export, so the same request gives the same rows either way;
// each maps the Outcome and the typed errors to its own protocol: OTLP
// status codes and partial_success there, consumererror's permanent and
// retryable errors here.
package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/ingest/otlpwire"
)

// Writer commits a batch's rows; *writer.Writer implements it.
type Writer interface {
	Write(ctx context.Context, b *model.Batch) error
}

// Recorder counts what requests held; each caller records into its own
// metrics (Prometheus for the receiver, the Collector's MeterProvider for
// the exporter). Every method may be called concurrently.
type Recorder interface {
	// Received counts the profiles of a decoded request, valid or not.
	Received(tenant string, profiles int)
	// Rejected counts profiles that were not stored, by reason.
	Rejected(tenant string, reason convert.Reason, profiles int)
	// Written counts what a committed request held: sample rows and the
	// profiling events (sample timestamps or values) behind them.
	Written(tenant string, rows int, events int64)
}

// Options steer the conversion.
type Options struct {
	// CPUSamplesAsTime stores samples/count CPU profiles as CPU time (see
	// convert.Options).
	CPUSamplesAsTime bool
	// MaxMessageBytes bounds the rejection summary. Default 4096.
	MaxMessageBytes int
	// MaxConcurrentConversions, when positive, bounds the requests decoded
	// and converted at once; the others wait, holding only their payload.
	// Conversion is CPU work, so more at once than there are CPUs is not
	// faster, while each holds several times its payload in temporaries
	// until it ends. 0 (the default) does not bound them.
	MaxConcurrentConversions int
}

// DefaultMaxMessageBytes bounds rejection summaries by default.
const DefaultMaxMessageBytes = 4096

// Pipeline converts and writes export requests.
type Pipeline struct {
	w    Writer
	opts Options
	rec  Recorder
	// slots holds a token per conversion under way (nil: not bounded).
	slots chan struct{}
}

// New returns a pipeline writing through w. rec may be nil.
func New(w Writer, opts Options, rec Recorder) *Pipeline {
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if rec == nil {
		rec = nopRecorder{}
	}
	p := &Pipeline{w: w, opts: opts, rec: rec}
	if opts.MaxConcurrentConversions > 0 {
		p.slots = make(chan struct{}, opts.MaxConcurrentConversions)
	}
	return p
}

// Request is one export request.
type Request struct {
	// Tenant is stored on every row.
	Tenant string
	// Payload is the ExportProfilesServiceRequest's protobuf encoding. The
	// rows alias it until Export returns; it must not change before.
	Payload []byte
	// Decoded, when set, is the request already decoded, and Payload is
	// not used (the Collector exporter fills it from pdata; see
	// convert.Decoded). The rows alias it until Export returns.
	Decoded *otlpwire.Request
	// AdjustDecoded, when set, changes Payload's decoding before it is
	// converted (convert.Options.AdjustDecoded).
	AdjustDecoded func(*otlpwire.Request)
	// DedupToken, when set, makes the request's samples an insert of their
	// own under this deduplication token (model.Batch.DedupToken).
	DedupToken string
	// Admit, when set, is asked before writing whether a request of this
	// many events may be written now (rate limits); its error is returned
	// as it is and nothing is written.
	Admit func(events int64) error
}

// Outcome is what a request held and what became of it.
type Outcome struct {
	// Profiles counts the request's profiles; Accepted those whose rows
	// were written, Rejected (with why) those that were not.
	Profiles, Accepted int
	Rejected           []convert.Rejection
	// Rows and Events are the sample rows written and the profiling events
	// behind them.
	Rows   int
	Events int64
	// Summary names the rejected profiles and why ("" when none), within
	// Options.MaxMessageBytes.
	Summary string
}

// ReasonAllRejected is the reason of an InvalidError for a request whose
// every profile was rejected.
const ReasonAllRejected convert.Reason = "all_rejected"

// InvalidError refuses a whole request: it cannot be decoded, its shared
// dictionary is invalid, it carries fields of another schema version, or
// every one of its profiles was rejected. Nothing was written; sending it
// again cannot succeed.
type InvalidError struct {
	Reason  convert.Reason
	Message string
}

func (e *InvalidError) Error() string { return e.Message }

// WriteError says the request's rows were not committed (the writer's
// queue is full, it is shutting down, ClickHouse failed or the deadline
// passed): the request may be sent again. Err is the writer's error
// (writer.ErrQueueFull, writer.ErrClosed, *writer.WriteError or the
// context's error).
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "rows not committed: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// Export decodes, validates and converts one request and writes the rows
// of its valid profiles, returning once they are committed. The outcome
// is returned with every error (its counts say what was decoded). When
// Options.MaxConcurrentConversions is set, at most that many requests
// convert at once; the others wait. Errors: *InvalidError (nothing
// written, do not retry), Admit's error, or *WriteError (nothing
// acknowledged, retry: the rows were not committed, or the context ended
// while the request waited to convert).
func (p *Pipeline) Export(ctx context.Context, req Request) (*Outcome, error) {
	opts := convert.DefaultOptions(req.Tenant)
	opts.CPUSamplesAsTime = p.opts.CPUSamplesAsTime
	opts.AdjustDecoded = req.AdjustDecoded
	res, err := p.convert(ctx, req, opts)
	writeFailed := false
	defer func() {
		// A written batch is done with (the writer copied the symbols it
		// writes before it queued it), one not handed to the writer is
		// dropped. A failed write may still read its batch (its sender gave
		// up while it was being written): the garbage collector frees it.
		if res != nil && !writeFailed {
			res.Release()
		}
	}()
	var werr *WriteError
	if errors.As(err, &werr) {
		return &Outcome{}, err
	}
	if err != nil {
		var re *convert.RequestError
		if errors.As(err, &re) {
			p.rec.Rejected(req.Tenant, re.Reason, re.Profiles)
			return &Outcome{Profiles: re.Profiles}, &InvalidError{Reason: re.Reason, Message: re.Message}
		}
		return &Outcome{}, &InvalidError{Reason: convert.ReasonMalformed, Message: err.Error()}
	}
	out := &Outcome{
		Profiles: res.Profiles, Accepted: res.Accepted(), Rejected: res.Rejected,
		Rows: len(res.Batch.Samples), Events: res.Batch.Events, Summary: res.Summary(p.opts.MaxMessageBytes),
	}
	p.rec.Received(req.Tenant, res.Profiles)
	for reason, n := range res.ReasonCounts() {
		p.rec.Rejected(req.Tenant, reason, n)
	}
	if res.Profiles > 0 && out.Accepted == 0 {
		return out, &InvalidError{Reason: ReasonAllRejected, Message: out.Summary}
	}
	if req.Admit != nil {
		if err := req.Admit(res.Batch.Events); err != nil {
			return out, err
		}
	}
	res.Batch.DedupToken = req.DedupToken
	if err := p.w.Write(ctx, res.Batch); err != nil {
		writeFailed = true
		return out, &WriteError{Err: err}
	}
	p.rec.Written(req.Tenant, out.Rows, out.Events)
	return out, nil
}

// convert decodes and converts a request once a conversion slot is free.
// A request whose context ends while it waits gets a *WriteError: nothing
// was written, and it may be sent again.
func (p *Pipeline) convert(ctx context.Context, req Request, opts convert.Options) (*convert.Result, error) {
	if p.slots != nil {
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, &WriteError{Err: ctx.Err()}
		}
		defer func() { <-p.slots }()
	}
	if req.Decoded != nil {
		return convert.Decoded(req.Decoded, opts)
	}
	return convert.Protobuf(req.Payload, opts)
}

// RejectedError reports the profiles an exported request dropped, for
// callers that state partial success as an error (the Collector exporter).
func (o *Outcome) RejectedError() error {
	if len(o.Rejected) == 0 {
		return nil
	}
	return fmt.Errorf("dropped invalid profiles, wrote the other %d: %s", o.Accepted, o.Summary)
}

type nopRecorder struct{}

func (nopRecorder) Received(string, int)                 {}
func (nopRecorder) Rejected(string, convert.Reason, int) {}
func (nopRecorder) Written(string, int, int64)           {}
