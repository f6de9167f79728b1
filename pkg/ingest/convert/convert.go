// Package convert validates OTLP profiles (v1development, proto v1.10 and
// v1.11) and turns them into Flamehouse rows: summed samples, deduplicated
// stacks, frames and series.
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
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
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
}

// DefaultOptions returns the defaults for a tenant.
func DefaultOptions(tenant string) Options {
	return Options{Tenant: tenant, CPUSamplesAsTime: true, MaxStackDepth: 2048, MaxFutureSkew: time.Hour, Now: time.Now}
}

// Result is a converted request.
type Result struct {
	// Batch holds the rows of every accepted profile.
	Batch *model.Batch
	// Profiles counts the profiles in the request.
	Profiles int
	// Rejected lists the profiles that were not accepted, and why.
	Rejected []Rejection
}

// Accepted is the number of profiles whose rows are in the batch.
func (r *Result) Accepted() int { return r.Profiles - len(r.Rejected) }

// Convert validates a request and converts its valid profiles. It returns
// a *RequestError when the request as a whole cannot be used.
func Convert(req *collectorpb.ExportProfilesServiceRequest, opts Options) (*Result, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxStackDepth <= 0 {
		opts.MaxStackDepth = 2048
	}
	if hasUnknown(req) {
		return nil, unknownFieldsError("the export request")
	}
	dict := req.GetDictionary()
	if dict == nil {
		dict = &pb.ProfilesDictionary{}
	}
	if err := checkDictionary(dict); err != nil {
		return nil, err
	}
	c := newConverter(dict, opts)
	res := &Result{Batch: model.NewBatch()}
	for ri, rp := range req.GetResourceProfiles() {
		c.resource(ri, rp, res)
	}
	return res, nil
}

// resource converts one ResourceProfiles.
func (c *converter) resource(ri int, rp *pb.ResourceProfiles, res *Result) {
	path := fmt.Sprintf("resource_profiles[%d]", ri)
	count := 0
	for _, sp := range rp.GetScopeProfiles() {
		count += len(sp.GetProfiles())
	}
	res.Profiles += count
	rejectAll := func(err error) {
		for si, sp := range rp.GetScopeProfiles() {
			for pi := range sp.GetProfiles() {
				res.Rejected = append(res.Rejected, rejection(fmt.Sprintf("%s.scope_profiles[%d].profiles[%d]", path, si, pi), err))
			}
		}
	}
	if hasUnknown(rp) || hasUnknown(rp.GetResource()) {
		rejectAll(unknownFields(path))
		return
	}
	attrs, err := c.keyValues(rp.GetResource().GetAttributes())
	if err != nil {
		rejectAll(wrap(err, path+".resource.attributes"))
		return
	}
	for si, sp := range rp.GetScopeProfiles() {
		spath := fmt.Sprintf("%s.scope_profiles[%d]", path, si)
		series, err := c.series(attrs, sp)
		if err != nil {
			for pi := range sp.GetProfiles() {
				res.Rejected = append(res.Rejected, rejection(fmt.Sprintf("%s.profiles[%d]", spath, pi), wrap(err, spath)))
			}
			continue
		}
		// A pprof-style scope sends CPU time itself (cpu/nanoseconds) next to
		// the sample counts: converting the counts too would count twice.
		cpuAsTime := c.opts.CPUSamplesAsTime && !c.hasCPUTimeProfile(sp)
		for pi, p := range sp.GetProfiles() {
			ppath := fmt.Sprintf("%s.profiles[%d]", spath, pi)
			rows, err := c.profile(p, cpuAsTime)
			if err != nil {
				res.Rejected = append(res.Rejected, rejection(ppath, err))
				continue
			}
			rows.addTo(res.Batch, series)
		}
		res.Batch.Series = append(res.Batch.Series, series)
	}
}

