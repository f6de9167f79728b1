package query

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/ingest/pipeline"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

func TestMain(m *testing.M) { chtest.Main(m) }

const (
	cpuType = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	// acme is the tenant the tests read; other writes beside it.
	acme, other = "acme", "other"
	// service is both tenants' service; intruder is only other's.
	service, intruder = "checkout", "intruder"
)

// clock places the workload: h0 is a whole hour, four hours ago, and the
// split range [from, to) reads [from, h0-44m) raw, [h0-44m, h0) from the
// minute rollup, [h0, h0+3h) from the hour rollup, [h0+3h, h0+3h+5m) from
// the minute rollup and [h0+3h+5m, to) raw.
type clock struct{ h0, from, to time.Time }

func newClock() clock {
	h0 := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	return clock{h0: h0, from: h0.Add(-45*time.Minute + 13*time.Second), to: h0.Add(3*time.Hour + 5*time.Minute + 40*time.Second)}
}

// sent is a report a tenant sent, at a time (each covers 5 s).
type sent struct {
	tenant, service string
	seed            uint64
	at              time.Duration // after h0
}

// reports are the workload: acme's reports fall in every segment of the
// split range, across the boundaries between segments and across the
// range's ends (partly before from, partly after to); other's fall at the
// same times in the same service, and in a service of its own.
var reports = []sent{
	{acme, service, 1, -45*time.Minute + 10*time.Second},    // across from
	{acme, service, 2, -45*time.Minute + 20*time.Second},    // raw head
	{acme, service, 3, -30*time.Minute + 10*time.Second},    // minute rollup
	{acme, service, 4, 72*time.Minute + 3*time.Second},      // hour rollup
	{acme, service, 5, 179*time.Minute + 57*time.Second},    // across the hour rollup's end
	{acme, service, 6, 184*time.Minute + 57*time.Second},    // across the minute rollup's end
	{acme, service, 7, 185*time.Minute + 30*time.Second},    // raw tail
	{acme, service, 8, 185*time.Minute + 38*time.Second},    // across to
	{other, service, 51, -30*time.Minute + 10*time.Second},  // other's, at acme's times: minute rollup
	{other, service, 52, 72*time.Minute + 3*time.Second},    // other's, at acme's times: hour rollup
	{other, intruder, 53, 184*time.Minute + 57*time.Second}, // other's own service
}

// world is a migrated database holding the workload, and the converted
// batches of each tenant, the oracle's input.
type world struct {
	conn    clickhouse.Conn
	tables  schema.Config
	clock   clock
	batches map[string][]*model.Batch
	// pipe is the ingest's pipeline into the world's database (send).
	pipe *pipeline.Pipeline
}

// newWorld migrates a fresh database and writes the workload through the
// ingest's pipeline and the real writer.
func newWorld(t testing.TB) *world {
	t.Helper()
	return newWorldMerging(t, writer.DefaultConfig().MinuteRollupMinMerge)
}

