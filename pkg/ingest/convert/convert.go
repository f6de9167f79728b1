// Package convert validates OTLP profiles (v1development, proto v1.10 and
// v1.11) and turns them into Flamehouse rows: summed samples, deduplicated
// stacks, frames and series.
//
// It works on the flat tables of package otlpwire: every dictionary entry
// is resolved at most once per request, strings alias the payload, and
// rows, frames and attribute sets live in a few per-request arrays, so the
// cost per event is a handful of array lookups.
//
// Validation follows profcheck, the OpenTelemetry profiling SIG's
// conformance checker: every index is checked against its table, index 0
// means "unset", sentinels must be zero values, attribute keys unique, link
// ids of the right length, sample shapes consistent and timestamps inside
// the profile's time window. A problem in one profile rejects that profile
// only; problems in the shared dictionary, and fields this schema version
// does not know (the mark of an older, renumbered schema), reject the whole
// request.
package convert

import (
	"errors"
	"fmt"
	"sync"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/ingest/otlpwire"
)

// Options steer a conversion.
type Options struct {
	// Tenant is stored on every row.
	Tenant string
	// CPUSamplesAsTime stores "samples/count" profiles sampled on a
	// "cpu/nanoseconds" period as CPU time (count × period), under the
	// profile type process_cpu:cpu:nanoseconds:cpu:nanoseconds.
	CPUSamplesAsTime bool
	// MaxStackDepth caps frames per stack (inlined frames included); deeper
	// stacks keep their root-most frames and end in a "[truncated]" frame.
	MaxStackDepth int
	// MaxFutureSkew rejects profiles with timestamps this far in the future.
	MaxFutureSkew time.Duration
	// Now returns the receive time (used for profiles without a time).
	Now func() time.Time
	// AdjustDecoded, when set, changes a payload's decoding before it is
	// validated: the Collector exporter undoes there what pdata's encoder
	// adds to a request (pdatawire.Encode), so that the request is
	// answered as the exporter received it.
	AdjustDecoded func(*otlpwire.Request)
}

// DefaultOptions returns the defaults for a tenant.
func DefaultOptions(tenant string) Options {
	return Options{Tenant: tenant, CPUSamplesAsTime: true, MaxStackDepth: 2048, MaxFutureSkew: time.Hour, Now: time.Now}
}

// Result is a converted request.
type Result struct {
	// Batch holds the rows of every accepted profile. Its strings alias
	// the payload.
	Batch *model.Batch
	// Profiles counts the profiles in the request.
	Profiles int
	// Rejected lists the profiles that were not accepted, and why.
	Rejected []Rejection
}

// Accepted is the number of profiles whose rows are in the batch.
func (r *Result) Accepted() int { return r.Profiles - len(r.Rejected) }

// Convert validates a decoded request and converts its valid profiles. It
// encodes the request and converts the bytes: the converter works on the
// wire form (see Protobuf).
func Convert(req *collectorpb.ExportProfilesServiceRequest, opts Options) (*Result, error) {
	payload, err := proto.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	return Protobuf(payload, opts)
}

// Protobuf decodes an ExportProfilesServiceRequest's protobuf encoding and
// converts its valid profiles. It returns a *RequestError when the request
// as a whole cannot be used. The result's strings alias payload, which
// must not change while the result is in use.
func Protobuf(payload []byte, opts Options) (*Result, error) {
	dec, _ := decoders.Get().(*otlpwire.Decoder)
	if dec == nil {
		dec = new(otlpwire.Decoder)
	}
	defer releaseDecoder(dec, len(payload))
	req, err := dec.Decode(payload)
	if err != nil {
		return nil, &RequestError{Reason: ReasonMalformed, Message: "rejected the request: it is not a valid protobuf ExportProfilesServiceRequest: " + err.Error()}
	}
	if opts.AdjustDecoded != nil {
		opts.AdjustDecoded(req)
	}
	return Decoded(req, opts) // the result refers to the payload, never to the decoder's tables
}

// decoders keeps the decoders of finished conversions: the decoded tables
// were the largest allocation of a conversion after its frames (about
// three times the payload), and a stream of similar requests reuses them.
var decoders sync.Pool

// maxPooledPayload is the largest payload whose decoder is kept: the
// tables of a rare huge request are left to the garbage collector.
const maxPooledPayload = 8 << 20

func releaseDecoder(dec *otlpwire.Decoder, payload int) {
	if payload > maxPooledPayload {
		return
	}
	dec.Reset()
	decoders.Put(dec)
}

// Decoded converts a request that is already decoded: by otlpwire.Decode
// (Protobuf), or filled from the Collector's pdata by the Collector
// exporter, which must give what Decode gives for the request's encoding.
// The result's strings alias req's.
func Decoded(req *otlpwire.Request, opts Options) (*Result, error) {
	res, err := convertValid(req, opts)
	var re *RequestError
	if errors.As(err, &re) {
		re.Profiles = countProfiles(req)
	}
	return res, err
}

