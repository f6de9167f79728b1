package writer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

func TestMain(m *testing.M) { chtest.Main(m) }

var start = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// migrated creates a fresh Flamehouse database for one test.
func migrated(t testing.TB, conn clickhouse.Conn) schema.Config {
	t.Helper()
	var b [5]byte
	_, _ = rand.Read(b[:])
	cfg := schema.DefaultConfig()
	cfg.Database = "writer_" + hex.EncodeToString(b[:])
	cfg.Retention = schema.Retention{} // keep the fixed 2026 timestamps
	m, err := schema.NewMigrator(cfg, conn)
	require.NoError(t, err)
	_, err = m.Migrate(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+cfg.Database) })
	return cfg
}

// report converts one generated report into a batch.
func report(t testing.TB, seed uint64, eventsPerSecond int) (*model.Batch, int64) {
	t.Helper()
	cfg := profilegen.DefaultConfig()
	cfg.Seed, cfg.Stacks, cfg.Pods, cfg.SamplesPerSecond = seed, 2000, 10, eventsPerSecond
	batch := querytest.Convert(t, "acme", profilegen.New(cfg).Report(start), start.Add(time.Minute))
	var total int64
	for _, s := range batch.Samples {
		total += s.Value
	}
	return batch, total
}

// encoders are the two ways sample rows travel: a Native block encoded by
// the writer over HTTP, and clickhouse-go's batch (the native protocol's
// path, exercised here over HTTP).
func encoders(t *testing.T, srv *chtest.Server) map[string]NativeInserter {
	t.Helper()
	out := map[string]NativeInserter{"clickhouse-go": nil}
	if n := nativeOf(t, srv); n != nil {
		out["native-block"] = n
	}
	return out
}

// nativeOf is the server's Native-block inserter, or a nil interface when
// it speaks the native protocol.
func nativeOf(t testing.TB, srv *chtest.Server) NativeInserter {
	t.Helper()
	if n := srv.NativeInserter(t); n != nil {
		return n
	}
	return nil
}

