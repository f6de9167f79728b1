package peer

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// nan marks a figure a side does not have.
var nan = math.NaN()

// The targets of the comparison with Pyroscope (issue 25), each a ratio
// measured in the same run.
const (
	// targetBytesVsPyroscope: bytes on disk per event at most this share
	// of Pyroscope's.
	targetBytesVsPyroscope = 0.5
	// targetBytesVsFloor: bytes on disk per event at most this multiple of
	// the raw table's information floor.
	targetBytesVsFloor = 2
	// targetBytesVsExporter: at most the exporter table's bytes per event.
	targetBytesVsExporter = 1
	// targetEventsVsPyroscope: ingest events/s at least this multiple of
	// Pyroscope's.
	targetEventsVsPyroscope = 2
	// targetHeapPerRequest: the ingest's peak heap per request in flight
	// at most this multiple of the request.
	targetHeapPerRequest = 6
	// proposedHeapVsPyroscope: the ingest's peak heap growth at most this
	// share of Pyroscope's on the same load (docs/performance.md proposes
	// it in place of targetHeapPerRequest).
	proposedHeapVsPyroscope = 0.5
	// proposedLiveBytesVsPyroscope: on one host's real traffic (the live
	// phase) bytes on disk per event at most this share of Pyroscope's;
	// docs/performance.md proposes it there in place of
	// targetBytesVsPyroscope, which our raw samples, stacks and frames
	// alone exceed (coreBytes).
	proposedLiveBytesVsPyroscope = 1
	// proposedLatencyFloorMS: a flame graph at most as slow as
	// Pyroscope's or this many milliseconds, whichever is more
	// (docs/performance.md proposes it: below it our fixed cost of a few
	// statements, not the answer's work, is what is measured).
	proposedLatencyFloorMS = 50
)

// peerReport renders the comparison.
type peerReport struct {
	phases []*peerPhase
	// pyroscopeMeta is the size of Pyroscope's metastore and raft log
	// (all tenants; not counted in any phase's bytes).
	pyroscopeMeta int64
}

// metrics reports each phase's bytes per event, ingest throughput and
// data volume per side, prefixed with its name, the ratios to Flamehouse's
// ingest, and the flame graph latencies of Flamehouse and Pyroscope.
func (r *peerReport) metrics(b *testing.B) {
	b.Helper()
	for _, p := range r.phases {
		events := float64(p.load.events)
		for _, s := range p.sides() {
			b.ReportMetric(float64(s.diskBytes())/events, p.w.name+"-"+s.name+"-bytes/event")
			b.ReportMetric(s.throughput(p.load), p.w.name+"-"+s.name+"-events/s")
		}
		b.ReportMetric(float64(p.exporter.diskBytes())/float64(p.ours.diskBytes()), p.w.name+"-bytes-ratio")
		b.ReportMetric(float64(p.pyroscope.diskBytes())/float64(p.ours.diskBytes()), p.w.name+"-pyroscope/flamehouse-bytes")
		b.ReportMetric(p.ours.throughput(p.load)/p.pyroscope.throughput(p.load), p.w.name+"-flamehouse/pyroscope-events")
		b.ReportMetric(p.collector.throughput(p.load)/p.exporter.throughput(p.load), p.w.name+"-collector/exporter-events")
		b.ReportMetric(p.collector.throughput(p.load)/p.ours.throughput(p.load), p.w.name+"-collector/flamehouse-events")
		b.ReportMetric(p.ours.inuse.perRequest(p.load, p.w.senders), p.w.name+"-flamehouse-peak-heap/request")
		if p.ours.live.growth > 0 {
			b.ReportMetric(p.ours.live.perRequest(p.load, p.w.senders), p.w.name+"-flamehouse-peak-live-heap/request")
		}
		if p.pyroscope.inuse.growth > 0 {
			b.ReportMetric(float64(p.ours.inuse.growth)/float64(p.pyroscope.inuse.growth), p.w.name+"-flamehouse/pyroscope-peak-heap")
		}
		b.ReportMetric(events, p.w.name+"-events")
		b.ReportMetric(float64(p.load.samples), p.w.name+"-exporter-rows")
		for _, q := range p.w.queries() {
			if q.kind == query.TypeProfile {
				for _, s := range []*peerSide{p.ours, p.pyroscope} {
					b.ReportMetric(s.p50(q.name+"-cold"), p.w.name+"-"+s.name+"-"+q.name+"-cold-ms")
					b.ReportMetric(s.p50(q.name), p.w.name+"-"+s.name+"-"+q.name+"-ms")
				}
			}
		}
	}
}

