package plugintest

import (
	"strings"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// Report is a small eBPF-shaped report and what converting it yields.
func Report(t *testing.T, at time.Time) (*collectorpb.ExportProfilesServiceRequest, *model.Batch) {
	t.Helper()
	cfg := profilegen.DefaultConfig()
	cfg.Stacks, cfg.Pods, cfg.SamplesPerSecond, cfg.Locations, cfg.Functions = 300, 4, 200, 2000, 500
	return querytest.Report(t, cfg, at)
}

// CPUOnly keeps the samples of CPU profiles (a querytest.Top filter).
func CPUOnly(s *model.Sample) bool { return s.Meta.ProfileType == CPUType }

// WithoutMark is a label without a frame kind's mark.
func WithoutMark(label string) string {
	for _, m := range []string{" [kernel]", " [native]"} {
		if l, ok := strings.CutSuffix(label, m); ok {
			return l
		}
	}
	return label
}

// RequestStats is what one export request holds: its samples, their
// events (timestamps) and CPU time (events × period).
type RequestStats struct {
	Samples, Events, CPUNanos int64
}

// CountRequest counts a request's samples and events and its CPU time
// (events × period), from the request alone.
func CountRequest(req *collectorpb.ExportProfilesServiceRequest) RequestStats {
	var st RequestStats
	for _, rp := range req.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			for _, p := range sp.GetProfiles() {
				for _, s := range p.GetSamples() {
					n := int64(len(s.GetTimestampsUnixNano()))
					st.Samples++
					st.Events += n
					st.CPUNanos += n * p.GetPeriod()
				}
			}
		}
	}
	return st
}
