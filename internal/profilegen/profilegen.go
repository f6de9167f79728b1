// Package profilegen generates realistic OTLP profiles export requests
// shaped like the OpenTelemetry eBPF profiler's reports: a CPU profile per
// process of samples/count on a cpu/nanoseconds period (20 Hz per CPU),
// samples that carry lists of timestamps, a fresh dictionary per report,
// skewed stack popularity over a fixed pool of stacks of realistic depth
// (Go frames with inlining, unsymbolized native frames, kernel leaves),
// thread.name, thread.id and cpu.logical_number sample attributes, and a
// fraction of samples linked to a trace and span.
//
// It feeds benchmarks, load tests and `flamehouse loadgen`. Generation is
// deterministic for a seed.
package profilegen

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/otlpbuild"
)

// Config shapes the generated workload.
type Config struct {
	// Service is service.name of every process.
	Service string
	// Pods is the number of processes (resources); each is a k8s pod.
	Pods int
	// Stacks is the number of distinct stacks; popularity is log-uniform.
	Stacks int
	// Functions is the number of distinct functions the stacks draw from.
	Functions int
	// Locations is the number of distinct code locations (call sites).
	Locations int
	// MinDepth and MaxDepth bound stack depth (locations).
	MinDepth, MaxDepth int
	// SamplesPerSecond is the event rate of the whole service.
	SamplesPerSecond int
	// ReportInterval is the time one report covers (the profiler's default is 5s).
	ReportInterval time.Duration
	// TraceFraction is the fraction of events linked to a trace.
	TraceFraction float64
	// Threads is the number of threads per process.
	Threads int
	// CPUs is the number of logical CPUs per node.
	CPUs int
	// Seed makes the workload reproducible.
	Seed uint64
}

// DefaultConfig is the "W-service" workload: one service at 10k samples/s
// over 100 pods, 50k stacks of depth 10-50 over 20k locations, 5 s reports.
func DefaultConfig() Config {
	return Config{
		Service: "checkout", Pods: 100, Stacks: 50_000, Functions: 8_000, Locations: 20_000, MinDepth: 10, MaxDepth: 50,
		SamplesPerSecond: 10_000, ReportInterval: 5 * time.Second, TraceFraction: 0.05, Threads: 16, CPUs: 32, Seed: 1,
	}
}

// W-cluster's shape: how many nodes send reports, and how many of its
// processes each node's report holds (NodeReports(at, WClusterPodsPerNode)).
const (
	WClusterNodes       = 100
	WClusterPodsPerNode = 40
)

// WCluster is the "W-cluster" workload: 100 nodes of 32 vCPU at 40% busy,
// each node's profiler sending a 5 s report of about 1,280 events from 40
// processes every 5 s (25.6k samples/s in all), stacks drawn from a
// 5k-stack pool over 8k call sites.
func WCluster() Config {
	cfg := DefaultConfig()
	cfg.Pods, cfg.SamplesPerSecond, cfg.Stacks, cfg.Locations, cfg.Functions = WClusterNodes*WClusterPodsPerNode, 25_600, 5_000, 8_000, 3_000
	return cfg
}

// Agent is one host as one eBPF profiler reports it: 20 processes sampled
// at 20 Hz on about two busy cores (40 events/s in all, the rate of a
// single real host's profiler), one 5 s report of the whole host at a
// time, 5k stacks over 12k call sites and no trace links (the profiler
// alone does not see spans).
func Agent() Config {
	cfg := DefaultConfig()
	cfg.Pods, cfg.SamplesPerSecond, cfg.Stacks, cfg.Locations, cfg.Functions = 20, 40, 5_000, 12_000, 5_000
	cfg.CPUs, cfg.Threads, cfg.TraceFraction = 8, 8, 0
	return cfg
}

// frameKind says how a generated location looks.
type frameKind uint8

const (
	kindGo frameKind = iota
	kindInlined
	kindNative
	kindKernel
)

type genLocation struct {
	kind    frameKind
	fn, fn2 int // function indices (fn2: the inlined callee)
	line    int64
	address uint64
	mapping int // 0: the executable, 1: libc, 2: libssl
}

// Generator produces reports for a workload.
type Generator struct {
	cfg       Config
	rng       *rand.Rand
	locations []genLocation
	stacks    [][]int // indices into locations, leaf first
	functions []string
	files     []string
	logStacks float64
}

