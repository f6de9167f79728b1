package peer

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/benchenv"
	"github.com/flamehouse/flamehouse/internal/ebpfagent"
	"github.com/flamehouse/flamehouse/pkg/query/flame"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

const (
	// peerLivePrefix is the first part of the live recording that is
	// loaded again on its own (loadPrefix): the length of the hand
	// measurement, whose dictionaries (stacks, frames) were not amortised.
	peerLivePrefix = 6 * time.Minute
	// peerLiveDuty is the share of each peerLiveCycle the recording's CPU
	// work is busy (a Go loop in this process, a python3 loop), so that
	// the host's traffic has stacks without taking the shared machine.
	peerLiveDuty  = 50 * time.Millisecond
	peerLiveCycle = 100 * time.Millisecond
	// peerLivePython is the python3 loop: hashing (native code in
	// libcrypto under the interpreter's frames) half of every 100 ms.
	peerLivePython = `import hashlib, time
d = b"x" * 65536
while True:
    t = time.time()
    while time.time() - t < 0.05:
        hashlib.sha256(d).digest()
    time.sleep(0.05)
`
)

// newLiveWorkload is the live phase: the real OpenTelemetry eBPF profiler
// on this host (its default 20 Hz per core, 5 s reports) recorded for
// FLAMEHOUSE_PEER_LIVE_MINUTES minutes (default 60). It is nil, with the
// reason logged, where the agent cannot run; under FLAMEHOUSE_E2E_REQUIRE=1
// (CI) that fails the benchmark instead.
func newLiveWorkload(b *testing.B, sparse *peerWorkload) *peerWorkload {
	b.Helper()
	bin, err := ebpfagent.Available()
	if err != nil {
		if ebpfagent.Required() {
			b.Fatalf("live phase: %v (%s=1: the eBPF profiler may not be missing)", err, ebpfagent.RequireEnv)
		}
		b.Logf("live phase skipped: %v", err)
		return nil
	}
	minutes := benchenv.Int(b, "FLAMEHOUSE_PEER_LIVE_MINUTES", 60)
	w := &peerWorkload{name: "live", span: time.Duration(minutes) * time.Minute, runs: sparse.runs, senders: sparse.senders}
	w.cfg.ReportInterval = ebpfagent.DefaultReporterInterval
	w.record = func(b *testing.B, w *peerWorkload) *peerLoad {
		path := os.Getenv(peerLiveRecordingEnv)
		if path != "" {
			if rec, err := readRecording(path); err == nil {
				b.Logf("live: replaying %s (%d requests recorded from %s to %s)", path, len(rec.Requests), rec.Start.Format(time.RFC3339), rec.End.Format(time.RFC3339))
				return useRecording(b, w, rec)
			} else if !errors.Is(err, os.ErrNotExist) {
				b.Fatalf("live: %s=%s: %v", peerLiveRecordingEnv, path, err)
			}
		}
		rec := recordLive(b, w, bin)
		if path != "" {
			require.NoError(b, writeRecording(path, rec), "live: keep the recording")
			b.Logf("live: recording kept in %s", path)
		}
		return useRecording(b, w, rec)
	}
	return w
}

// peerLiveRecordingEnv names a file that keeps the live phase's recording:
// when it exists the phase replays it instead of recording (the same real
// traffic for two versions of the code, side by side), else the phase
// records and writes it there.
const peerLiveRecordingEnv = "FLAMEHOUSE_PEER_LIVE_RECORDING"

// liveRecording is what the eBPF profiler sent through the recording
// proxy, each request's payload with when it arrived, and the range the
// agent ran.
type liveRecording struct {
	Start, End time.Time
	Requests   []recordedRequest
}

type recordedRequest struct {
	Received time.Time
	Payload  []byte
}

// writeRecording writes a recording to a file (gob).
func writeRecording(path string, rec *liveRecording) error {
	return writeFile(path, func(out io.Writer) error { return gob.NewEncoder(out).Encode(rec) })
}

