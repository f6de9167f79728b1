// Package querytest is the tests' oracle of the datasource's answers and
// their reader. The oracle computes what a flame graph, a table of
// functions or a total must hold from a converted workload (the
// model.Batch the ingest writes), written independently of pkg/query's
// SQL; the readers take the answer frames apart. Tests of pkg/plugin and
// the integration tests of pkg/query share them.
package querytest

import (
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// Report is a report of a generated workload at a time and what converting
// it as the ingest does yields (the batch's tenant is "": the oracle does
// not read it).
func Report(tb testing.TB, cfg profilegen.Config, at time.Time) (*collectorpb.ExportProfilesServiceRequest, *model.Batch) {
	tb.Helper()
	req := profilegen.New(cfg).Report(at)
	return req, Convert(tb, "", req, at.Add(time.Minute))
}

// Convert converts a request of a tenant as the ingest does at a time
// (now), which must accept all of it.
func Convert(tb testing.TB, tenant string, req *collectorpb.ExportProfilesServiceRequest, now time.Time) *model.Batch {
	tb.Helper()
	opts := convert.DefaultOptions(tenant)
	opts.Now = func() time.Time { return now }
	res, err := convert.Convert(req, opts)
	require.NoError(tb, err)
	require.Empty(tb, res.Rejected)
	return res.Batch
}

// Top computes self and total per function label from a converted batch,
// of the samples keep keeps, recursion counted once per stack, and the
// samples' sum.
func Top(b *model.Batch, keep func(*model.Sample) bool) (self, total map[string]int64, sum int64) {
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
		labels = MarkKinds(labels, types)
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

// MarkKinds marks a stack's labels by their frames' profile.frame.type
// as the datasource does (pkg/query/framekinds.go), written
// independently as the tests' oracle: kernel frames "name [kernel]",
// native frames of a stack with an interpreter's frames "name [native]",
// labels of unnamed code ("[libc.so.6]") as they are.
func MarkKinds(labels, types []string) []string {
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