func newWriter(t *testing.T, conn clickhouse.Conn, native NativeInserter, tables schema.Config, change func(*Config)) *Writer {
	t.Helper()
	cfg := DefaultConfig()
	cfg.FlushInterval = 50 * time.Millisecond
	if change != nil {
		change(&cfg)
	}
	w, err := New(cfg, tables, conn, native, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	return w
}

// requireMetadataStored reads back every frame, stack and series of a
// batch, column by column.
func requireMetadataStored(t *testing.T, conn clickhouse.Conn, tables schema.Config, b *model.Batch) {
	t.Helper()
	ctx := context.Background()
	frames := map[uint64]model.Frame{}
	rows, err := conn.Query(ctx, "SELECT FrameId, FunctionName, SystemName, FileName, Line, Column, Inlined, MappingFile, BuildId, Address, MappingStart, MappingOffset, FrameType FROM "+
		tables.Qualified(schema.Frames))
	require.NoError(t, err)
	for rows.Next() {
		var f model.Frame
		require.NoError(t, rows.Scan(&f.ID, &f.FunctionName, &f.SystemName, &f.FileName, &f.Line, &f.Column, &f.Inlined, &f.MappingFile, &f.BuildID, &f.Address, &f.MappingStart, &f.MappingOffset, &f.FrameType))
		frames[f.ID] = f
	}
	require.NoError(t, rows.Err())
	stacks := map[uint64][]uint64{}
	rows, err = conn.Query(ctx, "SELECT StackId, FrameIds FROM "+tables.Qualified(schema.Stacks))
	require.NoError(t, err)
	for rows.Next() {
		var id uint64
		var ids []uint64
		require.NoError(t, rows.Scan(&id, &ids))
		stacks[id] = ids
	}
	require.NoError(t, rows.Err())
	for _, sym := range b.Symbols {
		for _, f := range sym.Frames {
			require.Equal(t, *f, frames[f.ID], "frame %d", f.ID)
		}
		for _, st := range sym.Stacks {
			require.Equal(t, st.FrameIDs, stacks[st.ID], "stack %d", st.ID)
		}
	}
	for _, s := range b.Series {
		var attrs map[string]string
		var pod string
		require.NoError(t, conn.QueryRow(ctx, "SELECT ResourceAttributes, K8sPodName FROM "+tables.Qualified(schema.Series)+" WHERE SeriesId = ?", s.ID).Scan(&attrs, &pod))
		require.Equal(t, s.Attributes, attrs)
		require.Equal(t, s.Attributes["k8s.pod.name"], pod)
	}
}

// requireProfilesStored reads back the profiles of a batch, column by
// column, and checks that each one's rows hold its events and total.
func requireProfilesStored(t *testing.T, conn clickhouse.Conn, tables schema.Config, b *model.Batch) {
	t.Helper()
	require.NotEmpty(t, b.Profiles)
	type key struct {
		series uint64
		typ    string
	}
	want := map[key]model.Profile{}
	for _, p := range b.Profiles {
		want[key{p.Series.ID, p.ProfileType}] = p
	}
	rows, err := conn.Query(context.Background(), "SELECT Timestamp, TenantId, ServiceName, ProfileType, SeriesId, ProfileId, DurationNanos, Period, "+
		"toInt64(FirstSample), toInt64(LastSample), Events, Total, (SELECT sum(Value) FROM "+tables.Qualified(schema.Samples)+
		" AS s WHERE s.SeriesId = p.SeriesId AND s.ProfileType = p.ProfileType AND s.Timestamp BETWEEN p.FirstSample AND p.LastSample) FROM "+
		tables.Qualified(schema.Profiles)+" AS p")
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		var at time.Time
		var tenant, service, typ, id string
		var series, duration, events uint64
		var period, first, last, total, samples int64
		require.NoError(t, rows.Scan(&at, &tenant, &service, &typ, &series, &id, &duration, &period, &first, &last, &events, &total, &samples))
		p, ok := want[key{series, typ}]
		require.True(t, ok, "a profile of series %d and type %s", series, typ)
		require.Equal(t, []any{p.TimeNanos, p.Series.Tenant, p.Series.Service, p.ProfileID, p.DurationNanos, p.Period, p.FirstSecond, p.LastSecond, p.Events, p.Total},
			[]any{uint64(at.UnixNano()), tenant, service, id, duration, period, first, last, int64(events), total})
		require.Equal(t, total, samples, "the profile's rows in its window hold its total")
		n++
	}
	require.NoError(t, rows.Err())
	require.Len(t, b.Profiles, n)
}

// requireSameRows checks that two queries return the same rows, each
// exactly once in the second.
func requireSameRows(t *testing.T, conn clickhouse.Conn, want, got string) {
	t.Helper()
	var missing, extra uint64
	var dup int64
	ctx := context.Background()
	require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM ("+want+" EXCEPT "+got+")").Scan(&missing))
	require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM ("+got+" EXCEPT "+want+")").Scan(&extra))
	require.NoError(t, conn.QueryRow(ctx, "SELECT (SELECT count() FROM ("+got+")) - (SELECT count() FROM (SELECT DISTINCT * FROM ("+got+")))").Scan(&dup))
	require.Zero(t, missing, "rows of %q missing from %q", want, got)
	require.Zero(t, extra, "rows of %q not in %q", got, want)
	require.Zero(t, dup, "duplicate rows in %q", got)
}

func sum(t *testing.T, conn clickhouse.Conn, tables schema.Config) (int64, uint64) {
	t.Helper()
	var total int64
	var rows uint64
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT sum(Value), count() FROM "+tables.Qualified(schema.Samples)).Scan(&total, &rows))
	return total, rows
}