// String is the side-by-side tables, one per phase, with the targets'
// ratios.
func (r *peerReport) String() string {
	var sb strings.Builder
	first := r.phases[0].w
	fmt.Fprintf(&sb, "\nPeer benchmark: Flamehouse (its ingest; the Flamehouse Collector), the contrib exporter's otel_profiles, Grafana Pyroscope\n")
	fmt.Fprintf(&sb, "loading: %d requests in flight on each path, one path at a time; fresh databases and a Pyroscope tenant per phase\n", first.senders)
	fmt.Fprintf(&sb, "queries: p50 of %d runs, max-nodes %d; cold: a new datasource (an empty symbol cache), the first run (Pyroscope)\n", first.runs, peerMaxNodes)
	fmt.Fprintf(&sb, "peak heap per request in flight: the peak growth while loading less what stays after the load (flamehouse; pyroscope's cannot be settled), over requests in flight × their mean size\n")
	fmt.Fprintf(&sb, "heap: in use (live objects and garbage not yet collected; Go's HeapInuse, pyroscope's go_memstats_heap_inuse_bytes); live: what the last garbage collection found live (/gc/heap/live:bytes, go_gc_heap_live_bytes)\n")
	fmt.Fprintf(&sb, "acknowledged: flamehouse, collector, exporter: rows committed to ClickHouse; pyroscope: segment in its object store, metadata in its metastore\n")
	for _, p := range r.phases {
		p.table(&sb)
	}
	fmt.Fprintf(&sb, "\npyroscope's metastore and raft log (all tenants, not counted above): %.1f MB\n", float64(r.pyroscopeMeta)/1e6)
	return sb.String()
}

