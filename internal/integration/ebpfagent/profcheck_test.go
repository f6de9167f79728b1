package ebpfagent_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/ebpfagent"
	"github.com/flamehouse/flamehouse/internal/pproftest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
	"github.com/flamehouse/flamehouse/pkg/pprofconv"
	"github.com/flamehouse/flamehouse/pkg/selfprofile"
)

// The profcheck corpus. profcheck (github.com/open-telemetry/sig-profiling,
// its cmd/profcheck; the module proxy refuses the module, so it is built
// from a checkout outside the repository and never run by the tests) was
// run over every payload below, written out by this file with
// FLAMEHOUSE_PROFCHECK_OUT=<dir>; testdata/profcheck.golden records what it
// said per payload, and what Flamehouse's validator says, with a note
// wherever the two differ. The tests hold the validator to that record.
const (
	corpusDir    = "testdata/agent"
	goldenFile   = "testdata/profcheck.golden"
	profcheckOut = "FLAMEHOUSE_PROFCHECK_OUT"
	// mutationBase is the agent request the broken variants start from.
	mutationBase = "agent/cpu-001"
)

// payload is one corpus entry: its name in the golden file and its bytes.
type payload struct {
	name string
	data []byte
}

// agentCorpus reads the real agent requests captured by the proxy
// (testdata/agent/*.pb.gz).
func agentCorpus(t *testing.T) []payload {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.pb.gz"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "the captured agent requests")
	var out []payload
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		require.NoError(t, err)
		data, err := io.ReadAll(zr)
		require.NoError(t, err)
		out = append(out, payload{name: "agent/" + strings.TrimSuffix(filepath.Base(f), ".pb.gz"), data: data})
	}
	return out
}

// mutations are broken variants of a real agent request, one fault each,
// each something profcheck or the OTLP specification rules out.
func mutations(t *testing.T, base []byte) []payload {
	t.Helper()
	mutate := func(name string, change func(*collectorpb.ExportProfilesServiceRequest)) payload {
		var req collectorpb.ExportProfilesServiceRequest
		require.NoError(t, proto.Unmarshal(base, &req))
		change(&req)
		data, err := proto.Marshal(&req)
		require.NoError(t, err)
		return payload{name: "mutated/" + name, data: data}
	}
	first := func(req *collectorpb.ExportProfilesServiceRequest) *pb.Profile {
		return req.GetResourceProfiles()[0].GetScopeProfiles()[0].GetProfiles()[0]
	}
	return []payload{
		mutate("stack-index-out-of-range", func(r *collectorpb.ExportProfilesServiceRequest) {
			first(r).Samples[0].StackIndex = int32(len(r.GetDictionary().GetStackTable()) + 5)
		}),
		mutate("string-table-sentinel", func(r *collectorpb.ExportProfilesServiceRequest) { r.Dictionary.StringTable[0] = "not empty" }),
		mutate("timestamp-outside-window", func(r *collectorpb.ExportProfilesServiceRequest) {
			p := first(r)
			p.Samples[0].TimestampsUnixNano[0] = p.GetTimeUnixNano() + p.GetDurationNano() + uint64(time.Second)
		}),
		mutate("duplicate-attribute-key", func(r *collectorpb.ExportProfilesServiceRequest) {
			s := first(r).Samples[0]
			s.AttributeIndices = append(s.AttributeIndices, s.GetAttributeIndices()[0])
		}),
		mutate("link-short-trace-id", func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.LinkTable = append(r.Dictionary.LinkTable, &pb.Link{TraceId: []byte{1, 2, 3, 4}, SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8}})
			first(r).Samples[0].LinkIndex = int32(len(r.Dictionary.LinkTable) - 1)
		}),
		mutate("values-timestamps-mismatch", func(r *collectorpb.ExportProfilesServiceRequest) {
			s := first(r).Samples[0]
			s.Values = make([]int64, len(s.GetTimestampsUnixNano())+1)
		}),
		mutate("mapping-start-after-limit", func(r *collectorpb.ExportProfilesServiceRequest) {
			m := r.Dictionary.MappingTable[len(r.Dictionary.MappingTable)-1]
			m.MemoryStart, m.MemoryLimit = m.GetMemoryLimit()+1, m.GetMemoryStart()
		}),
		mutate("no-profiles", func(r *collectorpb.ExportProfilesServiceRequest) {
			r.ResourceProfiles[0].ScopeProfiles[0].Profiles = nil
		}),
		mutate("attribute-table-sentinel", func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.AttributeTable[0] = &pb.KeyValueAndUnit{KeyStrindex: 1, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 1}}}
		}),
		mutate("negative-line", func(r *collectorpb.ExportProfilesServiceRequest) {
			for _, loc := range r.GetDictionary().GetLocationTable() {
				if len(loc.GetLines()) > 0 {
					loc.Lines[0].Line = -1
					return
				}
			}
		}),
	}
}