func TestWriteCommitsEveryTable(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	for name, native := range encoders(t, srv) {
		t.Run(name, func(t *testing.T) {
			tables := migrated(t, conn)
			w := newWriter(t, conn, native, tables, nil)

			batch, total := report(t, 1, 400)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, w.Write(ctx, batch))

			// Acknowledged means committed: the rows are there right away.
			got, rows := sum(t, conn, tables)
			require.Equal(t, total, got)
			require.Equal(t, uint64(len(batch.Samples)), rows)

			// Every sample's stack resolves to frames, every frame exists.
			var missingStacks, missingFrames, missingSeries uint64
			q := func(sql string, dst *uint64) {
				require.NoError(t, conn.QueryRow(context.Background(), sql).Scan(dst))
			}
			q("SELECT count() FROM "+tables.Qualified(schema.Samples)+" WHERE StackId NOT IN (SELECT StackId FROM "+tables.Qualified(schema.Stacks)+")", &missingStacks)
			q("SELECT count() FROM (SELECT arrayJoin(FrameIds) AS f FROM "+tables.Qualified(schema.Stacks)+") WHERE f NOT IN (SELECT FrameId FROM "+tables.Qualified(schema.Frames)+")", &missingFrames)
			q("SELECT count() FROM "+tables.Qualified(schema.Samples)+" WHERE SeriesId NOT IN (SELECT SeriesId FROM "+tables.Qualified(schema.Series)+")", &missingSeries)
			require.Zero(t, missingStacks)
			require.Zero(t, missingFrames)
			require.Zero(t, missingSeries)

			var pod string
			q2 := "SELECT any(K8sPodName) FROM " + tables.Qualified(schema.Series) + " WHERE SeriesId IN (SELECT SeriesId FROM " +
				tables.Qualified(schema.Samples) + ")"
			require.NoError(t, conn.QueryRow(context.Background(), q2).Scan(&pod))
			require.Contains(t, pod, "checkout-")

			requireMetadataStored(t, conn, tables, batch)
			requireProfilesStored(t, conn, tables, batch)

			// The catalogs list exactly what the samples hold, once each.
			catalog := [2]string{
				"SELECT DISTINCT toStartOfHour(Timestamp), TenantId, ProfileType, ServiceName, SeriesId FROM " + tables.Qualified(schema.Samples),
				"SELECT Hour, TenantId, ProfileType, ServiceName, SeriesId FROM " + tables.Qualified(schema.Catalog),
			}
			labels := [2]string{
				"SELECT DISTINCT toStartOfHour(Timestamp), TenantId, ProfileType, ServiceName, k, v FROM " + tables.Qualified(schema.Samples) +
					" ARRAY JOIN mapKeys(SampleAttributes) AS k, mapValues(SampleAttributes) AS v",
				"SELECT Hour, TenantId, ProfileType, ServiceName, Key, Value FROM " + tables.Qualified(schema.SampleLabels),
			}
			requireSameRows(t, conn, catalog[0], catalog[1])
			requireSameRows(t, conn, labels[0], labels[1])
			var threadNames uint64
			q("SELECT count() FROM "+tables.Qualified(schema.SampleLabels)+" WHERE Key = 'thread.name'", &threadNames)
			require.NotZero(t, threadNames)

			again, _ := report(t, 1, 400) // the same entries again: none is written twice
			require.NoError(t, w.Write(ctx, again))
			for _, sym := range again.Symbols {
				require.Empty(t, sym.Stacks, "stacks written today are dropped before the request is queued")
				require.Empty(t, sym.Frames, "frames written today are dropped before the request is queued")
			}
			requireSameRows(t, conn, catalog[0], catalog[1])
			requireSameRows(t, conn, labels[0], labels[1])
		})
	}
}