// table writes a phase's workload, its side-by-side table, its targets and
// its parts. The ratios compare each side with Flamehouse's ingest.
func (p *peerPhase) table(sb *strings.Builder) {
	w, l, o, c, e, y := p.w, p.load, p.ours, p.collector, p.exporter, p.pyroscope
	p.heading(sb)
	cell := func(v float64) string {
		if math.IsNaN(v) {
			return fmt.Sprintf("%12s", "-")
		}
		return fmt.Sprintf("%12.*f", prec(v), v)
	}
	ratioCell := func(a, b float64) string {
		if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
			return fmt.Sprintf("%9s", "-")
		}
		return fmt.Sprintf("%9.2f", a/b)
	}
	row := func(label string, fh, col, exp, pyro float64) {
		fmt.Fprintf(sb, "%-40s %s %s %s %s %s %s %s\n", label, cell(fh), cell(col), cell(exp), cell(pyro),
			ratioCell(exp, fh), ratioCell(col, fh), ratioCell(pyro, fh))
	}
	fmt.Fprintf(sb, "%-40s %12s %12s %12s %12s %9s %9s %9s\n", w.name+" "+w.spanName(), "flamehouse", "collector", "exporter", "pyroscope", "exp/fh", "col/fh", "pyro/fh")
	perEvent := func(s *peerSide) float64 { return float64(s.diskBytes()) / float64(l.events) }
	row("sample rows stored (pyroscope: blocks)", float64(o.rows), float64(c.rows), float64(e.rows), float64(len(y.blocks)))
	row("bytes on disk (MB)", float64(o.diskBytes())/1e6, float64(c.diskBytes())/1e6, float64(e.diskBytes())/1e6, float64(y.diskBytes())/1e6)
	row("bytes on disk per event", perEvent(o), perEvent(c), perEvent(e), perEvent(y))
	row("ingest: load time (s)", o.loadTook.Seconds(), c.loadTook.Seconds(), e.loadTook.Seconds(), y.loadTook.Seconds())
	row("ingest: events/s until acked", o.throughput(l), c.throughput(l), e.throughput(l), y.throughput(l))
	row("ingest: peak heap per request in flight", o.inuse.perRequest(l, w.senders), nan, nan, y.inuse.perRequest(l, w.senders))
	row("ingest: peak heap growth (MB)", o.inuse.growthMB(), nan, nan, y.inuse.growthMB())
	row("ingest: heap kept after the load (MB)", float64(o.inuse.kept)/1e6, nan, nan, nan)
	row("ingest: peak live heap per request in flight", o.live.perRequest(l, w.senders), nan, nan, y.live.perRequest(l, w.senders))
	row("ingest: peak live heap growth (MB)", o.live.growthMB(), nan, nan, y.live.growthMB())
	row("merge: OPTIMIZE FINAL, compaction (s)", o.optimizeTook.Seconds(), c.optimizeTook.Seconds(), e.optimizeTook.Seconds(), y.optimizeTook.Seconds())
	measured := func(s *peerSide, name string) float64 {
		if s.lat == nil {
			return nan
		}
		return s.p50(name)
	}
	for _, q := range w.queries() {
		for _, suffix := range []string{"-cold", ""} {
			exp := nan
			if w.name == "sparse" {
				exp = measured(e, q.name+suffix)
			}
			row("p50 ms "+q.name+suffix, measured(o, q.name+suffix), nan, exp, measured(y, q.name+suffix))
		}
	}
	for _, q := range w.queries() {
		if q.kind == query.TypeProfile {
			exp := nan
			if w.name == "sparse" {
				exp = float64(e.roots[q.name]) / 1e9
			}
			pyro := float64(y.roots[q.name]) / 1e9
			if q.pyro == "" { // not run on Pyroscope
				pyro = nan
			}
			row("root "+q.name+" (CPU s)", float64(o.roots[q.name])/1e9, nan, exp, pyro)
		}
	}
	all := "flame-" + w.allName()
	row("root "+all+" (CPU s)", float64(o.roots[all])/1e9, float64(c.roots[all])/1e9, float64(e.roots[all])/1e9, float64(y.roots[all])/1e9)
	p.topAgreement(sb)
	if p.live != nil {
		p.live.write(sb, l, w)
	}
	p.targets(sb)
	fmt.Fprintf(sb, "\nparts after OPTIMIZE ... FINAL, blocks after compaction (%s %s):\n", w.name, w.spanName())
	for _, s := range p.sides() {
		for _, d := range s.disk {
			proj := ""
			if d.projection > 0 {
				proj = fmt.Sprintf(" (projections %.2f B/event)", float64(d.projection)/float64(l.events))
			}
			fmt.Fprintf(sb, "  %-10s %-40s %12d rows %10.2f MB on disk %10.2f MB uncompressed %8.2f B/event%s\n",
				s.name, d.table, d.rows, float64(d.bytes)/1e6, float64(d.plain)/1e6, float64(d.bytes)/float64(l.events), proj)
		}
	}
}