// readRecording reads a recording writeRecording wrote.
func readRecording(path string) (*liveRecording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var rec liveRecording
	if err := gob.NewDecoder(bufio.NewReader(f)).Decode(&rec); err != nil {
		return nil, fmt.Errorf("read the recording: %w", err)
	}
	if len(rec.Requests) == 0 || !rec.End.After(rec.Start) {
		return nil, fmt.Errorf("read the recording: %d requests from %s to %s", len(rec.Requests), rec.Start, rec.End)
	}
	return &rec, nil
}

// recordLive runs the agent for the phase's span with CPU work on the
// host, its reports going through a recording proxy into a Flamehouse
// ingest on a scratch database (the proxy's real receiver, which must
// accept every report), and returns what it recorded.
func recordLive(b *testing.B, w *peerWorkload, bin string) *liveRecording {
	b.Helper()
	scratch := newOursSide(b)
	proxy, err := ebpfagent.StartProxy(scratch.addr)
	require.NoError(b, err, "live: start the recording proxy")
	stopWork := startCPUWork(b)
	start := time.Now().UTC().Truncate(time.Second)
	agent, err := ebpfagent.Start(bin, ebpfagent.Config{CollectionAgent: proxy.Addr})
	if err != nil {
		stopWork()
		proxy.Stop()
	}
	require.NoError(b, err, "live: start the eBPF profiler")
	time.Sleep(w.span)
	stopErr := agent.Stop()
	stopWork()
	proxy.Stop() // waits for the reports being forwarded
	require.NoError(b, stopErr, "live: stop the eBPF profiler")
	rec := &liveRecording{Start: start, End: time.Now().UTC()}

	reqs := proxy.Requests()
	slices.SortStableFunc(reqs, func(x, y ebpfagent.Request) int { return x.Received.Compare(y.Received) })
	require.NotEmpty(b, reqs, "live: the agent sent no report in %s; its log:\n%s", w.span, agent.Logs())
	for i, r := range reqs {
		require.NotNil(b, r.Tally, "live: request %d does not decode", i)
		a := r.Answers[0]
		require.NoError(b, a.Err, "live: request %d: the scratch ingest's answer", i)
		require.Zero(b, a.Rejected, "live: request %d: the scratch ingest rejected part: %s", i, a.Message)
		rec.Requests = append(rec.Requests, recordedRequest{Received: r.Received, Payload: r.Payload})
	}
	return rec
}

// useRecording makes a recording the phase's load: it sets the phase's
// range and writes the requests, in the order they arrived, to the
// phase's request file; the first peerLivePrefix of them to a second one
// (loadPrefix).
func useRecording(b *testing.B, w *peerWorkload, rec *liveRecording) *peerLoad {
	b.Helper()
	w.start, w.end = rec.Start, rec.End
	w.span = w.end.Sub(w.start).Round(time.Minute) // a replayed recording's, not the knob's
	w.queryTo = w.end.Add(17 * time.Second)
	reqs := make([]ebpfagent.Request, len(rec.Requests))
	l, prefix := newPeerLoad(b), newPeerLoad(b)
	l.services = map[string]serviceCPU{}
	for i, r := range rec.Requests {
		var req collectorpb.ExportProfilesServiceRequest
		require.NoError(b, proto.Unmarshal(r.Payload, &req), "live: request %d", i)
		reqs[i] = ebpfagent.Request{Payload: r.Payload, Received: r.Received, Tally: ebpfagent.TallyRequest(&req)}
		addServiceCPU(l.services, &req)
	}
	require.NoError(b, writeRequests(l, reqs))
	if w.end.Sub(w.start) > peerLivePrefix {
		cut := slices.IndexFunc(reqs, func(r ebpfagent.Request) bool { return r.Received.Sub(w.start) >= peerLivePrefix })
		if cut > 0 {
			require.NoError(b, writeRequests(prefix, reqs[:cut]))
			l.prefix = prefix
		}
	}
	l.took = w.end.Sub(w.start)
	return l
}