// newWorldMerging writes the world with a writer that puts an insert's
// rows of a service into the per-minute rollups when they merge
// minuteRollupMinMerge to one (1: always).
func newWorldMerging(t testing.TB, minuteRollupMinMerge float64) *world {
	t.Helper()
	srv := chtest.Get(t)
	conn := srv.Open(t)
	tables := schema.DefaultConfig()
	tables.Database = srv.NewDatabase(t)
	tables.Retention = schema.Retention{}
	m, err := schema.NewMigrator(tables, conn)
	require.NoError(t, err)
	_, err = m.Migrate(context.Background())
	require.NoError(t, err)

	cfg := writer.DefaultConfig()
	cfg.FlushInterval = 20 * time.Millisecond
	cfg.MinuteRollupMinMerge = minuteRollupMinMerge
	var native writer.NativeInserter
	if n := srv.NativeInserter(t); n != nil {
		native = n
	}
	w, err := writer.New(cfg, tables, conn, native, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	p := pipeline.New(w, pipeline.Options{CPUSamplesAsTime: true}, nil) // the receiver's default, as the oracle's conversion

	wd := &world{conn: conn, tables: tables, clock: newClock(), batches: map[string][]*model.Batch{}, pipe: p}
	for _, r := range reports {
		gen := profilegen.DefaultConfig()
		gen.Service, gen.Seed = r.service, r.seed
		gen.Stacks, gen.Pods, gen.SamplesPerSecond, gen.Locations, gen.Functions = 200, 3, 100, 1000, 300
		req, batch := querytest.Report(t, gen, wd.clock.h0.Add(r.at))
		payload, err := proto.Marshal(req)
		require.NoError(t, err)
		out, err := p.Export(context.Background(), pipeline.Request{Tenant: r.tenant, Payload: payload})
		require.NoError(t, err)
		require.Empty(t, out.Rejected)
		wd.batches[r.tenant] = append(wd.batches[r.tenant], batch)
	}
	return wd
}

// send writes one more request of a tenant through the world's pipeline
// (it is not in the oracle's batches).
func (w *world) send(t testing.TB, tenant string, req proto.Message) {
	t.Helper()
	payload, err := proto.Marshal(req)
	require.NoError(t, err)
	out, err := w.pipe.Export(context.Background(), pipeline.Request{Tenant: tenant, Payload: payload})
	require.NoError(t, err)
	require.Empty(t, out.Rejected)
}

// engine reads the world as a tenant's datasource does, without an answer
// cache.
func (w *world) engine(tenant string) *query.Engine {
	return &query.Engine{Conn: w.conn, Tables: w.tables, Tenant: tenant}
}

// keep selects the oracle's samples: CPU samples of a tenant's in a range
// that pass a filter.
type keep func(*model.Sample) bool

func pod(name string) keep {
	return func(s *model.Sample) bool { return s.Meta.Series.Attributes["k8s.pod.name"] == name }
}

func inService(name string) keep {
	return func(s *model.Sample) bool { return s.Meta.Series.Service == name }
}

func all(*model.Sample) bool { return true }

// answer is what the oracle says one selection holds.
type answer struct {
	self, total map[string]int64
	sum         int64
	// steps are the time series' sums per step.
	steps map[time.Time]int64
}

// oracle is the answer of a tenant's samples in [from, to) that pass
// filter, its time series in steps of step.
func (w *world) oracle(tenant string, from, to time.Time, step time.Duration, filter keep) answer {
	a := answer{self: map[string]int64{}, total: map[string]int64{}, steps: map[time.Time]int64{}}
	for _, b := range w.batches[tenant] {
		in := func(s *model.Sample) bool {
			return s.Meta.ProfileType == cpuType && s.Timestamp >= from.Unix() && s.Timestamp < to.Unix() && filter(s)
		}
		self, total, sum := querytest.Top(b, in)
		addTo(a.self, self)
		addTo(a.total, total)
		a.sum += sum
		// Time series read whole steps: from the start of from's step.
		stepFrom := from.Truncate(step).Unix()
		for _, s := range b.Samples {
			if s.Meta.ProfileType == cpuType && s.Timestamp >= stepFrom && s.Timestamp < to.Unix() && filter(&s) {
				a.steps[time.Unix(s.Timestamp, 0).UTC().Truncate(step)] += s.Value
			}
		}
	}
	return a
}

func addTo(dst, src map[string]int64) {
	for k, v := range src {
		dst[k] += v
	}
}

// request parses a query as the datasource does, over [from, to) at an
// interval, with budgets no answer of the workload reaches.
func request(t testing.TB, q map[string]any, from, to time.Time, interval time.Duration) *query.Request {
	t.Helper()
	q = maps.Clone(q)
	q["profileTypeId"], q["maxNodes"], q["limit"] = cpuType, query.MaxMaxNodes, query.MaxLimit
	raw, err := json.Marshal(q)
	require.NoError(t, err)
	r, err := query.ParseRequest(raw, from, to, interval, query.Options{})
	require.NoError(t, err)
	return r
}

// requireAnswers checks a selection's flame graph, table and time series
// (in steps of step) against the oracle.
func requireAnswers(t *testing.T, e *query.Engine, selector string, from, to time.Time, step time.Duration, want answer) {
	t.Helper()
	ctx := context.Background()
	q := map[string]any{"labelSelector": selector}

	q["queryType"] = query.TypeProfile
	frames, err := e.Run(ctx, request(t, q, from, to, step))
	require.NoError(t, err)
	rows := querytest.FlameRows(t, frames[0], "ns")
	if want.sum == 0 {
		require.Empty(t, rows, "no samples: an empty flame graph")
	} else {
		require.Equal(t, querytest.FlameRow{Level: 0, Value: want.sum, Self: rows[0].Self, Label: "total"}, rows[0], "one root with the exact total")
	}
	self, total := querytest.FlameTop(rows)
	require.Equal(t, want.self, self, "flame graph: self per function")
	require.Equal(t, want.total, total, "flame graph: total per function, recursion counted once")

	q["queryType"] = query.TypeTable
	frames, err = e.Run(ctx, request(t, q, from, to, step))
	require.NoError(t, err)
	self, total = querytest.TableTop(frames[0])
	require.Equal(t, want.self, nonZero(self), "table: self per function")
	require.Equal(t, want.total, total, "table: total per function")

	q["queryType"] = query.TypeMetrics
	r := request(t, q, from, to, step)
	require.Equal(t, step, r.Step)
	groups, err := e.SeriesPoints(ctx, r)
	require.NoError(t, err)
	steps := map[time.Time]int64{}
	for _, g := range groups {
		for i, at := range g.Times {
			steps[at] += int64(g.Values[i]) // sums of integers, exact in a float64
		}
	}
	require.Equal(t, want.steps, steps, "time series: sum per step")
}

func nonZero(m map[string]int64) map[string]int64 {
	maps.DeleteFunc(m, func(_ string, v int64) bool { return v == 0 })
	return m
}

// TestEngineAnswersMatchTheWorkload runs each selection's flame graph,
// table and time series on the embedded ClickHouse and compares them with
// the oracle of the samples it selects.
func TestEngineAnswersMatchTheWorkload(t *testing.T) {
	w := newWorld(t)
	c := w.clock
	wideFrom, wideTo := c.h0.Add(-time.Hour), c.h0.Add(4*time.Hour)
	tests := []struct {
		name     string
		tenant   string
		selector string
		from, to time.Time
		filter   keep
		// empty: the oracle selects no sample (else it must select some).
		empty bool
	}{
		{name: "whole workload", tenant: acme, selector: `{}`, from: wideFrom, to: wideTo, filter: all},
		{name: "a service", tenant: acme, selector: `{service_name="checkout"}`, from: wideFrom, to: wideTo, filter: all},
		{name: "a pod", tenant: acme, selector: `{k8s_pod_name="checkout-001"}`, from: wideFrom, to: wideTo, filter: pod("checkout-001")},
		{name: "pods but one", tenant: acme, selector: `{k8s_pod_name!="checkout-001"}`, from: wideFrom, to: wideTo, filter: func(s *model.Sample) bool { return !pod("checkout-001")(s) }},
		{name: "split range, service rollups", tenant: acme, selector: `{}`, from: c.from, to: c.to, filter: all},
		{name: "split range, series rollups", tenant: acme, selector: `{k8s_pod_name=~".+"}`, from: c.from, to: c.to, filter: all},
		{name: "split range, a pod", tenant: acme, selector: `{k8s_pod_name="checkout-002"}`, from: c.from, to: c.to, filter: pod("checkout-002")},
		{name: "split range, raw table only", tenant: acme, selector: `{thread_name=~".+"}`, from: c.from, to: c.to, filter: all},
		{name: "another tenant's service is not acme's", tenant: acme, selector: `{service_name="intruder"}`, from: wideFrom, to: wideTo, filter: inService(intruder), empty: true},
		{name: "the other tenant sees its own", tenant: other, selector: `{}`, from: wideFrom, to: wideTo, filter: all},
		{name: "the other tenant's service", tenant: other, selector: `{service_name="intruder"}`, from: wideFrom, to: wideTo, filter: inService(intruder)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := w.oracle(tt.tenant, tt.from, tt.to, time.Minute, tt.filter)
			require.Equal(t, tt.empty, want.sum == 0, "the oracle's selection")
			requireAnswers(t, w.engine(tt.tenant), tt.selector, tt.from, tt.to, time.Minute, want)
		})
	}
}