func countProfiles(req *otlpwire.Request) int {
	n := 0
	for ri := range req.Resources {
		for si := range req.Resources[ri].Scopes {
			n += len(req.Resources[ri].Scopes[si].Profiles)
		}
	}
	return n
}

func convertValid(req *otlpwire.Request, opts Options) (*Result, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxStackDepth <= 0 {
		opts.MaxStackDepth = 2048
	}
	if req.Unknown {
		return nil, unknownFieldsError("the export request")
	}
	if err := checkDictionary(req); err != nil {
		return nil, err
	}
	c := newConverter(req, opts)
	res := &Result{Batch: model.NewBatch()}
	c.reserveRows(res.Batch)
	for ri := range req.Resources {
		c.resource(ri, &req.Resources[ri], res)
	}
	c.emitSymbols(res.Batch)
	res.Batch.ReleaseSymbols = (&symbolArrays{frames: c.frames, stackIDs: c.stackIDs}).put
	c.release()
	return res, nil
}

// resource converts one ResourceProfiles.
func (c *converter) resource(ri int, rp *otlpwire.ResourceProfiles, res *Result) {
	path := func() string { return fmt.Sprintf("resource_profiles[%d]", ri) }
	for _, sp := range rp.Scopes {
		res.Profiles += len(sp.Profiles)
	}
	rejectAll := func(err error) {
		for si := range rp.Scopes {
			for pi := range rp.Scopes[si].Profiles {
				res.Rejected = append(res.Rejected, rejection(fmt.Sprintf("%s.scope_profiles[%d].profiles[%d]", path(), si, pi), err))
			}
		}
	}
	if rp.Unknown || rp.Resource.Unknown {
		rejectAll(unknownFields(path()))
		return
	}
	attrs, err := c.keyValues(rp.Resource.Attributes)
	if err != nil {
		rejectAll(wrap(err, path()+".resource.attributes"))
		return
	}
	for si := range rp.Scopes {
		sp := &rp.Scopes[si]
		spath := func() string { return fmt.Sprintf("%s.scope_profiles[%d]", path(), si) }
		series, err := c.series(attrs, sp)
		if err != nil {
			for pi := range sp.Profiles {
				res.Rejected = append(res.Rejected, rejection(fmt.Sprintf("%s.profiles[%d]", spath(), pi), wrap(err, spath())))
			}
			continue
		}
		svc := c.serviceIndex(series)
		// A pprof-style scope sends CPU time itself (cpu/nanoseconds) next to
		// the sample counts: converting the counts too would count twice.
		cpuAsTime := c.opts.CPUSamplesAsTime && !c.hasCPUTimeProfile(sp)
		accepted := false
		for pi := range sp.Profiles {
			if err := c.profile(&sp.Profiles[pi], series, svc, cpuAsTime, res.Batch); err != nil {
				res.Rejected = append(res.Rejected, rejection(fmt.Sprintf("%s.profiles[%d]", spath(), pi), err))
				continue
			}
			accepted = true
		}
		if accepted {
			res.Batch.Series = append(res.Batch.Series, series)
		}
	}
}

// series builds the series of a scope: resource attributes plus the scope's
// name, version and attributes.
func (c *converter) series(resource map[string]string, sp *otlpwire.ScopeProfiles) (*model.Series, error) {
	if sp.Unknown || sp.Scope.Unknown {
		return nil, unknownFields("scope")
	}
	attrs := make(map[string]string, len(resource)+4)
	for k, v := range resource {
		attrs[k] = v
	}
	scope := &sp.Scope
	scopeAttrs, err := c.keyValues(scope.Attributes)
	if err != nil {
		return nil, wrap(err, "scope.attributes")
	}
	for k, v := range scopeAttrs {
		if _, isResource := attrs[k]; !isResource {
			attrs[k] = v
		}
	}
	if scope.Name != "" {
		attrs["otel.scope.name"] = scope.Name
	}
	if scope.Version != "" {
		attrs["otel.scope.version"] = scope.Version
	}
	return model.NewSeries(c.opts.Tenant, ServiceName(attrs), attrs), nil
}

// hasCPUTimeProfile reports whether a scope has a cpu/nanoseconds profile.
func (c *converter) hasCPUTimeProfile(sp *otlpwire.ScopeProfiles) bool {
	for i := range sp.Profiles {
		st := &sp.Profiles[i].SampleType
		typ, err1 := c.str(st.TypeStrindex, "")
		unit, err2 := c.str(st.UnitStrindex, "")
		if err1 == nil && err2 == nil && typ == "cpu" && unit == "nanoseconds" {
			return true
		}
	}
	return false
}

// ServiceName applies OpenTelemetry's defaulting rules: service.name, else
// "unknown_service:" + process.executable.name, else "unknown_service".
func ServiceName(attrs map[string]string) string {
	if s := attrs["service.name"]; s != "" {
		return s
	}
	if exe := attrs["process.executable.name"]; exe != "" {
		return "unknown_service:" + exe
	}
	return "unknown_service"
}