// writeRequests writes recorded requests to a load's file.
func writeRequests(l *peerLoad, reqs []ebpfagent.Request) error {
	return writeFile(l.file, func(out io.Writer) error {
		for _, r := range reqs {
			if err := l.add(out, r.Payload, r.Tally); err != nil {
				return err
			}
		}
		return nil
	})
}

// startCPUWork keeps some CPU work running while the agent records: a Go
// loop in this process and a python3 loop, each busy peerLiveDuty of every
// peerLiveCycle. stop ends both.
func startCPUWork(b *testing.B) (stop func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "python3", "-c", peerLivePython)
	require.NoError(b, cmd.Start(), "live: start the python3 loop")
	var wg sync.WaitGroup
	wg.Go(func() { spin(ctx) })
	return func() {
		cancel()
		wg.Wait()
		_ = cmd.Wait() // killed by the context
	}
}

// spin hashes for peerLiveDuty of every peerLiveCycle until ctx ends.
func spin(ctx context.Context) {
	buf := make([]byte, 64<<10)
	tick := time.NewTicker(peerLiveCycle)
	defer tick.Stop()
	for {
		for t0 := time.Now(); time.Since(t0) < peerLiveDuty; {
			sum := sha256.Sum256(buf)
			buf[0] = sum[0]
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// serviceCPU is one service's CPU time in the recorded requests: all of
// it, and the part in stacks without a named frame (every location
// without lines: unsymbolized native code), or with at least one unnamed
// frame.
type serviceCPU struct {
	total, allUnnamed, anyUnnamed int64
}

// addServiceCPU adds a request's CPU time by service (resourceService).
func addServiceCPU(out map[string]serviceCPU, req *collectorpb.ExportProfilesServiceRequest) {
	d := req.GetDictionary()
	unnamed := func(loc int32) bool {
		return loc < 0 || int(loc) >= len(d.GetLocationTable()) || len(d.GetLocationTable()[loc].GetLines()) == 0
	}
	for _, rp := range req.GetResourceProfiles() {
		svc := resourceService(rp.GetResource().GetAttributes())
		c := out[svc]
		for _, sp := range rp.GetScopeProfiles() {
			for _, p := range sp.GetProfiles() {
				for _, smp := range p.GetSamples() {
					var one ebpfagent.Count
					one.AddSample(smp, p.GetPeriod())
					var locs []int32
					if i := smp.GetStackIndex(); i >= 0 && int(i) < len(d.GetStackTable()) {
						locs = d.GetStackTable()[i].GetLocationIndices()
					}
					c.add(one.EventsTimesPeriod, !slices.ContainsFunc(locs, func(l int32) bool { return !unnamed(l) }), slices.ContainsFunc(locs, unnamed))
				}
			}
		}
		out[svc] = c
	}
}

// add counts a sample's CPU time.
func (c *serviceCPU) add(nanos int64, allUnnamed, anyUnnamed bool) {
	c.total += nanos
	if allUnnamed {
		c.allUnnamed += nanos
	}
	if anyUnnamed {
		c.anyUnnamed += nanos
	}
}

// resourceService is a resource's service.name or, as the OpenTelemetry
// default names a service, "unknown_service:" and its
// process.executable.name ("unknown_service" without one).
func resourceService(attrs []*commonpb.KeyValue) string {
	svc, exe := "", ""
	for _, kv := range attrs {
		switch kv.GetKey() {
		case "service.name":
			svc = kv.GetValue().GetStringValue()
		case "process.executable.name":
			exe = kv.GetValue().GetStringValue()
		}
	}
	switch {
	case svc != "":
		return svc
	case exe != "":
		return "unknown_service:" + exe
	}
	return "unknown_service"
}

// liveAnswers is the live phase's answers by service (the label both
// systems expose for a process of the agent's: service_name).
type liveAnswers struct {
	ours, pyroscope map[string]int64 // CPU ns by service
	keptNanos       int64            // the CPU time of the services Pyroscope reports
	dropped         []string         // services Pyroscope lacks, busiest first
	whole           []string         // the services Pyroscope keeps whole, busiest first
	unexplained     map[string]int64 // CPU ns of stacks with a named frame that Pyroscope lacks, by service
	topDiff         error            // where the top functions over them differ (nil: they agree)
	busiest         string           // the recording's busiest service
	filterNote      string           // how the filtered queries were chosen
	prefix          *livePrefix
}

// compareServices checks both systems' answers by service against the
// recorded requests: ours must be each service's CPU time, and
// Pyroscope's at most the part in stacks with a named frame (it drops a
// sample whose every frame is unsymbolized); where it has less, the rest
// is kept as unexplained. A service it reports as empty or not at all is
// dropped. It returns the answers with the services
// Pyroscope dropped, busiest first.
func compareServices(recorded map[string]serviceCPU, ours, pyroscope map[string]int64) (*liveAnswers, error) {
	a := &liveAnswers{ours: ours, pyroscope: map[string]int64{}}
	var errs []error
	for _, svc := range slices.Sorted(maps.Keys(recorded)) {
		if ours[svc] != recorded[svc].total {
			errs = append(errs, fmt.Errorf("service %q: ours %d ns, the requests' %d ns", svc, ours[svc], recorded[svc].total))
		}
	}
	for _, svc := range slices.Sorted(maps.Keys(ours)) {
		if _, ok := recorded[svc]; !ok {
			errs = append(errs, fmt.Errorf("service %q: ours %d ns, not in the requests", svc, ours[svc]))
		}
	}
	a.unexplained = map[string]int64{}
	for _, svc := range slices.Sorted(maps.Keys(pyroscope)) {
		theirs, r := pyroscope[svc], recorded[svc]
		switch named := r.total - r.allUnnamed; {
		case theirs > named:
			errs = append(errs, fmt.Errorf("service %q: pyroscope's %d ns, more than the requests' %d ns less %d ns in stacks without a named frame = %d ns",
				svc, theirs, r.total, r.allUnnamed, named))
		case theirs < named:
			a.unexplained[svc] = named - theirs
		}
		if theirs > 0 {
			a.pyroscope[svc] = theirs
			a.keptNanos += theirs
		}
	}
	for svc := range ours {
		if _, ok := a.pyroscope[svc]; !ok {
			a.dropped = append(a.dropped, svc)
		}
	}
	byCPU := func(x, y string) int { return cmp.Or(cmp.Compare(ours[y], ours[x]), strings.Compare(x, y)) }
	slices.SortFunc(a.dropped, byCPU)
	all := slices.Collect(maps.Keys(ours))
	slices.SortFunc(all, byCPU)
	if len(all) > 0 {
		a.busiest = all[0]
	}
	return a, errors.Join(errs...)
}

// keptShare is the share of the CPU time Pyroscope's answers hold.
func (a *liveAnswers) keptShare(cpuNanos int64) float64 {
	return float64(a.keptNanos) / float64(cpuNanos)
}

// checkLiveAnswers requires the whole range's flame graph root of every
// ClickHouse side to be the recording's CPU time, and compares Pyroscope's
// answers by service (compareServices); the top functions of the services
// Pyroscope keeps must agree. It then picks the measured queries' service
// (the busiest Pyroscope keeps) and their filter.
func (p *peerPhase) checkLiveAnswers(b *testing.B) {
	b.Helper()
	w, all := p.w, p.w.wholeQuery()
	for _, s := range []*peerSide{p.ours, p.collector, p.exporter} {
		root := s.flameRoot(b, all, w.queryTo)
		s.roots = map[string]int64{all.name: root}
		require.Equal(b, p.load.cpuNanos, root, "live %s: the flame graph root over the whole range is the recording's CPU time", s.name)
	}
	ours := map[string]int64{}
	for _, svc := range p.ours.sqlStrings(b, "SELECT DISTINCT ServiceName FROM %s", schema.Samples) {
		ours[svc] = p.ours.flameRoot(b, w.serviceQuery(svc), w.queryTo)
	}
	theirs := map[string]int64{}
	for _, svc := range p.pyroscope.labelValues(b, "service_name", "", w.start, w.queryTo) {
		theirs[svc] = p.pyroscope.flameRoot(b, w.serviceQuery(svc), w.queryTo)
	}
	a, err := compareServices(p.load.services, ours, theirs)
	require.NoError(b, err, "live: Flamehouse's and Pyroscope's answers by service")
	p.live = a
	p.pyroscope.roots = map[string]int64{all.name: a.keptNanos}
	require.NotEmpty(b, theirs, "live: pyroscope answers for no service")

	// Where Pyroscope keeps a service whole (no stack of it without a
	// named frame), its answers can be compared as in the other phases.
	var kept []string
	for svc, v := range a.pyroscope {
		if v == ours[svc] {
			kept = append(kept, svc)
		}
	}
	require.NotEmpty(b, kept, "live: pyroscope keeps no service whole")
	slices.SortFunc(kept, func(x, y string) int { return cmp.Or(cmp.Compare(ours[y], ours[x]), strings.Compare(x, y)) })
	a.whole = kept
	quoted := make([]string, len(kept))
	for i, svc := range kept {
		quoted[i] = regexp.QuoteMeta(svc)
	}
	sel := `{service_name=~` + strconv.Quote("^("+strings.Join(quoted, "|")+")$") + `}`
	keptQuery := peerQuery{name: "flame-kept", kind: all.kind, from: w.start, ours: sel, pyro: sel}
	p.top = map[string][]flame.Function{
		p.ours.name:      p.ours.topFunctions(b, keptQuery, w.queryTo),
		p.pyroscope.name: p.pyroscope.topFunctions(b, keptQuery, w.queryTo),
	}
	oursKept := peerAnswers{root: p.ours.flameRoot(b, keptQuery, w.queryTo), top: withoutMarks(p.top[p.ours.name])}
	theirsKept := peerAnswers{root: p.pyroscope.flameRoot(b, keptQuery, w.queryTo), top: p.top[p.pyroscope.name]}
	// The roots must agree; the top functions are printed where they
	// differ (docs/performance.md: Pyroscope moves a few samples between
	// functions of the services it keeps whole).
	require.Equal(b, oursKept.root, theirsKept.root, "live: the root over the services Pyroscope keeps whole")
	a.topDiff = peerAnswersAgree(oursKept, theirsKept)

	w.service = kept[0]
	p.chooseLiveFilter(b)
}

// chooseLiveFilter picks the filtered queries' second label: the measured
// service's busiest process (process_pid), filtered in Pyroscope too where
// it keeps a label for it, else on Flamehouse's side only.
func (p *peerPhase) chooseLiveFilter(b *testing.B) {
	b.Helper()
	w := p.w
	pids := p.ours.sqlStrings(b, "SELECT DISTINCT toString(ResourceAttributes['process.pid']) FROM %s WHERE ServiceName = ?", schema.Series, w.service)
	require.NotEmpty(b, pids, "live: the processes of %s", w.service)
	var best string
	var bestCPU int64 = -1
	for _, pid := range pids {
		sel := `{service_name=` + strconv.Quote(w.service) + `, process_pid=` + strconv.Quote(pid) + `}`
		q := peerQuery{name: "flame-pid-" + pid, kind: w.wholeQuery().kind, from: w.start, ours: sel}
		if v := p.ours.flameRoot(b, q, w.queryTo); v > bestCPU {
			best, bestCPU = pid, v
		}
	}
	w.filter = peerFilter{ours: "process_pid", value: best}
	pyroLabels := p.pyroscope.labelNames(b, `{service_name=`+strconv.Quote(w.service)+`}`, w.start, w.queryTo)
	for _, name := range []string{"process.pid", "process_pid"} {
		if slices.Contains(pyroLabels, name) {
			w.filter.pyroscope = name
		}
	}
	if w.filter.pyroscope == "" {
		p.live.filterNote = fmt.Sprintf("process_pid=%s of %d processes; Pyroscope keeps no process label (its labels of %s: %s): filtered on Flamehouse's side only",
			best, len(pids), w.service, strings.Join(pyroLabels, ", "))
		return
	}
	p.live.filterNote = fmt.Sprintf("process_pid=%s of %d processes (Pyroscope's %q)", best, len(pids), w.filter.pyroscope)
}

// serviceQuery is the whole range's flame graph of one service.
func (w *peerWorkload) serviceQuery(service string) peerQuery {
	sel := `{service_name=` + strconv.Quote(service) + `}`
	return peerQuery{name: "flame-service", kind: w.wholeQuery().kind, from: w.start, ours: sel, pyro: sel}
}

// sqlStrings runs a query of one string column on one of the side's
// Flamehouse tables (format's %s is its quoted name; table is its name
// without the prefix, found among the tables measureDisk saw).
func (s *peerSide) sqlStrings(b *testing.B, format, table string, args ...any) []string {
	b.Helper()
	name := ""
	for _, d := range s.disk {
		if strings.HasSuffix(d.table, table) && (name == "" || len(d.table) < len(name)) {
			name = d.table
		}
	}
	require.NotEmpty(b, name, "%s: no %s table", s.name, table)
	rows, err := s.conn.Query(context.Background(), fmt.Sprintf(format, schema.QuoteIdentifier(s.db)+"."+schema.QuoteIdentifier(name)), args...)
	require.NoError(b, err, "%s: %s", s.name, table)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		require.NoError(b, rows.Scan(&v))
		out = append(out, v)
	}
	require.NoError(b, rows.Err())
	slices.Sort(out)
	return out
}

// labelValues are a label's values in the Pyroscope tenant over [from, to]
// (matcher "": every series).
func (s *peerSide) labelValues(b *testing.B, name, matcher string, from, to time.Time) []string {
	b.Helper()
	req := &typesv1.LabelValuesRequest{Name: name, Start: from.UnixMilli(), End: to.UnixMilli()}
	if matcher != "" {
		req.Matchers = []string{matcher}
	}
	resp, err := s.pyro.Querier(s.tenant).LabelValues(context.Background(), connect.NewRequest(req))
	require.NoError(b, err, "pyroscope: the values of %s", name)
	return resp.Msg.GetNames()
}

// labelNames are the label names of the Pyroscope tenant's series a
// matcher selects over [from, to].
func (s *peerSide) labelNames(b *testing.B, matcher string, from, to time.Time) []string {
	b.Helper()
	resp, err := s.pyro.Querier(s.tenant).LabelNames(context.Background(), connect.NewRequest(&typesv1.LabelNamesRequest{
		Matchers: []string{matcher}, Start: from.UnixMilli(), End: to.UnixMilli(),
	}))
	require.NoError(b, err, "pyroscope: the label names of %s", matcher)
	return resp.Msg.GetNames()
}

// livePrefix is the first peerLivePrefix of the recording loaded on its
// own into fresh databases: ours and the exporter's bytes at that age.
type livePrefix struct {
	load           *peerLoad
	ours, exporter *peerSide
}

// loadPrefix loads the recording's first peerLivePrefix, when it has a
// longer one, into a fresh Flamehouse ingest and a fresh exporter and
// measures both on disk (nil otherwise).
func loadPrefix(b *testing.B, w *peerWorkload, l *peerLoad) *livePrefix {
	b.Helper()
	if l.prefix == nil {
		return nil
	}
	pre := &livePrefix{load: l.prefix, ours: newOursSide(b), exporter: newExporterSide(b)}
	for _, s := range []*peerSide{pre.ours, pre.exporter} {
		s.load(b, pre.load, w.senders)
		s.measureDisk(b, w)
	}
	return pre
}

// TestCompareServicesCatchesAnyMismatch plants each kind of difference
// the live phase's answers check must catch, and reads what it keeps.
func TestCompareServicesCatchesAnyMismatch(t *testing.T) {
	recorded := map[string]serviceCPU{
		"unknown_service:python3":    {total: 600, allUnnamed: 10, anyUnnamed: 300},
		"unknown_service:peer.test":  {total: 300},
		"unknown_service:clickhouse": {total: 100, allUnnamed: 100, anyUnnamed: 100},
	}
	ours := map[string]int64{"unknown_service:python3": 600, "unknown_service:peer.test": 300, "unknown_service:clickhouse": 100}
	theirs := map[string]int64{"unknown_service:python3": 590, "unknown_service:peer.test": 300, "unknown_service:clickhouse": 0}
	a, err := compareServices(recorded, ours, theirs)
	require.NoError(t, err)
	require.Equal(t, int64(890), a.keptNanos)
	require.InDelta(t, 0.89, a.keptShare(1000), 1e-12)
	require.Equal(t, []string{"unknown_service:clickhouse"}, a.dropped)
	require.Equal(t, "unknown_service:python3", a.busiest)
	require.Empty(t, a.unexplained)
	a, err = compareServices(recorded, ours, map[string]int64{"unknown_service:python3": 580, "unknown_service:peer.test": 300})
	require.NoError(t, err, "pyroscope may lose more than its unnamed stacks: that is printed")
	require.Equal(t, map[string]int64{"unknown_service:python3": 10}, a.unexplained)

	with := func(m map[string]int64, svc string, v int64) map[string]int64 {
		out := maps.Clone(m)
		out[svc] = v
		return out
	}
	for _, tc := range []struct {
		name, want string
		ours       map[string]int64
		theirs     map[string]int64
	}{
		{"one of our values off by one", `service "unknown_service:peer.test": ours 301 ns, the requests' 300 ns`, with(ours, "unknown_service:peer.test", 301), theirs},
		{"a service of ours not in the requests", `service "unknown_service:ghost": ours 5 ns, not in the requests`, with(ours, "unknown_service:ghost", 5), theirs},
		{"a service of ours missing", `service "unknown_service:clickhouse": ours 0 ns, the requests' 100 ns`, with(ours, "unknown_service:clickhouse", 0), theirs},
		{"pyroscope's value one more", `service "unknown_service:python3": pyroscope's 591 ns, more than the requests' 600 ns less 10 ns`, ours, with(theirs, "unknown_service:python3", 591)},
		{"pyroscope keeping a sample it drops", `service "unknown_service:clickhouse": pyroscope's 100 ns`, ours, with(theirs, "unknown_service:clickhouse", 100)},
		{"a service only pyroscope has", `service "unknown_service:ghost": pyroscope's 5 ns, more than the requests' 0 ns`, ours, with(theirs, "unknown_service:ghost", 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compareServices(recorded, tc.ours, tc.theirs)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestRecordingRoundTrip: a kept recording reads back as it was written,
// and a file that holds none is an error, not an empty phase.
func TestRecordingRoundTrip(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 28, 14, 20, 0, 0, time.UTC)
	rec := &liveRecording{Start: start, End: start.Add(20 * time.Minute), Requests: []recordedRequest{
		{Received: start.Add(5 * time.Second), Payload: []byte{1, 2, 3}},
		{Received: start.Add(10 * time.Second), Payload: []byte{4}},
	}}
	path := dir + "/live.gob"
	require.NoError(t, writeRecording(path, rec))
	got, err := readRecording(path)
	require.NoError(t, err)
	require.Equal(t, rec, got)

	_, err = readRecording(dir + "/none.gob")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, writeRecording(path, &liveRecording{Start: start, End: start}))
	_, err = readRecording(path)
	require.ErrorContains(t, err, "0 requests")
}