// TestSplitRangesReadTheRollups shows which table each segment of the split
// range is read from: with the raw rows of its whole minutes deleted, and
// the minute rollups' rows of its whole hours, answers that may read the
// rollups still hold every sample, while an answer that reads the raw
// table only holds the samples of the range's partial minutes. Its time
// series are in hours (a one-minute step reads no hour rollup: an hour's
// bucket does not nest in it). Every row is written into the per-minute
// rollups here; TestUnrolledMinutesReadTheRawTable covers the rows left
// out of them.
func TestSplitRangesReadTheRollups(t *testing.T) {
	w := newWorldMerging(t, 1)
	c := w.clock
	wholeMinutes := [2]time.Time{c.h0.Add(-44 * time.Minute), c.h0.Add(3*time.Hour + 5*time.Minute)}
	wholeHours := [2]time.Time{c.h0, c.h0.Add(3 * time.Hour)}
	w.deleteRows(t, []string{schema.Samples}, wholeMinutes)
	w.deleteRows(t, []string{schema.SamplesMinute, schema.ServiceMinute}, wholeHours)
	partialMinutes := func(s *model.Sample) bool {
		return s.Timestamp < wholeMinutes[0].Unix() || s.Timestamp >= wholeMinutes[1].Unix()
	}
	tests := []struct {
		name     string
		selector string
		filter   keep
	}{
		{name: "service rollups", selector: `{}`, filter: all},
		{name: "series rollups", selector: `{k8s_pod_name=~".+"}`, filter: all},
		{name: "raw table only", selector: `{thread_name=~".+"}`, filter: partialMinutes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := w.oracle(acme, c.from, c.to, time.Hour, tt.filter)
			require.Positive(t, want.sum)
			requireAnswers(t, w.engine(acme), tt.selector, c.from, c.to, time.Hour, want)
		})
	}
}