// New prepares the stack pool of a workload.
func New(cfg Config) *Generator {
	g := &Generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9E3779B97F4A7C15))} //nolint:gosec // deterministic load, not secrets
	for i := range cfg.Functions {
		pkg := []string{"main", "net/http", "encoding/json", "database/sql", "runtime", "checkout/cart", "checkout/pricing"}[i%7]
		g.functions = append(g.functions, fmt.Sprintf("%s.fn%04d", pkg, i))
		g.files = append(g.files, fmt.Sprintf("/src/%s/file%03d.go", pkg, i%300))
	}
	// A fixed pool of call sites: location 0 is main, the last 1% are
	// kernel functions.
	g.locations = append(g.locations, genLocation{kind: kindGo, fn: 0, line: 10, address: 0x401000})
	for len(g.locations) < cfg.Locations*99/100 {
		g.locations = append(g.locations, g.location())
	}
	kernelStart := len(g.locations)
	for len(g.locations) < cfg.Locations {
		g.locations = append(g.locations, genLocation{kind: kindKernel, fn: g.rng.IntN(50), address: 0xffffffff81000000 + g.rng.Uint64N(1<<20)})
	}
	// Stacks share prefixes like real programs: each new stack extends a
	// random earlier one (or starts at main) with more call sites.
	for i := range cfg.Stacks {
		var stack []int
		if i > 0 && g.rng.IntN(4) > 0 {
			parent := g.stacks[g.rng.IntN(len(g.stacks))]
			keep := min(len(parent), cfg.MinDepth/2+g.rng.IntN(max(1, len(parent)-cfg.MinDepth/2)))
			stack = slices.Clone(parent[len(parent)-keep:]) // root-side part
		} else {
			stack = []int{0}
		}
		depth := cfg.MinDepth + g.rng.IntN(cfg.MaxDepth-cfg.MinDepth+1)
		for len(stack) < depth {
			stack = append([]int{1 + g.rng.IntN(kernelStart-1)}, stack...)
		}
		if g.rng.IntN(5) == 0 {
			stack = append([]int{kernelStart + g.rng.IntN(cfg.Locations-kernelStart)}, stack...)
		}
		g.stacks = append(g.stacks, stack)
	}
	g.logStacks = math.Log(float64(cfg.Stacks))
	return g
}

func (g *Generator) location() genLocation {
	fn := g.rng.IntN(len(g.functions))
	switch r := g.rng.IntN(10); {
	case r < 6:
		return genLocation{kind: kindGo, fn: fn, line: int64(10 + g.rng.IntN(400)), address: 0x400000 + g.rng.Uint64N(1<<22)}
	case r < 8:
		return genLocation{kind: kindInlined, fn: fn, fn2: g.rng.IntN(len(g.functions)), line: int64(10 + g.rng.IntN(400)), address: 0x400000 + g.rng.Uint64N(1<<22)}
	default:
		return genLocation{kind: kindNative, mapping: 1 + g.rng.IntN(2), address: 0x7f0000000000 + g.rng.Uint64N(1<<21)}
	}
}

// pickStack draws a stack with log-uniform popularity.
func (g *Generator) pickStack() int {
	return min(g.cfg.Stacks-1, int(math.Exp(g.logStacks*g.rng.Float64()))-1)
}

// Events is the number of events one report carries.
func (g *Generator) Events() int {
	return int(float64(g.cfg.SamplesPerSecond) * g.cfg.ReportInterval.Seconds())
}

type sampleKey struct {
	pod, stack, thread, cpu int
	traced                  bool
}

// Report generates the report that covers [start, start+ReportInterval):
// every pod's events in one request.
func (g *Generator) Report(start time.Time) *collectorpb.ExportProfilesServiceRequest {
	return g.reports(start, g.cfg.Pods)[0]
}

// NodeReports generates the same interval's events as requests of
// podsPerReport pods each, each with its own dictionary, as profilers on
// separate nodes send them.
func (g *Generator) NodeReports(start time.Time, podsPerReport int) []*collectorpb.ExportProfilesServiceRequest {
	return g.reports(start, max(1, podsPerReport))
}

func (g *Generator) reports(start time.Time, podsPerReport int) []*collectorpb.ExportProfilesServiceRequest {
	interval := g.cfg.ReportInterval
	events := g.Events()
	byKey := map[sampleKey][]uint64{}
	var order []sampleKey
	for range events {
		k := sampleKey{pod: g.rng.IntN(g.cfg.Pods), stack: g.pickStack(), thread: g.rng.IntN(g.cfg.Threads), cpu: g.rng.IntN(g.cfg.CPUs)}
		k.traced = g.rng.Float64() < g.cfg.TraceFraction
		ts := uint64(start.UnixNano()) + uint64(g.rng.Int64N(int64(interval))) //nolint:gosec // G115: positive times
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], ts)
	}
	groups := (g.cfg.Pods + podsPerReport - 1) / podsPerReport
	reports := make([]*report, groups)
	for i := range reports {
		reports[i] = g.newReport(start, i*podsPerReport, min(g.cfg.Pods, (i+1)*podsPerReport))
	}
	for _, k := range order {
		reports[k.pod/podsPerReport].add(g, k, byKey[k])
	}
	out := make([]*collectorpb.ExportProfilesServiceRequest, groups)
	for i, r := range reports {
		out[i] = r.b.Request()
	}
	return out
}