// produced are payloads Flamehouse itself sends: the self-profiler's (CPU
// and heap, captured from a selfprofile.Profiler sending to a local
// endpoint), `flamehouse import`'s conversion of a real CPU profile
// (pprofconv, which the self-profiler uses too) and profilegen's reports.
func produced(t *testing.T) []payload {
	t.Helper()
	var out []payload
	for i, body := range selfProfilePayloads(t) {
		out = append(out, payload{name: fmt.Sprintf("flamehouse/selfprofile-%d", i), data: body})
	}

	cpu := filepath.Join(t.TempDir(), "cpu.pprof")
	pproftest.RecordCPU(t, cpu, 300*time.Millisecond)
	raw, err := os.ReadFile(cpu)
	require.NoError(t, err)
	prof, err := profile.ParseData(raw)
	require.NoError(t, err)
	req, err := pprofconv.Convert(prof, pprofconv.Options{ResourceAttributes: []string{"service.name", "imported"}, ScopeName: "flamehouse/import"})
	require.NoError(t, err)
	out = append(out, payload{name: "flamehouse/import-cpu", data: marshal(t, req)})

	cfg := profilegen.DefaultConfig()
	cfg.Pods, cfg.Stacks, cfg.Functions, cfg.Locations, cfg.SamplesPerSecond = 3, 200, 300, 500, 200
	start := time.Now().Add(-time.Minute).Truncate(time.Second)
	for i, r := range profilegen.New(cfg).NodeReports(start, 2) {
		out = append(out, payload{name: fmt.Sprintf("flamehouse/profilegen-%d", i), data: marshal(t, r)})
	}
	return out
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	data, err := proto.Marshal(m)
	require.NoError(t, err)
	return data
}

// selfProfilePayloads runs the self-profiler for a little over one CPU
// window against a local OTLP/HTTP endpoint and returns what it posted.
func selfProfilePayloads(t *testing.T) [][]byte {
	t.Helper()
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		zr, err := gzip.NewReader(r.Body)
		if err == nil {
			var body []byte
			if body, err = io.ReadAll(zr); err == nil {
				mu.Lock()
				bodies = append(bodies, body)
				mu.Unlock()
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(marshal(t, &collectorpb.ExportProfilesServiceResponse{}))
	}))
	defer srv.Close()
	cfg := selfprofile.DefaultConfig()
	cfg.Interval, cfg.Traces = time.Second, false
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		selfprofile.New(cfg, srv.URL, "", slog.New(slog.DiscardHandler)).Run(ctx)
	}()
	// Until the first heap and CPU profiles are posted (one CPU window of a
	// second, later on a loaded machine), with a CPU kept busy so that the
	// window has samples.
	received := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(bodies)
	}
	for deadline := time.Now().Add(time.Minute); received() < 2 && time.Now().Before(deadline); {
		_ = bytes.Repeat([]byte("x"), 1<<16)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(bodies), 2, "the self-profiler's first heap profile and first CPU profile")
	return bodies
}

// verdict is what Flamehouse's validator says of a payload: pass when the
// whole request is accepted, else fail and why.
func verdict(data []byte) (string, string) {
	res, err := convert.Protobuf(data, convert.DefaultOptions(""))
	if err != nil {
		return "fail", err.Error()
	}
	defer res.Release()
	if len(res.Rejected) > 0 {
		return "fail", fmt.Sprint(res.Rejected)
	}
	return "pass", ""
}

// TestValidatorAgreesWithProfcheck runs Flamehouse's validator
// (pkg/ingest/convert) over the corpus — real agent requests, broken
// variants of one, Flamehouse's own payloads — and holds it to the
// verdicts recorded in testdata/profcheck.golden: profcheck's, and ours
// where a note documents why they differ.
func TestValidatorAgreesWithProfcheck(t *testing.T) {
	agent := agentCorpus(t)
	i := slices.IndexFunc(agent, func(p payload) bool { return p.name == mutationBase })
	require.NotEqual(t, -1, i, "the mutations' base request %s", mutationBase)
	corpus := slices.Concat(agent, mutations(t, agent[i].data), produced(t))
	if dir := os.Getenv(profcheckOut); dir != "" {
		for _, p := range corpus {
			path := filepath.Join(dir, p.name+".pb")
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o750))
			require.NoError(t, os.WriteFile(path, p.data, 0o600))
		}
		t.Logf("wrote %d payloads to %s for profcheck", len(corpus), dir)
	}
	golden, err := ebpfagent.ReadVerdicts(goldenFile)
	require.NoError(t, err)
	agree := 0
	for _, p := range corpus {
		want, ok := golden[p.name]
		require.True(t, ok, "%s has no verdict in %s: run profcheck on it (%s) and record it", p.name, goldenFile, profcheckOut)
		got, why := verdict(p.data)
		require.Equal(t, want.Flamehouse, got, "%s: validator says %s (%s)", p.name, got, why)
		if want.Flamehouse == want.Profcheck {
			agree++
		} else {
			require.NotEmpty(t, want.Note, "%s: profcheck says %s, Flamehouse %s: the golden file must say why", p.name, want.Profcheck, want.Flamehouse)
		}
		t.Logf("%-45s profcheck=%s flamehouse=%s %s", p.name, want.Profcheck, got, why)
	}
	t.Logf("%d of %d payloads get profcheck's verdict; the others differ as documented", agree, len(corpus))
}