// TestUnrolledMinutesReadTheRawTable: rows a writer leaves out of the
// per-minute rollups (schema.MinuteRollupColumn) are read from the raw
// table for a range's whole minutes. Written with nothing merging enough,
// the per-minute rollups stay empty and every answer still holds every
// sample, time series at a one-minute step (minutes only) included; the
// hourly rollups hold every row.
func TestUnrolledMinutesReadTheRawTable(t *testing.T) {
	w := newWorldMerging(t, 1e9)
	c := w.clock
	for _, table := range []string{schema.SamplesMinute, schema.ServiceMinute} {
		var rows uint64
		require.NoError(t, w.conn.QueryRow(context.Background(), "SELECT count() FROM "+w.tables.Qualified(table)).Scan(&rows))
		require.Zero(t, rows, "%s holds no row: none merged enough", table)
	}
	for _, selector := range []string{`{}`, `{k8s_pod_name=~".+"}`} {
		for _, step := range []time.Duration{time.Minute, time.Hour} {
			t.Run(selector+" "+step.String(), func(t *testing.T) {
				want := w.oracle(acme, c.from, c.to, step, all)
				require.Positive(t, want.sum)
				requireAnswers(t, w.engine(acme), selector, c.from, c.to, step, want)
			})
		}
	}
}