// report is one request being built.
type report struct {
	b        *otlpbuild.Builder
	mappings []int32
	firstPod int
	profiles []*pb.Profile
	stackIdx map[int]int32
}

func (g *Generator) newReport(start time.Time, firstPod, endPod int) *report {
	b := otlpbuild.New()
	r := &report{b: b, firstPod: firstPod, stackIdx: map[int]int32{}}
	r.mappings = []int32{
		b.Mapping(0x400000, 0x1400000, 0, "/app/"+g.cfg.Service, "a1b2c3d4e5f60718"),
		b.Mapping(0x7f0000000000, 0x7f0000400000, 0, "/lib/x86_64-linux-gnu/libc.so.6", "0f9e8d7c6b5a4938"),
		b.Mapping(0x7f0000400000, 0x7f0000600000, 0, "/lib/x86_64-linux-gnu/libssl.so.3", "1122334455667788"),
	}
	interval := g.cfg.ReportInterval
	for pod := firstPod; pod < endPod; pod++ {
		rp := b.Resource(
			"service.name", g.cfg.Service, "service.namespace", "shop",
			"k8s.namespace.name", "prod", "k8s.pod.name", fmt.Sprintf("%s-%03d", g.cfg.Service, pod),
			"k8s.node.name", fmt.Sprintf("node-%02d", pod%10), "k8s.container.name", g.cfg.Service,
			"host.name", fmt.Sprintf("node-%02d", pod%10), "process.executable.name", g.cfg.Service,
			"process.pid", strconv.Itoa(1000+pod),
		)
		sp := otlpbuild.Scope(rp, "go.opentelemetry.io/ebpf-profiler", "v0.0.202633")
		p := &pb.Profile{
			SampleType: b.ValueType("samples", "count"), PeriodType: b.ValueType("cpu", "nanoseconds"),
			Period: 50_000_000, TimeUnixNano: uint64(start.UnixNano()), DurationNano: uint64(interval), //nolint:gosec // G115: positive
		}
		sp.Profiles = append(sp.Profiles, p)
		r.profiles = append(r.profiles, p)
	}
	return r
}

// add adds one sample (a key and its timestamps) to the report.
func (r *report) add(g *Generator, k sampleKey, stamps []uint64) {
	b := r.b
	si, ok := r.stackIdx[k.stack]
	if !ok {
		si = g.stack(b, r.mappings, k.stack)
		r.stackIdx[k.stack] = si
	}
	s := &pb.Sample{
		StackIndex:         si,
		TimestampsUnixNano: stamps,
		AttributeIndices: []int32{
			b.Attr("thread.name", fmt.Sprintf("worker-%d", k.thread%8)),
			b.Attr("thread.id", strconv.Itoa(1000*k.pod+k.thread)),
			b.Attr("cpu.logical_number", strconv.Itoa(k.cpu)),
		},
	}
	if k.traced {
		var trace [16]byte
		var span [8]byte
		binary.LittleEndian.PutUint64(trace[:], g.rng.Uint64())
		binary.LittleEndian.PutUint64(trace[8:], g.rng.Uint64())
		binary.LittleEndian.PutUint64(span[:], g.rng.Uint64())
		s.LinkIndex = b.Link(trace, span)
	}
	p := r.profiles[k.pod-r.firstPod]
	p.Samples = append(p.Samples, s)
}

// stack interns a pool stack into a report's dictionary.
func (g *Generator) stack(b *otlpbuild.Builder, mappings []int32, idx int) int32 {
	locs := make([]int32, 0, len(g.stacks[idx]))
	for _, li := range g.stacks[idx] {
		l := g.locations[li]
		var loc int32
		switch l.kind {
		case kindGo:
			fn := b.Function(g.functions[l.fn], "", g.files[l.fn], l.line-5)
			loc = b.Location(mappings[0], l.address, "go", otlpbuild.Line{Function: fn, Line: l.line})
		case kindInlined:
			outer := b.Function(g.functions[l.fn], "", g.files[l.fn], l.line-5)
			inner := b.Function(g.functions[l.fn2], "", g.files[l.fn2], 1)
			loc = b.Location(mappings[0], l.address, "go",
				otlpbuild.Line{Function: inner, Line: 3}, otlpbuild.Line{Function: outer, Line: l.line})
		case kindNative:
			loc = b.Location(mappings[l.mapping], l.address, "native")
		case kindKernel:
			fn := b.Function(fmt.Sprintf("kernel_fn%02d", l.fn), "", "", 0)
			loc = b.Location(0, l.address, "kernel", otlpbuild.Line{Function: fn})
		}
		locs = append(locs, loc)
	}
	return b.Stack(locs...)
}