// targets writes each target's ratio in this run and whether it holds.
func (p *peerPhase) targets(sb *strings.Builder) {
	w, l, o, e, y := p.w, p.load, p.ours, p.exporter, p.pyroscope
	perEvent := func(s *peerSide) float64 { return float64(s.diskBytes()) / float64(l.events) }
	fmt.Fprintf(sb, "targets (%s):\n", w.name)
	target := func(what string, v, limit float64, atMost bool) {
		held := v <= limit
		if !atMost {
			held = v >= limit
		}
		verdict := "holds"
		if !held {
			verdict = "MISSED"
		}
		fmt.Fprintf(sb, "  %-62s %8.3f  %s\n", what, v, verdict)
	}
	target("bytes/event ÷ pyroscope's (≤ 0.5)", perEvent(o)/perEvent(y), targetBytesVsPyroscope, true)
	if p.live != nil { // one host's real traffic
		target("(proposed, real traffic) bytes/event ÷ pyroscope's (≤ 1)", perEvent(o)/perEvent(y), proposedLiveBytesVsPyroscope, true)
	}
	target(fmt.Sprintf("bytes/event ÷ information floor %.2f B/event (≤ 2)", p.floor.perEvent()), perEvent(o)/p.floor.perEvent(), targetBytesVsFloor, true)
	fmt.Fprintf(sb, "  %-62s %8.3f\n", fmt.Sprintf("(proposed) its attribute, series and link columns %.2f B/event ÷ the floor", p.floor.columnsPerEvent()),
		p.floor.columnsPerEvent()/p.floor.perEvent())
	core := float64(coreBytes(o.disk)) / float64(l.events)
	fmt.Fprintf(sb, "  %-62s %8.3f  %s\n", fmt.Sprintf("(bound) our samples, stacks and frames alone, %.2f B/event, ÷ pyroscope's", core),
		core/perEvent(y), boundVerdict(core/perEvent(y)))
	target("bytes/event ÷ the exporter's (≤ 1)", perEvent(o)/perEvent(e), targetBytesVsExporter, true)
	target("ingest events/s ÷ pyroscope's (≥ 2)", o.throughput(l)/y.throughput(l), targetEventsVsPyroscope, false)
	target("ingest peak heap per request in flight ÷ its size (≤ 6)", o.inuse.perRequest(l, w.senders), targetHeapPerRequest, true)
	if o.live.growth > 0 {
		target("ingest peak live heap per request in flight ÷ its size (≤ 6)", o.live.perRequest(l, w.senders), targetHeapPerRequest, true)
	} else { // the live heap changes when a collection ends; a short load may see none
		fmt.Fprintf(sb, "  %-62s %8s  not measured: no garbage collection ended while loading\n", "ingest peak live heap per request in flight ÷ its size (≤ 6)", "-")
	}
	if y.inuse.growth > 0 {
		target("(proposed) ingest peak heap growth ÷ pyroscope's (≤ 0.5)", float64(o.inuse.growth)/float64(y.inuse.growth), proposedHeapVsPyroscope, true)
	} else { // its heap sampled every 200 ms may show no growth in a short load
		fmt.Fprintf(sb, "  %-62s %8s  no ratio: pyroscope's sampled heap did not grow\n", "(proposed) ingest peak heap growth ÷ pyroscope's (≤ 0.5)", "-")
	}
	if o.live.growth > 0 && y.live.growth > 0 {
		fmt.Fprintf(sb, "  %-62s %8.3f\n", "(for comparison) ingest peak live heap growth ÷ pyroscope's", float64(o.live.growth)/float64(y.live.growth))
	}
	var names []string
	for _, q := range w.queries() {
		if q.kind == query.TypeProfile && q.pyro != "" { // run on Pyroscope too
			names = append(names, q.name+"-cold", q.name)
		}
	}
	slower, slowerThanFloor := latencyMisses(names, o, y)
	latencyVerdict(sb, "flame graphs at most as slow as pyroscope's (p50)", len(names), slower)
	latencyVerdict(sb, fmt.Sprintf("(proposed) at most max(pyroscope's, %d ms) (p50)", proposedLatencyFloorMS), len(names), slowerThanFloor)
}

