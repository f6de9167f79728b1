package ebpfagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/protobuf/proto"
)

// ExportMethod is the OTLP profiles gRPC method.
const ExportMethod = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"

// Proxy is an OTLP profiles gRPC endpoint between a sender and receivers:
// it keeps every Export request it gets (its bytes, as the sender
// encoded them, and what it holds per process), forwards those bytes
// unchanged to each of its targets at once and answers the sender with
// the first target's answer. What the sender sent is then known exactly,
// to compare with what the receivers stored.
type Proxy struct {
	// Addr is where it listens, host:port.
	Addr string

	srv     *grpc.Server
	targets []target
	flight  sync.WaitGroup

	mu       sync.Mutex
	requests []Request
}

type target struct {
	addr string
	conn *grpc.ClientConn
}

// Request is one Export request the proxy received and forwarded.
type Request struct {
	// Payload is the request's protobuf bytes (after gRPC's gzip).
	Payload []byte
	// Received is when it arrived.
	Received time.Time
	// Tally counts its samples by process and sample type; nil when the
	// payload does not decode (it is forwarded all the same).
	Tally Tally
	// Answers are the targets' answers, in the order of the targets.
	Answers []Answer
}

// Answer is a target's answer to a forwarded request.
type Answer struct {
	Target string
	// Err is the call's error (nil: the target accepted the request).
	Err error
	// Rejected and Message are its partial_success.
	Rejected int64
	Message  string
}

// TallyKey is a process (process.pid of the resource; 0 when it has
// none) and a sample type ("samples/count", "off_cpu/nanoseconds").
type TallyKey struct {
	PID  int64
	Type string
}

// Count is what a request holds for one TallyKey.
type Count struct {
	// Samples are the Sample messages.
	Samples int64
	// Events are their events: a timestamp each, or one per sample that
	// has values and no timestamps.
	Events int64
	// Values is the sum of their values (0 when they send none).
	Values int64
	// EventsTimesPeriod is each event's count (its value, 1 when the
	// sample has no values) times the profile's period: the time a CPU
	// sample count stands for, as the ingest stores it (0 without a
	// period).
	EventsTimesPeriod int64
	// First and Last are the earliest and latest sample timestamps (Unix
	// ns; 0 when the samples have none).
	First, Last uint64
}

// Tally counts a request's samples.
type Tally map[TallyKey]Count

// Add adds another tally's counts.
func (t Tally) Add(o Tally) {
	for k, c := range o {
		s := t[k]
		s.Samples += c.Samples
		s.Events += c.Events
		s.Values += c.Values
		s.EventsTimesPeriod += c.EventsTimesPeriod
		s.First, s.Last = earliest(s.First, c.First), max(s.Last, c.Last)
		t[k] = s
	}
}

// CountRequest decodes an ExportProfilesServiceRequest and tallies its
// samples by process and sample type (TallyRequest).
func CountRequest(payload []byte) (Tally, error) {
	var req collectorpb.ExportProfilesServiceRequest
	if err := proto.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("decode the request: %w", err)
	}
	return TallyRequest(&req), nil
}

// TallyRequest tallies a request's samples by process and sample type, counting
// events as the ingest does: a timestamp each, or one for a sample with a
// value and no timestamps; a CPU sample count's time is its value (1 for
// a timestamp without values) times the period.
func TallyRequest(req *collectorpb.ExportProfilesServiceRequest) Tally {
	str := func(i int32) string {
		if d := req.GetDictionary(); d != nil && i >= 0 && int(i) < len(d.GetStringTable()) {
			return d.GetStringTable()[i]
		}
		return ""
	}
	out := Tally{}
	for _, rp := range req.GetResourceProfiles() {
		pid := resourcePID(rp.GetResource().GetAttributes())
		for _, sp := range rp.GetScopeProfiles() {
			for _, p := range sp.GetProfiles() {
				k := TallyKey{PID: pid, Type: str(p.GetSampleType().GetTypeStrindex()) + "/" + str(p.GetSampleType().GetUnitStrindex())}
				c := out[k]
				for _, s := range p.GetSamples() {
					c.AddSample(s, p.GetPeriod())
				}
				out[k] = c
			}
		}
	}
	return out
}

// AddSample counts one sample of a profile with the given period.
func (c *Count) AddSample(s *profilespb.Sample, period int64) {
	events := int64(len(s.GetTimestampsUnixNano()))
	if events == 0 && len(s.GetValues()) > 0 {
		events = 1
	}
	c.Samples++
	c.Events += events
	var values int64
	for _, v := range s.GetValues() {
		values += v
	}
	c.Values += values
	if len(s.GetValues()) == 0 {
		values = events // a timestamp is one count
	}
	c.EventsTimesPeriod += values * period
	for _, ts := range s.GetTimestampsUnixNano() {
		c.First, c.Last = earliest(c.First, ts), max(c.Last, ts)
	}
}