// TestSymbolsAreCopiedBeforeTheirMemoryIsReleased: Write calls the
// batch's ReleaseSymbols once it has copied the symbols it writes, and
// reads only the copies after that: the converter's arrays the originals
// live in go to the next conversions, which overwrite them.
func TestSymbolsAreCopiedBeforeTheirMemoryIsReleased(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	tables := migrated(t, conn)
	w := newWriter(t, conn, nativeOf(t, srv), tables, nil)

	batch, _ := report(t, 2, 400)
	want := &model.Batch{Series: batch.Series, Symbols: map[model.ServiceKey]*model.Symbols{}}
	var frames []*model.Frame
	var stackIDs [][]uint64
	for svc, sym := range batch.Symbols {
		kept := &model.Symbols{}
		for _, st := range sym.Stacks {
			kept.Stacks = append(kept.Stacks, model.Stack{ID: st.ID, FrameIDs: slices.Clone(st.FrameIDs)})
			stackIDs = append(stackIDs, st.FrameIDs)
		}
		for _, f := range sym.Frames {
			kept.Frames = append(kept.Frames, new(*f))
			frames = append(frames, f)
		}
		want.Symbols[svc] = kept
	}
	require.NotEmpty(t, frames)
	released := false
	batch.ReleaseSymbols = func() { // what the next conversion does to the arrays
		released = true
		for _, f := range frames {
			*f = model.Frame{ID: f.ID ^ 1, FunctionName: "overwritten"}
		}
		for _, ids := range stackIDs {
			clear(ids)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.Write(ctx, batch))
	require.True(t, released)
	requireMetadataStored(t, conn, tables, want)
}

func TestWriteCombinesConcurrentRequestsAndWritesSymbolsOnce(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	tables := migrated(t, conn)
	// One insert for all requests, however slowly their goroutines start on
	// a loaded machine: the writer waits the whole flush interval (no quiet
	// or minimum-batch trigger). Frames of one insert are written once;
	// requests that land in two inserts in flight at once may write a frame
	// twice, which the frames table's ReplacingMergeTree folds.
	w := newWriter(t, conn, nativeOf(t, srv), tables, func(c *Config) {
		c.FlushInterval, c.QuietInterval, c.MinBatchSamples = 2*time.Second, 0, c.MaxBatchSamples
	})
	const requests = 12
	var want int64
	batches := make([]*model.Batch, requests)
	for i := range batches {
		var total int64
		batches[i], total = report(t, uint64(i%3+1), 100) // only three distinct reports: symbols repeat
		want += total
	}
	var wg sync.WaitGroup
	errs := make(chan error, requests)
	for _, b := range batches {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			errs <- w.Write(ctx, b)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got, _ := sum(t, conn, tables)
	require.Equal(t, want, got)

	var frames, distinctFrames, parts uint64
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT count(), uniqExact(FrameId) FROM "+tables.Qualified(schema.Frames)).Scan(&frames, &distinctFrames))
	require.Equal(t, distinctFrames, frames, "each frame row is written once, not once per request")
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT count() FROM system.parts WHERE database = ? AND table = ?",
		tables.Database, tables.Name(schema.Samples)).Scan(&parts))
	require.Less(t, parts, uint64(requests), "requests were combined into fewer inserts")
	stacks, queuedFrames := w.queuedSymbols.size()
	require.Zero(t, stacks+queuedFrames, "answered requests hold no queued symbols")
}

func TestWriteRefusesWhenQueueIsFull(t *testing.T) {
	conn := unreachable(t)
	tables := schema.DefaultConfig()
	w := newWriter(t, conn, nil, tables, func(c *Config) {
		c.MaxBatchSamples, c.MaxQueuedSamples = 10, 10
		c.RetryInitial, c.RetryMax = 20*time.Millisecond, 50*time.Millisecond
	})
	// Both batches are built first: the first request must still be queued
	// when the second arrives, however slow the machine.
	first, _ := report(t, 1, 10)
	second, _ := report(t, 2, 10)
	require.Greater(t, len(first.Samples), 10)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Write(ctx, first) }()
	require.Eventually(t, func() bool { return w.queuedRows() > 0 }, 5*time.Second, 5*time.Millisecond)
	// A deadline on the second request too: were it accepted by mistake,
	// the test fails on the assertion instead of waiting for ClickHouse.
	secondCtx, cancelSecond := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelSecond()
	require.ErrorIs(t, w.Write(secondCtx, second), ErrQueueFull)

	err := <-done
	var we *WriteError
	if !errors.As(err, &we) {
		// The writer answers with a WriteError before the deadline when
		// its next attempt would end after it; on a starved machine the
		// sender's own deadline may come first. Either way: no success.
		require.ErrorIs(t, err, context.DeadlineExceeded, "ClickHouse unreachable: a retryable write error or the sender's deadline")
	}
	require.Zero(t, w.queuedRows(), "queue space is returned")
	stacks, frames := w.queuedSymbols.size()
	require.Zero(t, stacks+frames, "refused and failed requests hold no queued symbols")
}