// coreBytes is what a Flamehouse side's raw samples, stacks and frames
// tables take on disk: the tables every answer reads and that no change
// to the rollups or the other tables can shrink. A stack or frame is
// stored once per service, so on a host whose processes come and go
// (every build and test a new executable) most of them are new and these
// tables grow with the events.
func coreBytes(disk []tableDisk) int64 {
	var n int64
	for _, d := range disk {
		for _, t := range []string{schema.Samples, schema.Stacks, schema.Frames} {
			if strings.HasSuffix(d.table, t) {
				n += d.bytes
			}
		}
	}
	return n
}

// boundVerdict says what the share of Pyroscope's bytes that our raw
// samples, stacks and frames alone take means for the bytes target: above
// targetBytesVsPyroscope no change to the rollups or other tables can
// meet it.
func boundVerdict(share float64) string {
	if share > targetBytesVsPyroscope {
		return fmt.Sprintf("above %.1f: out of reach with samples, stacks and frames stored as they are", targetBytesVsPyroscope)
	}
	return ""
}

// latencyMisses are the named queries whose p50 on ours is above
// theirs' (slower), and above the greater of theirs' and
// proposedLatencyFloorMS (slowerThanFloor).
func latencyMisses(names []string, ours, theirs *peerSide) (slower, slowerThanFloor []string) {
	for _, name := range names {
		o, t := ours.p50(name), theirs.p50(name)
		miss := fmt.Sprintf("%s %.1f > %.1f ms", name, o, t)
		if o > t {
			slower = append(slower, miss)
		}
		if o > max(t, proposedLatencyFloorMS) {
			slowerThanFloor = append(slowerThanFloor, miss)
		}
	}
	return slower, slowerThanFloor
}

// latencyVerdict prints how many of n flame graphs met a latency target,
// and those that missed it.
func latencyVerdict(sb *strings.Builder, name string, n int, missed []string) {
	verdict := "holds"
	if len(missed) > 0 {
		verdict = "MISSED: " + strings.Join(missed, ", ")
	}
	fmt.Fprintf(sb, "  %-62s %3d of %d  %s\n", name, n-len(missed), n, verdict)
}

// heading names the phase's workload and what its requests hold.
func (p *peerPhase) heading(sb *strings.Builder) {
	w, l := p.w, p.load
	made := "generated"
	if w.record != nil {
		made = "recorded"
		fmt.Fprintf(sb, "\n%s: %s of the real eBPF profiler on this host (%d processes, %d services, %.1f events/s), its %s reports as it sent them\n",
			w.name, w.spanName(), len(l.pids), len(p.live.ours), float64(l.events)/w.end.Sub(w.start).Seconds(), w.cfg.ReportInterval)
	} else {
		fmt.Fprintf(sb, "\n%s: %s at %d events/s (%d processes, %d stacks), %s requests of %d processes\n",
			w.name, w.spanName(), w.cfg.SamplesPerSecond, w.cfg.Pods, w.cfg.Stacks, w.cfg.ReportInterval, w.podsPerRequest)
	}
	fmt.Fprintf(sb, "data: %d events in %d OTLP samples (the exporter's rows), %d requests (largest %.2f MiB, mean %.0f kB), %.1f MB marshaled, CPU time %s; %s in %s\n\n",
		l.events, l.samples, l.requests, float64(l.maxBody)/(1<<20), l.meanBody()/1e3, float64(l.payload)/1e6, time.Duration(l.cpuNanos), made, l.took.Round(time.Second))
}

// topAgreement says whether the top functions agree, and which come first.
func (p *peerPhase) topAgreement(sb *strings.Builder) {
	o, y := p.ours, p.pyroscope
	over := "the whole range"
	if p.live != nil {
		over = fmt.Sprintf("the %d services pyroscope keeps whole", len(p.live.whole))
	}
	agree := "agree"
	if p.live != nil && p.live.topDiff != nil {
		agree = "DIFFER (below)"
	}
	fmt.Fprintf(sb, "top %d functions over %s %s (label, self, total): flamehouse's first %q %s self; pyroscope's %q %s self\n",
		peerTopFunctions, over, agree, p.top[o.name][0].Label, time.Duration(p.top[o.name][0].Self), p.top[y.name][0].Label, time.Duration(p.top[y.name][0].Self))
}

