package plugintest

import (
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/ebpfagent"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// Report is a small eBPF-shaped report and what converting it yields.
func Report(t *testing.T, at time.Time) (*collectorpb.ExportProfilesServiceRequest, *model.Batch) {
	t.Helper()
	cfg := profilegen.DefaultConfig()
	cfg.Stacks, cfg.Pods, cfg.SamplesPerSecond, cfg.Locations, cfg.Functions = 300, 4, 200, 2000, 500
	return GeneratedReport(t, cfg, at)
}

// GeneratedReport is a report of a workload at a time and what converting
// it as the ingest does yields.
func GeneratedReport(t *testing.T, cfg profilegen.Config, at time.Time) (*collectorpb.ExportProfilesServiceRequest, *model.Batch) {
	t.Helper()
	req := profilegen.New(cfg).Report(at)
	opts := convert.DefaultOptions("")
	opts.Now = func() time.Time { return at.Add(time.Minute) }
	res, err := convert.Convert(req, opts)
	require.NoError(t, err)
	require.Empty(t, res.Rejected)
	return req, res.Batch
}

// ExpectedTop computes self and total per function label from a converted
// batch, recursion counted once per stack.
func ExpectedTop(b *model.Batch, keep func(*model.Sample) bool) (self, total map[string]int64, sum int64) {
	self, total = map[string]int64{}, map[string]int64{}
	for i := range b.Samples {
		s := &b.Samples[i]
		if !keep(s) {
			continue
		}
		sym := b.Symbols[model.ServiceKey{Tenant: s.Meta.Series.Tenant, Service: s.Meta.Series.Service}]
		stacks, frames := sym.ByID()
		ids := stacks[s.StackID].FrameIDs
		sum += s.Value
		if len(ids) == 0 {
			continue
		}
		labels, types := make([]string, len(ids)), make([]string, len(ids))
		for i, id := range ids {
			labels[i], types[i] = FunctionLabel(frames[id]), frames[id].FrameType
		}
		labels = OracleMarks(labels, types)
		self[labels[len(labels)-1]] += s.Value
		seen := map[string]bool{}
		for _, l := range labels {
			if !seen[l] {
				seen[l] = true
				total[l] += s.Value
			}
		}
	}
	return self, total, sum
}

// OracleMarks marks a stack's labels by their frames' profile.frame.type
// as the datasource does (pkg/query/framekinds.go), written
// independently as the tests' oracle: kernel frames "name [kernel]",
// native frames of a stack with an interpreter's frames "name [native]",
// labels of unnamed code ("[libc.so.6]") as they are.
func OracleMarks(labels, types []string) []string {
	interpreted := false
	for _, t := range types {
		switch t {
		case "cpython", "jvm", "php", "ruby", "perl", "v8js", "dotnet", "beam", "luajit":
			interpreted = true
		}
	}
	out := make([]string, len(labels))
	for i, l := range labels {
		out[i] = l
		if strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]") {
			continue
		}
		if types[i] == "kernel" || (types[i] == "native" && interpreted) {
			out[i] = l + " [" + types[i] + "]"
		}
	}
	return out
}

// FunctionLabel is the label the datasource gives a frame (query's
// frameLabelSQL), written independently as the tests' oracle.
func FunctionLabel(f *model.Frame) string {
	switch {
	case f.FunctionName != "":
		return f.FunctionName
	case f.SystemName != "":
		return f.SystemName
	case f.MappingFile != "":
		return "[" + path.Base(f.MappingFile) + "]"
	case f.FileName != "":
		return f.FileName
	}
	return "0x" + strconv.FormatUint(f.Address, 16)
}

// CPUOnly keeps the samples of CPU profiles (an ExpectedTop filter).
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