// earliest is the smaller of two timestamps, 0 meaning none.
func earliest(a, b uint64) uint64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// resourcePID is the resource's process.pid (an int, or a string as some
// senders write it), 0 when absent.
func resourcePID(attrs []*commonpb.KeyValue) int64 {
	for _, kv := range attrs {
		if kv.GetKey() != "process.pid" {
			continue
		}
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_IntValue:
			return v.IntValue
		case *commonpb.AnyValue_StringValue:
			var pid int64
			_, _ = fmt.Sscan(v.StringValue, &pid)
			return pid
		}
	}
	return 0
}

// StartProxy listens on a free loopback port and forwards to targets
// (host:port of OTLP/gRPC receivers, no TLS), gzip-compressed as the eBPF
// profiler sends.
func StartProxy(targets ...string) (*Proxy, error) {
	if len(targets) == 0 {
		return nil, errors.New("ebpfagent: the proxy needs a target")
	}
	p := &Proxy{}
	for _, addr := range targets {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}), grpc.UseCompressor(gzip.Name), grpc.MaxCallSendMsgSize(64<<20)))
		if err != nil {
			p.closeTargets()
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		p.targets = append(p.targets, target{addr: addr, conn: conn})
	}
	lis, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		p.closeTargets()
		return nil, err
	}
	p.Addr = lis.Addr().String()
	p.srv = grpc.NewServer(grpc.ForceServerCodecV2(rawCodec{}), grpc.MaxRecvMsgSize(64<<20))
	p.srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: "opentelemetry.proto.collector.profiles.v1development.ProfilesService",
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "Export", Handler: p.export}},
	}, p)
	go func() { _ = p.srv.Serve(lis) }()
	return p, nil
}

// export is the Export handler.
func (p *Proxy) export(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) { //nolint:revive // grpc.MethodHandler's signature
	p.flight.Add(1)
	defer p.flight.Done()
	var payload rawMessage
	if err := dec(&payload); err != nil {
		return nil, err
	}
	req := Request{Payload: payload, Received: time.Now(), Answers: make([]Answer, len(p.targets))}
	req.Tally, _ = CountRequest(payload)
	// The targets' answers do not depend on the sender staying connected.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	answers := make([]rawMessage, len(p.targets))
	var wg sync.WaitGroup
	for i, t := range p.targets {
		wg.Go(func() {
			a := Answer{Target: t.addr}
			a.Err = t.conn.Invoke(fctx, ExportMethod, &payload, &answers[i])
			if a.Err == nil {
				var resp collectorpb.ExportProfilesServiceResponse
				if err := proto.Unmarshal(answers[i], &resp); err != nil {
					a.Err = fmt.Errorf("decode the answer: %w", err)
				}
				a.Rejected, a.Message = resp.GetPartialSuccess().GetRejectedProfiles(), resp.GetPartialSuccess().GetErrorMessage()
			}
			req.Answers[i] = a
		})
	}
	wg.Wait()
	p.mu.Lock()
	p.requests = append(p.requests, req)
	p.mu.Unlock()
	if err := req.Answers[0].Err; err != nil {
		return nil, err
	}
	return &answers[0], nil
}

// Send sends a request through the proxy as a sender would: the proxy
// records and forwards it like any other.
func (p *Proxy) Send(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) (*collectorpb.ExportProfilesServiceResponse, error) {
	conn, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return collectorpb.NewProfilesServiceClient(conn).Export(ctx, req, grpc.UseCompressor(gzip.Name))
}

// Requests returns the requests forwarded so far, in the order their
// forwarding ended.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

// Sent sums the tallies of every request forwarded so far.
func (p *Proxy) Sent() Tally {
	out := Tally{}
	for _, r := range p.Requests() {
		out.Add(r.Tally)
	}
	return out
}

// Drain waits for the requests being forwarded.
func (p *Proxy) Drain() { p.flight.Wait() }

// Stop stops listening, waits for the requests in flight and closes the
// connections to the targets.
func (p *Proxy) Stop() {
	p.srv.GracefulStop()
	p.flight.Wait()
	p.closeTargets()
}

func (p *Proxy) closeTargets() {
	for _, t := range p.targets {
		_ = t.conn.Close()
	}
}