// prec picks decimals for a value in the table.
func prec(v float64) int {
	if v >= 100 || v == float64(int64(v)) {
		return 0
	}
	return 2
}

// write is the live phase's answers by service, its measured queries and
// its bytes at the prefix's age.
func (a *liveAnswers) write(sb *strings.Builder, l *peerLoad, w *peerWorkload) {
	fmt.Fprintf(sb, "live answers by service: flamehouse has each service's CPU time; pyroscope reports %d of %d services, each with at most its CPU time less its stacks without a named frame, %d of them whole; it kept %.1f %% of the CPU time (%s of %s)\n",
		len(a.pyroscope), len(a.ours), len(a.whole), 100*a.keptShare(l.cpuNanos), time.Duration(a.keptNanos).Round(time.Millisecond), time.Duration(l.cpuNanos).Round(time.Millisecond))
	var partial []string
	for _, svc := range slices.Sorted(maps.Keys(a.pyroscope)) {
		if a.pyroscope[svc] != a.ours[svc] {
			partial = append(partial, fmt.Sprintf("%s %.1f %% of %s", svc, 100*float64(a.pyroscope[svc])/float64(a.ours[svc]), time.Duration(a.ours[svc]).Round(time.Millisecond)))
		}
	}
	if len(partial) > 0 {
		fmt.Fprintf(sb, "  kept in part by pyroscope: %s\n", strings.Join(partial, "; "))
	}
	fmt.Fprintf(sb, "  kept whole by pyroscope: %s\n", strings.Join(a.whole, ", "))
	for _, svc := range slices.Sorted(maps.Keys(a.unexplained)) {
		fmt.Fprintf(sb, "  pyroscope lacks %s of %s in stacks with a named frame (its other losses are stacks without one)\n", time.Duration(a.unexplained[svc]).Round(time.Millisecond), svc)
	}
	if a.topDiff != nil {
		fmt.Fprintf(sb, "  top functions over them, flamehouse's vs pyroscope's:\n    %s\n", strings.ReplaceAll(a.topDiff.Error(), "\n", "\n    "))
	}
	for i, svc := range a.dropped {
		if i == 10 {
			fmt.Fprintf(sb, "  ... and %d more dropped\n", len(a.dropped)-i)
			break
		}
		fmt.Fprintf(sb, "  dropped by pyroscope: %-48s %10s CPU (%.1f %%)\n", svc, time.Duration(a.ours[svc]).Round(time.Millisecond), 100*float64(a.ours[svc])/float64(l.cpuNanos))
	}
	fmt.Fprintf(sb, "measured queries: service %q (the busiest pyroscope keeps; the recording's busiest: %q); filter: %s\n", w.service, a.busiest, a.filterNote)
	if pre := a.prefix; pre != nil {
		per := func(s *peerSide) float64 { return float64(s.diskBytes()) / float64(pre.load.events) }
		fmt.Fprintf(sb, "the first %s alone (%d events, %d requests) in fresh databases: flamehouse %.2f MB, %.2f B/event; exporter %.2f MB, %.2f B/event; exporter/flamehouse %.2f\n",
			peerLivePrefix, pre.load.events, pre.load.requests, float64(pre.ours.diskBytes())/1e6, per(pre.ours), float64(pre.exporter.diskBytes())/1e6, per(pre.exporter), per(pre.exporter)/per(pre.ours))
		for _, s := range []*peerSide{pre.ours, pre.exporter} {
			for _, d := range s.disk {
				fmt.Fprintf(sb, "  first %s %-10s %-40s %12d rows %10.3f MB on disk %8.2f B/event\n", peerLivePrefix, s.name, d.table, d.rows, float64(d.bytes)/1e6, float64(d.bytes)/float64(pre.load.events))
			}
		}
	}
}
