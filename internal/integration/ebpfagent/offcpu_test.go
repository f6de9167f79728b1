package ebpfagent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/ebpfagent"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// offCPUType is the id Flamehouse gives the agent's off-CPU profiles:
// sample type off_cpu/nanoseconds and no period type, so the period part
// repeats the sample type.
const offCPUType = "off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds"

// offCPUReport turns one of the agent's real CPU requests into the report
// the agent sends with -off-cpu-threshold (which cannot run here: these
// kernels have no kprobes). Its reporter (reporter/internal/pdata
// generate.go at b442421) writes an off-CPU profile as: sample type
// "off_cpu"/"nanoseconds" (tracer/systemconfig.go registers it with
// ReportValues and no period type), so no period type and period 0; per
// sample, one timestamp and one value (the nanoseconds off CPU) per event.
// Everything else — resource, scope, dictionary, stacks, sample attributes
// — is the real request's, reduced to the resources of process pid. The
// values are 1, 2, 3, … ms; it returns the request and their sum.
func offCPUReport(t *testing.T, payload []byte, pid int64) (*collectorpb.ExportProfilesServiceRequest, int64) {
	t.Helper()
	var req collectorpb.ExportProfilesServiceRequest
	require.NoError(t, proto.Unmarshal(payload, &req))
	strs := &req.Dictionary.StringTable
	str := func(s string) int32 {
		for i, have := range *strs {
			if have == s {
				return int32(i)
			}
		}
		*strs = append(*strs, s)
		return int32(len(*strs) - 1)
	}
	var kept []*pb.ResourceProfiles
	var sum, n int64
	for _, rp := range req.GetResourceProfiles() {
		if !hasPID(rp.GetResource().GetAttributes(), pid) {
			continue
		}
		for _, sp := range rp.GetScopeProfiles() {
			for _, p := range sp.GetProfiles() {
				p.SampleType = &pb.ValueType{TypeStrindex: str("off_cpu"), UnitStrindex: str("nanoseconds")}
				p.PeriodType, p.Period = nil, 0
				for _, s := range p.GetSamples() {
					s.Values = make([]int64, len(s.GetTimestampsUnixNano()))
					for i := range s.Values {
						n++
						s.Values[i] = n * int64(time.Millisecond)
						sum += s.Values[i]
					}
				}
			}
		}
		kept = append(kept, rp)
	}
	require.NotEmpty(t, kept, "a request with process %d", pid)
	req.ResourceProfiles = kept
	return &req, sum
}

func hasPID(attrs []*commonpb.KeyValue, pid int64) bool {
	for _, kv := range attrs {
		if kv.GetKey() == "process.pid" && kv.GetValue().GetIntValue() == pid {
			return true
		}
	}
	return false
}

// checkOffCPU sends off-CPU reports shaped as the agent's through the same
// proxy (so to both destinations) and reads them back: the profile type,
// the unit of the flame graph, every nanosecond.
func checkOffCPU(t *testing.T, proxy *ebpfagent.Proxy, dests []destination, w *workload, from time.Time) {
	t.Helper()
	var payload []byte
	for _, r := range proxy.Requests() {
		if r.Tally[cpuKey(w)].Samples > 0 {
			payload = r.Payload
			break
		}
	}
	require.NotNil(t, payload, "a request of the agent with the C program's samples")
	req, sum := offCPUReport(t, payload, int64(w.pid))
	resp, err := proxy.Send(context.Background(), req)
	require.NoError(t, err)
	require.Zero(t, resp.GetPartialSuccess().GetRejectedProfiles(), resp.GetPartialSuccess().GetErrorMessage())
	proxy.Drain()
	last := proxy.Requests()[len(proxy.Requests())-1]
	require.Equal(t, sum, last.Tally[ebpfagent.TallyKey{PID: int64(w.pid), Type: "off_cpu/nanoseconds"}].Values)
	for _, a := range last.Answers {
		require.NoError(t, a.Err, a.Target)
		require.Zero(t, a.Rejected, "%s: %s", a.Target, a.Message)
	}
	to := time.Now().Add(time.Minute)
	for _, d := range dests {
		var types []string
		rows, err := d.engine.Conn.Query(context.Background(), "SELECT DISTINCT ProfileType FROM "+d.tables.Qualified(schema.Samples)+" ORDER BY 1")
		require.NoError(t, err)
		for rows.Next() {
			var pt string
			require.NoError(t, rows.Scan(&pt))
			types = append(types, pt)
		}
		require.NoError(t, rows.Close())
		require.Contains(t, types, offCPUType, d.name)

		frames := run(t, d, from, to, map[string]any{"queryType": "profile", "profileTypeId": offCPUType, "labelSelector": pidSelector(w)})
		require.Positive(t, frames[0].Rows(), d.name)
		value, _ := frames[0].FieldByName("value")
		require.NotNil(t, value)
		require.Equal(t, "ns", value.Config.Unit, "%s: the off-CPU flame graph is in nanoseconds", d.name)
		total, _ := value.ConcreteAt(0)
		require.Equal(t, sum, toInt64(total), "%s: every off-CPU nanosecond sent", d.name)
		t.Logf("%s: off-CPU report of %d ns stored as %s, flame graph total %v %s", d.name, sum, offCPUType, total, value.Config.Unit)
	}
}
