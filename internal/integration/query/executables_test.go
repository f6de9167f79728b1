package query

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	pb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/otlpbuild"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// nativeRequest is one report of a service whose leaves run in stripped
// libraries, as the eBPF profiler sends them: a mapping with a build id
// and an address, no name; leaf i has 10×(i+1) ns.
func nativeRequest(at time.Time, service string, leaves int) *collectorpb.ExportProfilesServiceRequest {
	b := otlpbuild.New()
	p := &pb.Profile{
		SampleType: b.ValueType("cpu", "nanoseconds"), PeriodType: b.ValueType("cpu", "nanoseconds"), Period: 1,
		TimeUnixNano: uint64(at.UnixNano()),
	}
	otlpbuild.Scope(b.Resource("service.name", service), "test", "1").Profiles = []*pb.Profile{p}
	root := b.Location(0, 0, "go", otlpbuild.Line{Function: b.Function("main", "", "", 0)})
	for i := range leaves {
		start := 0x7f0000000000 + uint64(i)<<32
		mapping := b.Mapping(start, start+1<<24, 0, fmt.Sprintf("/usr/lib/libnative%d.so", i), fmt.Sprintf("%040x", i+1))
		leaf := b.Location(mapping, start+0x1234, "native")
		p.Samples = append(p.Samples, &pb.Sample{StackIndex: b.Stack(leaf, root), Values: []int64{int64(10 * (i + 1))}})
	}
	return b.Request()
}

// gatedConn, once armed, holds the next sums statement until a statement
// reading the executables has started, and records whether one did within
// a few seconds (beside). Held that way, a query that read the
// executables only after its sums would wait out the timeout.
type gatedConn struct {
	clickhouse.Conn
	mu      sync.Mutex
	started chan struct{} // closed by the first executables read once armed
	beside  atomic.Bool
}

// arm starts watching for an executables read and holding sums.
func (c *gatedConn) arm() {
	c.mu.Lock()
	c.started = make(chan struct{})
	c.mu.Unlock()
}

func (c *gatedConn) Query(ctx context.Context, q string, args ...any) (driver.Rows, error) {
	c.mu.Lock()
	started := c.started
	if started != nil && strings.HasPrefix(q, readsExecutables) {
		select {
		case <-started:
		default:
			close(started)
		}
	}
	c.mu.Unlock()
	if started != nil && strings.HasPrefix(q, readsSums) {
		select {
		case <-started:
			c.beside.Store(true)
		case <-time.After(3 * time.Second):
		}
	}
	return c.Conn.Query(ctx, q, args...)
}

// TestWarmFlameGraphReadsExecutablesBesideSums: a flame graph reads the
// symbol store's executables of its native frames every time (an upload
// names earlier frames at once); on a warm datasource it reads them while
// ClickHouse sums the stacks, not after, and answers as the cold query
// did, including native frames it has not met before.
func TestWarmFlameGraphReadsExecutablesBesideSums(t *testing.T) {
	w := newWorld(t)
	at := w.clock.h0.Add(30*time.Minute + 7*time.Second)
	from, to := at.Add(-time.Minute), at.Add(time.Hour)
	w.send(t, acme, nativeRequest(at, "natives", 3))
	conn := &gatedConn{Conn: w.conn}
	e := w.engine(acme)
	e.Conn, e.Symbols = conn, query.NewSymbols(1<<30, 1<<30)
	flame := func() map[string]int64 {
		frames, err := e.Run(context.Background(), request(t, map[string]any{"queryType": query.TypeProfile, "labelSelector": `{service_name="natives"}`}, from, to, time.Minute))
		require.NoError(t, err)
		self, _ := querytest.FlameTop(querytest.FlameRows(t, frames[0], "ns"))
		return self
	}
	want := map[string]int64{"[libnative0.so]": 10, "[libnative1.so]": 20, "[libnative2.so]": 30}

	require.Equal(t, want, flame(), "cold")
	conn.arm()
	require.Equal(t, want, flame(), "warm")
	require.True(t, conn.beside.Load(), "the warm query reads the executables while the sums are read")

	// A fourth library the datasource has not met, whose symbols are
	// stored: its build id is read after the sums, and names its frame.
	w.send(t, acme, nativeRequest(at.Add(time.Second), "natives", 4))
	storeRange(t, w, acme, fmt.Sprintf("%040x", 4), 0x1000, 0x2000, "native3_fn")
	want = map[string]int64{"[libnative0.so]": 20, "[libnative1.so]": 40, "[libnative2.so]": 60, "native3_fn": 40}
	require.Equal(t, want, flame(), "a new build id")
}

// storeRange stores, through the symbol store as an upload does, an
// executable of one segment (file offset = virtual address) whose symbols
// name [start, end) function.
func storeRange(t *testing.T, w *world, tenant, buildID string, start, end uint64, function string) {
	t.Helper()
	var native symbols.NativeInserter
	if n := chtest.Get(t).NativeInserter(t); n != nil {
		native = n
	}
	exe := &symbols.Executable{
		BuildID: buildID, Size: 1 << 20, HasSymtab: true,
		Segments: []symbols.Segment{{Filesz: 1 << 20, Memsz: 1 << 20, Exec: true}},
		Ranges:   []symbols.Range{{Start: start, End: end, Frames: []symbols.Frame{{Function: function, File: "native.c", Line: 7}}}},
	}
	_, err := symbols.NewStore(w.tables, w.conn, native).Put(context.Background(), tenant, symbols.SourceUpload, "libnative.so", exe)
	require.NoError(t, err)
}

// BenchmarkSmallFlameGraph measures a flame graph of a small answer, 20
// stacks through stripped libraries over an hour: what every query costs
// however small its answer (its statements, the executables of its native
// frames among them), which decides the small answers of
// docs/performance.md. warm: one datasource, its caches filled; cold: a
// new datasource per query (nothing cached, the schema probe included).
func BenchmarkSmallFlameGraph(b *testing.B) {
	w := newWorld(b)
	at := w.clock.h0.Add(30*time.Minute + 7*time.Second)
	w.send(b, acme, nativeRequest(at, "natives", 20))
	r := request(b, map[string]any{"queryType": query.TypeProfile, "labelSelector": `{service_name="natives"}`}, at.Add(-time.Minute), at.Add(time.Hour), time.Minute)
	ctx := context.Background()
	fresh := func() *query.Engine {
		e := w.engine(acme)
		e.Symbols = query.NewSymbols(1<<30, 1<<30)
		return e
	}
	b.Run("warm", func(b *testing.B) {
		e := fresh()
		if _, err := e.Run(ctx, r); err != nil { // fill the caches
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := e.Run(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			if _, err := fresh().Run(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