func TestWriteRetriesUntilClickHouseIsBack(t *testing.T) {
	srv := chtest.Get(t)
	direct := srv.Open(t)
	tables := migrated(t, direct)
	proxy := newToggleProxy(t, srv.Addr)
	proxy.setUp(false)
	conn := srv.Open(t, func(o *clickhouse.Options) { o.Addr = []string{proxy.addr()}; o.DialTimeout = time.Second })
	w := newWriter(t, conn, proxiedInserter(t, srv, proxy.addr()), tables, func(c *Config) { c.RetryInitial, c.RetryMax = 50*time.Millisecond, 200*time.Millisecond })
	batch, total := report(t, 3, 200)

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- w.Write(ctx, batch)
	}()
	time.Sleep(700 * time.Millisecond) // a few failed attempts
	select {
	case err := <-done:
		t.Fatalf("acknowledged while ClickHouse was down: %v", err)
	default:
	}
	proxy.setUp(true)
	require.NoError(t, <-done)
	got, _ := sum(t, direct, tables)
	require.Equal(t, total, got, "written exactly once after the outage")
}

func TestCloseDrainsAcceptedRequests(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	tables := migrated(t, conn)
	w, err := New(func() Config { c := DefaultConfig(); c.FlushInterval = 2 * time.Second; return c }(), tables, conn, nativeOf(t, srv),
		slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	var want atomic.Int64
	var wg sync.WaitGroup
	for i := range 5 {
		b, total := report(t, uint64(10+i), 50)
		want.Add(total)
		wg.Go(func() { require.NoError(t, w.Write(context.Background(), b)) })
	}
	require.Eventually(t, func() bool { return w.queuedRows() > 0 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, w.Close(context.Background()), "Close writes what was accepted, without waiting for the flush interval")
	wg.Wait()
	got, _ := sum(t, conn, tables)
	require.Equal(t, want.Load(), got)
	require.NoError(t, w.Write(context.Background(), model.NewBatch()), "an empty batch needs no writer")
	b, _ := report(t, 99, 10)
	require.ErrorIs(t, w.Write(context.Background(), b), ErrClosed)
}

// TestWriteStartsAtMinBatchWhenIdle: with no write under way, a batch of
// min_batch_samples rows is written at once rather than after the flush
// interval (an hour here); a smaller one waits for the interval.
func TestWriteStartsAtMinBatchWhenIdle(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	tables := migrated(t, conn)
	small, smallTotal := report(t, 21, 10)
	big, want := report(t, 22, 200)
	require.Greater(t, len(big.Samples), 4*len(small.Samples))
	w := newWriter(t, conn, nativeOf(t, srv), tables, func(c *Config) {
		// quiet_interval off: the small request alone is more than a
		// quarter of min_batch_samples (TestWriteStartsWhenQuiet).
		c.FlushInterval, c.MinBatchSamples, c.QuietInterval = time.Hour, len(small.Samples)+1, 0
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	require.ErrorIs(t, w.Write(ctx, small), context.DeadlineExceeded, "below min_batch_samples the rows wait for the interval")

	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, w.Write(ctx, big))
	got, _ := sum(t, conn, tables)
	// The small request's rows went with the big one's (its sender gave
	// up, but they were queued): both are stored.
	require.Contains(t, []int64{want, want + smallTotal}, got)
}

// TestWriteStartsWhenQuiet: senders that wait for their acknowledgement
// stop sending; once no request has come for quiet_interval, an idle
// writer writes what waits if it holds a quarter of min_batch_samples,
// rather than after the flush interval (an hour here). Fewer rows wait for
// the interval.
func TestWriteStartsWhenQuiet(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	tables := migrated(t, conn)
	a, totalA := report(t, 31, 40)
	b, totalB := report(t, 32, 40)
	tiny, tinyTotal := report(t, 33, 1)
	rows := len(a.Samples) + len(b.Samples)
	require.Less(t, 4*len(tiny.Samples), rows)
	w := newWriter(t, conn, nativeOf(t, srv), tables, func(c *Config) {
		// Both requests together hold a quarter of min_batch_samples, the
		// tiny one alone less; neither reaches min_batch_samples.
		c.FlushInterval, c.MinBatchSamples, c.QuietInterval = time.Hour, 4*rows, 100*time.Millisecond
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	require.ErrorIs(t, w.Write(ctx, tiny), context.DeadlineExceeded, "below a quarter of min_batch_samples the rows wait for the interval")

	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var g errgroup.Group
	for _, batch := range []*model.Batch{a, b} {
		g.Go(func() error { return w.Write(ctx, batch) })
	}
	require.NoError(t, g.Wait(), "written once quiet, not after the hour")
	got, _ := sum(t, conn, tables)
	// The tiny request's rows went with them (its sender gave up, but they
	// were queued).
	require.Contains(t, []int64{totalA + totalB, totalA + totalB + tinyTotal}, got)
}

// TestConcurrentWritesDrainOnClose: many requests over at most two writes
// under way at once, then Close while they come in: every accepted row is
// stored once, and a request that came after Close is refused.
func TestConcurrentWritesDrainOnClose(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	tables := migrated(t, conn)
	w, err := New(func() Config {
		c := DefaultConfig()
		c.FlushInterval, c.MinBatchSamples, c.MaxBatchSamples, c.MaxConcurrentWrites = 20*time.Millisecond, 50, 400, 2
		return c
	}(), tables, conn, nativeOf(t, srv), slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	var want atomic.Int64
	var accepted atomic.Int32
	var wg sync.WaitGroup
	for i := range 24 {
		b, total := report(t, uint64(40+i), 30)
		wg.Go(func() {
			err := w.Write(context.Background(), b)
			if err == nil {
				want.Add(total)
				accepted.Add(1)
				return
			}
			require.ErrorIs(t, err, ErrClosed)
		})
	}
	require.Eventually(t, func() bool { return w.queuedRows() > 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, w.Close(context.Background()))
	wg.Wait()
	require.Positive(t, accepted.Load())
	got, _ := sum(t, conn, tables)
	require.Equal(t, want.Load(), got)
	var parts uint64
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT count() FROM system.parts WHERE database = ? AND table = ?",
		tables.Database, tables.Name(schema.Samples)).Scan(&parts))
	require.Greater(t, parts, uint64(1), "max_batch_samples split the rows over several inserts")
}

func TestDeduplicationTokenMakesRetriesIdempotent(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	for name, native := range encoders(t, srv) {
		t.Run(name, func(t *testing.T) {
			tables := migrated(t, conn)
			w := newWriter(t, conn, native, tables, nil)
			b, total := report(t, 4, 50)
			p := &pending{ctx: context.Background(), batch: b, done: make(chan error, 1)}
			ctx := context.Background()
			_, err := w.insertSamples(ctx, []*pending{p})
			require.NoError(t, err)
			_, err = w.insertSamples(ctx, []*pending{p}) // the same group again, as after an ambiguous failure
			require.NoError(t, err)
			got, _ := sum(t, conn, tables)
			require.Equal(t, total, got, "the repeated insert was deduplicated")
		})
	}
}

// TestRequestTokenDeduplicatesRedelivery writes requests that carry a
// token of their own (model.Batch.DedupToken) next to one without, then
// the tokened ones again in a fresh write, as a Collector's persistent
// queue replays requests after a crash: the samples table holds each
// request once, and a tokened request's samples are an insert of their
// own. The rollups, which materialized views fill, deduplicate too: the
// inserts ask for it (deduplicate_blocks_in_dependent_materialized_views)
// and schema version 2 gives their tables a deduplication window (without
// it they count a redelivered request twice).
func TestRequestTokenDeduplicatesRedelivery(t *testing.T) {
	srv := chtest.Get(t)
	conn := srv.Open(t)
	for name, native := range encoders(t, srv) {
		t.Run(name, func(t *testing.T) {
			tables := migrated(t, conn)
			w := newWriter(t, conn, native, tables, func(c *Config) {
				c.FlushInterval = 200 * time.Millisecond
				c.MinuteRollupMinMerge = 1 // every rollup holds every row: each is checked below
			})
			var want int64
			batches := make([]*model.Batch, 4)
			for i := range batches {
				var total int64
				batches[i], total = report(t, uint64(10+i), 50)
				want += total
				if i > 0 {
					batches[i].DedupToken = "request-" + strconv.Itoa(i)
				}
			}
			writeAll := func(bs []*model.Batch) {
				var wg sync.WaitGroup
				for _, b := range bs {
					wg.Go(func() { require.NoError(t, w.Write(context.Background(), b)) })
				}
				wg.Wait()
			}
			writeAll(batches)
			var parts uint64
			require.NoError(t, conn.QueryRow(context.Background(), "SELECT count() FROM system.parts WHERE database = ? AND table = ? AND active",
				tables.Database, tables.Name(schema.Samples)).Scan(&parts))
			require.GreaterOrEqual(t, parts, uint64(len(batches)), "each tokened request is an insert of its own")

			// Redelivered: the same requests, converted again, in new writes.
			again := make([]*model.Batch, 0, len(batches)-1)
			for i := 1; i < len(batches); i++ {
				b, _ := report(t, uint64(10+i), 50)
				b.DedupToken = "request-" + strconv.Itoa(i)
				again = append(again, b)
			}
			writeAll(again)
			got, _ := sum(t, conn, tables)
			require.Equal(t, want, got, "samples: every request once")
			for _, rollup := range []string{schema.SamplesMinute, schema.SamplesHour, schema.ServiceMinute, schema.ServiceHour} {
				var v int64
				require.NoError(t, conn.QueryRow(context.Background(), "SELECT sum(Value) FROM "+tables.Qualified(rollup)).Scan(&v))
				require.Equal(t, want, v, "%s: every request once", rollup)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.Validate())
	c.FlushInterval, c.MaxBatchSamples, c.MaxQueuedSamples, c.RetryMax, c.SymbolCacheSize = 0, 10, 5, 0, 0
	c.MinuteRollupMinMerge = 0.5
	err := c.Validate()
	require.ErrorContains(t, err, "minute_rollup_min_merge")
	require.ErrorContains(t, err, "flush_interval")
	require.ErrorContains(t, err, "max_queued_samples")
	require.ErrorContains(t, err, "retry_max")
	require.ErrorContains(t, err, "symbol_cache_size")
}

func TestSymbolCacheIsBounded(t *testing.T) {
	c := newSymbolCache(3)
	for i := range 5 {
		c.put(uint64(i), 1)
	}
	require.LessOrEqual(t, c.size(), 3)
	require.True(t, c.has(4, 1))
	require.False(t, c.has(4, 2), "a new day writes again")
}

// unreachable returns a connection to a port where nothing listens.
func unreachable(t *testing.T) clickhouse.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	conn, err := clickhouse.Open(&clickhouse.Options{Protocol: clickhouse.HTTP, Addr: []string{addr}, DialTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// proxiedInserter sends Native blocks through the proxy (nil when the
// server speaks the native protocol).
func proxiedInserter(t *testing.T, srv *chtest.Server, addr string) NativeInserter {
	t.Helper()
	if nativeOf(t, srv) == nil {
		return nil
	}
	cfg := chclient.DefaultConfig()
	cfg.Address, cfg.Protocol, cfg.Username = addr, chclient.ProtocolHTTP, srv.Options.Auth.Username
	n, err := chclient.NewNativeInserter(cfg)
	require.NoError(t, err)
	t.Cleanup(n.Close)
	return n
}

// toggleProxy forwards TCP to ClickHouse while up and refuses while down.
type toggleProxy struct {
	ln     net.Listener
	target string
	up     atomic.Bool
}

func newToggleProxy(t *testing.T, target string) *toggleProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &toggleProxy{ln: ln, target: target}
	p.up.Store(true)
	go p.serve()
	t.Cleanup(func() { _ = ln.Close() })
	return p
}

func (p *toggleProxy) addr() string  { return p.ln.Addr().String() }
func (p *toggleProxy) setUp(up bool) { p.up.Store(up) }

func (p *toggleProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.up.Load() {
			_ = c.Close()
			continue
		}
		go func() {
			defer func() { _ = c.Close() }()
			upstream, err := net.Dial("tcp", p.target)
			if err != nil {
				return
			}
			defer func() { _ = upstream.Close() }()
			go func() { _, _ = io.Copy(upstream, c) }()
			_, _ = io.Copy(c, upstream)
		}()
	}
}
