package plugintest

import (
	"strings"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/ebpfagent"
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
// events and CPU time (ebpfagent.TallyRequest's).
type RequestStats struct {
	Samples, Events, CPUNanos int64
}

// CountRequest counts a request's samples and events and its CPU time,
// from the request alone, with the eBPF profiler harness's tally
// (ebpfagent.TallyRequest) summed over processes and sample types.
func CountRequest(req *collectorpb.ExportProfilesServiceRequest) RequestStats {
	var st RequestStats
	for _, c := range ebpfagent.TallyRequest(req) {
		st.Samples += c.Samples
		st.Events += c.Events
		st.CPUNanos += c.EventsTimesPeriod
	}
	return st
}