// TestAnswersOnADatabaseBeforeTheMark: a database without the minute
// rollup mark (before schema version 7; here the world taken back to it:
// the mark, its index and the views that read it dropped, every row having
// been rolled up) answers a new datasource's first query — planned with
// the mark, as the probe is not read yet, then again without it — and the
// next ones, planned as the probe says, exactly.
func TestAnswersOnADatabaseBeforeTheMark(t *testing.T) {
	w := newWorldMerging(t, 1)
	c := w.clock
	ctx := context.Background()
	for _, view := range []string{schema.SamplesMinute + "_mv", schema.ServiceMinute + "_mv"} {
		require.NoError(t, w.conn.Exec(ctx, "DROP VIEW "+w.tables.Qualified(view)))
	}
	require.NoError(t, w.conn.Exec(ctx, "ALTER TABLE "+w.tables.Qualified(schema.Samples)+" DROP INDEX idx_in_minute_rollups, DROP COLUMN "+schema.MinuteRollupColumn))
	e := w.engine(acme)
	for _, selector := range []string{`{}`, `{}`, `{k8s_pod_name=~".+"}`} {
		want := w.oracle(acme, c.from, c.to, time.Hour, all)
		requireAnswers(t, e, selector, c.from, c.to, time.Hour, want)
	}
}

// TestDefaultWriterMixesMarkedAndUnrolledRows: the world the other tests
// read, written with the default threshold, has rows of both kinds, so
// their oracles check answers over a mix.
func TestDefaultWriterMixesMarkedAndUnrolledRows(t *testing.T) {
	w := newWorld(t)
	var marked, unrolled uint64
	require.NoError(t, w.conn.QueryRow(context.Background(), "SELECT countIf("+schema.MinuteRollupColumn+"), countIf(NOT "+
		schema.MinuteRollupColumn+") FROM "+w.tables.Qualified(schema.Samples)).Scan(&marked, &unrolled))
	require.Positive(t, marked)
	require.Positive(t, unrolled)
}

// deleteRows deletes the rows of tables in [from, to).
func (w *world) deleteRows(t *testing.T, tables []string, span [2]time.Time) {
	t.Helper()
	ctx := clickhouse.Context(context.Background(), clickhouse.WithSettings(clickhouse.Settings{"mutations_sync": 2}))
	for _, table := range tables {
		require.NoError(t, w.conn.Exec(ctx, "ALTER TABLE "+w.tables.Qualified(table)+
			" DELETE WHERE Timestamp >= toDateTime(?) AND Timestamp < toDateTime(?)", span[0].Unix(), span[1].Unix()))
	}
}

// TestLookupsKeepToTheTenant: the editor's lookups (services, a label's
// values) list what the tenant's own workload holds, and nothing of the
// other tenant's.
func TestLookupsKeepToTheTenant(t *testing.T) {
	w := newWorld(t)
	scope := query.Scope{From: w.clock.h0.Add(-time.Hour), To: w.clock.h0.Add(4 * time.Hour)}
	for _, tt := range []struct {
		tenant   string
		services int // acme's one, other's two: the oracle is not empty
	}{{acme, 1}, {other, 2}} {
		tenant := tt.tenant
		t.Run(tenant, func(t *testing.T) {
			services, pods := map[string]bool{}, map[string]bool{}
			for _, b := range w.batches[tenant] {
				for _, s := range b.Samples {
					services[s.Meta.Series.Service] = true
					pods[s.Meta.Series.Attributes["k8s.pod.name"]] = true
				}
			}
			require.Len(t, services, tt.services)
			e := w.engine(tenant)
			got, err := e.Services(context.Background(), scope)
			require.NoError(t, err)
			require.Equal(t, slices.Sorted(maps.Keys(services)), got, "services")
			got, err = e.LabelValues(context.Background(), scope, "k8s_pod_name")
			require.NoError(t, err)
			require.Equal(t, slices.Sorted(maps.Keys(pods)), got, "pods")
		})
	}
}

// recordingConn records the statements a query runs.
type recordingConn struct {
	clickhouse.Conn
	mu         sync.Mutex
	statements []string
}

func (c *recordingConn) Query(ctx context.Context, q string, args ...any) (driver.Rows, error) {
	c.mu.Lock()
	c.statements = append(c.statements, q)
	c.mu.Unlock()
	return c.Conn.Query(ctx, q, args...)
}