// series builds the series of a scope: resource attributes plus the scope's
// name, version and attributes.
func (c *converter) series(resource map[string]string, sp *pb.ScopeProfiles) (*model.Series, error) {
	if hasUnknown(sp) || hasUnknown(sp.GetScope()) {
		return nil, unknownFields("scope")
	}
	attrs := make(map[string]string, len(resource)+4)
	for k, v := range resource {
		attrs[k] = v
	}
	if scope := sp.GetScope(); scope != nil {
		scopeAttrs, err := c.keyValues(scope.GetAttributes())
		if err != nil {
			return nil, wrap(err, "scope.attributes")
		}
		for k, v := range scopeAttrs {
			if _, isResource := attrs[k]; !isResource {
				attrs[k] = v
			}
		}
		if scope.GetName() != "" {
			attrs["otel.scope.name"] = scope.GetName()
		}
		if scope.GetVersion() != "" {
			attrs["otel.scope.version"] = scope.GetVersion()
		}
	}
	return model.NewSeries(c.opts.Tenant, ServiceName(attrs), attrs), nil
}

// hasCPUTimeProfile reports whether a scope has a cpu/nanoseconds profile.
func (c *converter) hasCPUTimeProfile(sp *pb.ScopeProfiles) bool {
	for _, p := range sp.GetProfiles() {
		typ, err1 := c.str(p.GetSampleType().GetTypeStrindex(), "")
		unit, err2 := c.str(p.GetSampleType().GetUnitStrindex(), "")
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

// keyValues resolves resource or scope attributes, whose keys and string
// values may be references into the dictionary's string table.
func (c *converter) keyValues(kvs []*commonpb.KeyValue) (map[string]string, error) {
	out := make(map[string]string, len(kvs))
	for i, kv := range kvs {
		if hasUnknown(kv) {
			return nil, unknownFields(fmt.Sprintf("attributes[%d]", i))
		}
		key := kv.GetKey()
		if idx := kv.GetKeyStrindex(); idx != 0 {
			if key != "" {
				return nil, invalid(ReasonInvalidAttribute, "attributes[%d] sets both key and key_strindex", i)
			}
			s, err := c.str(idx, "key_strindex")
			if err != nil {
				return nil, wrap(err, fmt.Sprintf("attributes[%d]", i))
			}
			key = s
		}
		if key == "" {
			continue
		}
		value, err := c.anyValue(kv.GetValue())
		if err != nil {
			return nil, wrap(err, fmt.Sprintf("attributes[%d]", i))
		}
		out[key] = value
	}
	return out, nil
}

// hexID renders a trace or span id as otel_traces stores it.
func hexID(b []byte) string {
	for _, x := range b {
		if x != 0 {
			return hex.EncodeToString(b)
		}
	}
	return ""
}

// profileType names a profile Pyroscope-style,
// name:sampleType:sampleUnit:periodType:periodUnit, and returns the factor
// that turns its values into the named unit.
func profileType(sampleType, sampleUnit, periodType, periodUnit string, period int64, cpuAsTime bool) (string, int64) {
	if cpuAsTime && sampleType == "samples" && sampleUnit == "count" && periodType == "cpu" && periodUnit == "nanoseconds" && period > 0 {
		return "process_cpu:cpu:nanoseconds:cpu:nanoseconds", period
	}
	if periodType == "" {
		periodType, periodUnit = sampleType, sampleUnit
	}
	parts := []string{profileName(sampleType, periodType), sampleType, sampleUnit, periodType, periodUnit}
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, ":", "_")
	}
	return strings.Join(parts, ":"), 1
}

// profileName is the first part of a profile type id.
func profileName(sampleType, periodType string) string {
	switch {
	case periodType == "cpu":
		return "process_cpu"
	case periodType == "space", strings.HasPrefix(sampleType, "alloc_"), strings.HasPrefix(sampleType, "inuse_"):
		return "memory"
	case sampleType == "goroutine", sampleType == "goroutines":
		return "goroutines"
	case periodType != "":
		return periodType
	case sampleType != "":
		return sampleType
	}
	return "unknown"
}