func (c *recordingConn) QueryRow(ctx context.Context, q string, args ...any) driver.Row {
	c.mu.Lock()
	c.statements = append(c.statements, q)
	c.mu.Unlock()
	return c.Conn.QueryRow(ctx, q, args...)
}

// Statements of a flame graph, by how they start.
const (
	readsSums        = "SELECT StackId, sum(Value)"
	readsStacks      = "SELECT StackId, arrayStringConcat"
	readsFrames      = "SELECT FrameId, FunctionName"
	readsExecutables = "SELECT BuildId, argMax(FileName"
)

// reads are the recorded statements that start with prefix.
func (c *recordingConn) reads(prefix string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, q := range c.statements {
		if strings.HasPrefix(q, prefix) {
			out = append(out, q)
		}
	}
	return out
}

// forget forgets the recorded statements.
func (c *recordingConn) forget() {
	c.mu.Lock()
	c.statements = nil
	c.mu.Unlock()
}

// TestColdFlameGraphReadsFramesBesideStacks: on an empty symbol cache a
// flame graph of hundreds of stacks reads their frames in the statement
// that runs beside the stacks' (joined with the stacks in ClickHouse, or
// the service's whole frames), never by frame id after them, and its
// answers are exact; the next query reads neither.
func TestColdFlameGraphReadsFramesBesideStacks(t *testing.T) {
	w := newWorld(t)
	wideFrom, wideTo := w.clock.h0.Add(-time.Hour), w.clock.h0.Add(4*time.Hour)
	for _, tt := range []struct {
		name, selector string
		filter         keep
	}{
		{"a service", `{service_name="checkout"}`, all},
		{"a pod", `{service_name="checkout", k8s_pod_name="checkout-001"}`, pod("checkout-001")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingConn{Conn: w.conn}
			e := w.engine(acme)
			e.Conn, e.Symbols = rec, query.NewSymbols(1<<30, 1<<30)
			frames, err := e.Run(context.Background(), request(t, map[string]any{"queryType": query.TypeProfile, "labelSelector": tt.selector}, wideFrom, wideTo, time.Minute))
			require.NoError(t, err)
			want := w.oracle(acme, wideFrom, wideTo, time.Minute, tt.filter)
			self, total := querytest.FlameTop(querytest.FlameRows(t, frames[0], "ns"))
			require.Equal(t, want.self, self)
			require.Equal(t, want.total, total)

			// Each stacks statement has its frames statement: by the same
			// stack ids, joined in ClickHouse, or whole for whole stacks;
			// none reads frames by frame id, nor counts them to choose.
			kinds := func(qs []string, byID string) (ids, whole int) {
				for _, q := range qs {
					if strings.Contains(q, byID) {
						ids++
					} else {
						whole++
					}
				}
				return ids, whole
			}
			stacks, frameReads := rec.reads(readsStacks), rec.reads(readsFrames)
			require.NotEmpty(t, stacks)
			stacksByID, wholeStacks := kinds(stacks, "StackId IN")
			framesByStacks, wholeFrames := kinds(frameReads, "SELECT arrayJoin(FrameIds)")
			require.Equal(t, []int{stacksByID, wholeStacks}, []int{framesByStacks, wholeFrames}, "frames beside stacks:\n%s", strings.Join(frameReads, "\n"))
			for _, q := range frameReads {
				require.NotContains(t, strings.ReplaceAll(q, "StackId IN", ""), "FrameId IN {", "no frames by frame id")
			}
			for _, q := range rec.reads("SELECT count() FROM ") {
				require.NotContains(t, q, schema.Frames, "the frames need no count")
			}

			rec.forget()
			_, err = e.Run(context.Background(), request(t, map[string]any{"queryType": query.TypeTable, "labelSelector": tt.selector}, wideFrom, wideTo, time.Minute))
			require.NoError(t, err)
			require.Empty(t, rec.reads(readsStacks), "the stacks are cached")
			require.Empty(t, rec.reads(readsFrames), "the frames are cached")
		})
	}
}
