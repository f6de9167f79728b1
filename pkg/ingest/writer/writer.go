// Package writer batches converted profile rows from concurrent requests
// and writes them to ClickHouse. A request is acknowledged only after its
// rows are committed: Write returns when the insert that carried them
// succeeded, or with an error the receiver maps to a retryable answer.
//
// Rows of many requests are combined up to MaxBatchSamples or for at most
// FlushInterval, so that ClickHouse sees few, large inserts; while an insert
// is under way the next batch fills, and up to MaxConcurrentWrites inserts
// run at once, so that senders waiting for their acknowledgement do not
// leave the machine idle between batches (see loop). Stacks, frames
// and series are written once per day they are seen (a bounded in-memory
// cache of written ids), sample rows in bulk. Failed inserts are retried
// with backoff for as long as a waiting request's deadline allows. A
// bounded queue gives backpressure: when it is full, Write fails fast with
// ErrQueueFull instead of growing memory.
package writer

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// Config tunes batching and retries.
type Config struct {
	// FlushInterval is the longest a request waits for its rows to be
	// combined with others before they are written. Default 500ms.
	FlushInterval time.Duration `yaml:"flush_interval" mapstructure:"flush_interval"`
	// MaxBatchSamples starts a write as soon as this many sample rows wait.
	// Default 100,000.
	MaxBatchSamples int `yaml:"max_batch_samples" mapstructure:"max_batch_samples"`
	// MinBatchSamples starts a write before FlushInterval when no write is
	// under way and this many sample rows wait, so that a busy writer
	// inserts back to back instead of in FlushInterval waves. Default
	// 20,000 (below it, at most one insert per FlushInterval); above
	// MaxBatchSamples it counts as MaxBatchSamples.
	MinBatchSamples int `yaml:"min_batch_samples" mapstructure:"min_batch_samples"`
	// QuietInterval starts a write when none is under way, no request has
	// come for this long and at least MinBatchSamples/4 rows wait. Senders
	// that wait for their acknowledgement before sending again (a
	// Collector's exporter, a load test) have then sent all they will send
	// until this batch is written; waiting for FlushInterval would only
	// idle them. It trades larger inserts for latency: requests of a
	// quarter of MinBatchSamples rows or more that come further apart than
	// QuietInterval are each inserted alone. Default 20ms; 0 turns it off.
	QuietInterval time.Duration `yaml:"quiet_interval" mapstructure:"quiet_interval"`
	// MaxConcurrentWrites bounds the writes (inserts with their retries)
	// under way at once. Default 2.
	MaxConcurrentWrites int `yaml:"max_concurrent_writes" mapstructure:"max_concurrent_writes"`
	// MaxQueuedSamples bounds the sample rows accepted but not yet written;
	// beyond it requests are refused as retryable. Default 2,000,000.
	MaxQueuedSamples int `yaml:"max_queued_samples" mapstructure:"max_queued_samples"`
	// RetryInitial and RetryMax bound the backoff between write attempts.
	RetryInitial time.Duration `yaml:"retry_initial" mapstructure:"retry_initial"`
	RetryMax     time.Duration `yaml:"retry_max" mapstructure:"retry_max"`
	// SymbolCacheSize bounds the ids (stacks, frames, series) remembered as
	// written today. Default 2,000,000.
	SymbolCacheSize int `yaml:"symbol_cache_size" mapstructure:"symbol_cache_size"`
	// MinuteRollupMinMerge is how well an insert's rows of a service must
	// merge into per-minute rollup rows (rows per distinct minute, stack
	// and series) for the per-minute rollups to hold them; the others are
	// read from the raw table (schema version 7). Default 2; 1 rolls up
	// every row, as before version 7.
	MinuteRollupMinMerge float64 `yaml:"minute_rollup_min_merge" mapstructure:"minute_rollup_min_merge"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		FlushInterval: 500 * time.Millisecond, MaxBatchSamples: 100_000, MinBatchSamples: 20_000, QuietInterval: 20 * time.Millisecond, MaxConcurrentWrites: 2,
		MaxQueuedSamples: 2_000_000, RetryInitial: 100 * time.Millisecond, RetryMax: 5 * time.Second, SymbolCacheSize: 2_000_000,
		MinuteRollupMinMerge: 2,
	}
}

// RegisterFlags binds the config to flags with the given prefix.
func (c *Config) RegisterFlags(f *flag.FlagSet, prefix string) {
	f.DurationVar(&c.FlushInterval, prefix+"flush-interval", c.FlushInterval, "longest wait before a request's rows are written")
	f.IntVar(&c.MaxBatchSamples, prefix+"max-batch-samples", c.MaxBatchSamples, "sample rows that start a write")
	f.IntVar(&c.MinBatchSamples, prefix+"min-batch-samples", c.MinBatchSamples, "sample rows that start a write before the flush interval when none is under way")
	f.DurationVar(&c.QuietInterval, prefix+"quiet-interval", c.QuietInterval, "time without a new request after which an idle writer writes a batch of at least min-batch-samples/4 rows (0: off)")
	f.IntVar(&c.MaxConcurrentWrites, prefix+"max-concurrent-writes", c.MaxConcurrentWrites, "writes under way at once")
	f.IntVar(&c.MaxQueuedSamples, prefix+"max-queued-samples", c.MaxQueuedSamples, "sample rows waiting to be written before requests are refused")
	f.Float64Var(&c.MinuteRollupMinMerge, prefix+"minute-rollup-min-merge", c.MinuteRollupMinMerge, "rows per minute rollup key an insert's rows of a service need for the per-minute rollups to hold them (1: always)")
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var err error
	if c.FlushInterval <= 0 {
		err = errors.Join(err, errors.New("flush_interval must be positive"))
	}
	if c.MaxBatchSamples <= 0 || c.MaxQueuedSamples < c.MaxBatchSamples {
		err = errors.Join(err, errors.New("max_batch_samples must be positive and max_queued_samples at least as large"))
	}
	if c.MinBatchSamples <= 0 {
		err = errors.Join(err, errors.New("min_batch_samples must be positive"))
	}
	if c.QuietInterval < 0 {
		err = errors.Join(err, errors.New("quiet_interval must not be negative"))
	}
	if c.MaxConcurrentWrites <= 0 {
		err = errors.Join(err, errors.New("max_concurrent_writes must be positive"))
	}
	if c.RetryInitial <= 0 || c.RetryMax < c.RetryInitial {
		err = errors.Join(err, errors.New("retry_initial must be positive and retry_max at least as large"))
	}
	if c.SymbolCacheSize <= 0 {
		err = errors.Join(err, errors.New("symbol_cache_size must be positive"))
	}
	if !(c.MinuteRollupMinMerge >= 1) {
		err = errors.Join(err, errors.New("minute_rollup_min_merge must be at least 1"))
	}
	return err
}

// Errors Write returns; both mean "retry later" to the sender.
var (
	// ErrQueueFull: more rows wait than MaxQueuedSamples allows.
	ErrQueueFull = errors.New("the write queue is full; retry later")
	// ErrClosed: the writer is shutting down.
	ErrClosed = errors.New("the writer is shutting down; retry later")
)

// WriteError wraps the ClickHouse error that kept a request's rows from
// being committed before its deadline.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "rows not written: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// pending is one request's rows waiting to be written.
type pending struct {
	ctx   context.Context
	batch *model.Batch
	done  chan error
	added time.Time
	// token names the group this request leads across write attempts.
	token string
	// held are the queued stacks and frames the request holds until it is
	// answered (queuedSymbols).
	held heldSymbols
}

// Writer writes batches to ClickHouse.
type Writer struct {
	cfg     Config
	tables  schema.Config
	conn    clickhouse.Conn
	log     *slog.Logger
	metrics *metrics
	cache   *symbolCache
	// queuedSymbols shares the stacks and frames of queued requests.
	queuedSymbols *queuedSymbols
	// native sends sample inserts encoded here (nil: through conn).
	native NativeInserter
	in     chan *pending
	// queued counts sample rows accepted and not yet answered.
	mu      sync.Mutex
	queued  int
	closed  bool
	stopped chan struct{}
	now     func() time.Time
	tracer  trace.Tracer
}

// NativeInserter sends inserts whose data is encoded in ClickHouse's
// Native format (chclient.NativeInserter).
type NativeInserter interface {
	Insert(ctx context.Context, insert string, settings map[string]string, data []byte) error
}

// New starts a writer. Close stops it after writing what it accepted.
// Sample rows go through native when it is not nil, else through conn
// like every other table. With selftrace.WithTracerProvider each write of
// traced requests gets a span (see tracing.go).
func New(cfg Config, tables schema.Config, conn clickhouse.Conn, native NativeInserter, log *slog.Logger, reg prometheus.Registerer,
	opts ...selftrace.Option,
) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("writer config: %w", err)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	w := &Writer{
		cfg: cfg, tables: tables, conn: conn, native: native, log: log, metrics: m, cache: newSymbolCache(cfg.SymbolCacheSize), queuedSymbols: newQueuedSymbols(),
		in: make(chan *pending, 1024), stopped: make(chan struct{}), now: time.Now, tracer: selftrace.Tracer(tracerScope, opts...),
	}
	go w.loop()
	return w, nil
}

// Write queues a batch and returns once its rows are committed, or with
// ErrQueueFull, ErrClosed, a *WriteError or ctx's error.
func (w *Writer) Write(ctx context.Context, b *model.Batch) error {
	rows := len(b.Samples)
	if rows == 0 && len(b.Series) == 0 {
		return nil
	}
	held := w.dropKnownSymbols(b)
	if b.ReleaseSymbols != nil { // the batch now holds copies of the symbols it writes
		b.ReleaseSymbols()
		b.ReleaseSymbols = nil
	}
	w.mu.Lock()
	switch {
	case w.closed:
		w.mu.Unlock()
		w.queuedSymbols.release(held)
		return ErrClosed
	case w.queued+rows > w.cfg.MaxQueuedSamples && w.queued > 0:
		w.mu.Unlock()
		w.queuedSymbols.release(held)
		w.metrics.refused.Inc()
		return ErrQueueFull
	}
	w.queued += rows
	w.metrics.queue.Set(float64(w.queued))
	p := &pending{ctx: ctx, batch: b, held: held, done: make(chan error, 1), added: w.now()}
	w.in <- p // under the lock, so that Close cannot close the channel in between
	w.mu.Unlock()

	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		// The rows may still be written; the sender will retry, and a
		// duplicate is better than a loss.
		return ctx.Err()
	}
}

// dropKnownSymbols removes the stacks and frames already written today
// from a batch and replaces the rest with the queued copies (see
// queuedSymbols: copied out of the converter's arrays where no queued
// request holds one), so that a queued request holds little more than
// its sample rows and payload. The caller releases what it returns once
// the request is answered. (A symbol cached today is committed: samples
// may refer to it.)
func (w *Writer) dropKnownSymbols(b *model.Batch) heldSymbols {
	day := int32(w.now().Unix() / 86400)
	var held heldSymbols
	var keys []uint64
	var known []bool
	check := func(n int, key func(i int) uint64) {
		keys, known = keys[:0], slices.Grow(known[:0], n)[:n]
		for i := range n {
			keys = append(keys, key(i))
		}
		w.cache.known(keys, day, known)
	}
	for svc, sym := range b.Symbols {
		check(len(sym.Stacks), func(i int) uint64 { return cacheKey(kindStack, svc.Tenant, svc.Service, sym.Stacks[i].ID) })
		sym.Stacks = w.queuedSymbols.holdStacks(sym.Stacks, keys, known, &held)
		check(len(sym.Frames), func(i int) uint64 { return cacheKey(kindFrame, svc.Tenant, svc.Service, sym.Frames[i].ID) })
		sym.Frames = w.queuedSymbols.holdFrames(sym.Frames, keys, known, &held)
	}
	return held
}

// queuedRows reports the sample rows accepted and not yet answered.
func (w *Writer) queuedRows() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queued
}

// answer reports a write's outcome to its requests and frees queue space.
func (w *Writer) answer(ps []*pending, err error) {
	rows := 0
	for _, p := range ps {
		rows += len(p.batch.Samples)
	}
	// Space is freed before the answer, so that a sender that was just
	// answered never finds its own rows still queued.
	w.mu.Lock()
	w.queued -= rows
	w.metrics.queue.Set(float64(w.queued))
	w.mu.Unlock()
	for _, p := range ps {
		w.queuedSymbols.release(p.held)
		p.held = heldSymbols{}
		p.done <- err
	}
}

// Close stops accepting batches, writes every accepted one and returns
// when done or when ctx ends (requests then get ErrClosed).
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.in)
	}
	w.mu.Unlock()
	select {
	case <-w.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("writer did not drain: %w", ctx.Err())
	}
}

// loop combines pending requests into batches and starts their writes.
// A batch is written when it holds MaxBatchSamples rows, when its oldest
// request has waited FlushInterval, or, when no write is under way, as
// soon as it holds MinBatchSamples rows or, after QuietInterval without a
// new request, MinBatchSamples/4; at most MaxConcurrentWrites run at once,
// and requests keep filling the next batch meanwhile. Senders that wait
// for their acknowledgement before sending again thus meet a writer that
// inserts back to back when busy, not one FlushInterval wave per round
// trip. On Close, what is queued is written and the loop returns once
// every write has answered.
func (w *Writer) loop() {
	defer close(w.stopped)
	tick := w.cfg.FlushInterval / 4
	if w.cfg.QuietInterval > 0 {
		tick = min(tick, w.cfg.QuietInterval/2)
	}
	ticker := time.NewTicker(max(tick, 5*time.Millisecond))
	defer ticker.Stop()
	done := make(chan struct{}, w.cfg.MaxConcurrentWrites)
	inFlight := 0
	var batch []*pending
	rows := 0
	minRows := min(w.cfg.MinBatchSamples, w.cfg.MaxBatchSamples)
	quietRows := max(minRows/4, 1)
	// start writes the oldest requests, up to MaxBatchSamples rows (at
	// least one request); the rest stay for the next write. The loop keeps
	// reading requests whatever the writes do, so that a sender's Write
	// never waits for a write to end (MaxQueuedSamples bounds the rows).
	start := func() {
		n, taken := 0, 0
		for n < len(batch) && (n == 0 || taken+len(batch[n].batch.Samples) <= w.cfg.MaxBatchSamples) {
			taken += len(batch[n].batch.Samples)
			n++
		}
		ps := batch[:n:n]
		batch, rows = batch[n:], rows-taken
		inFlight++
		go func() {
			w.flush(ps)
			done <- struct{}{}
		}()
	}
	ready := func() bool {
		if len(batch) == 0 || inFlight >= w.cfg.MaxConcurrentWrites {
			return false
		}
		now := w.now()
		if rows >= w.cfg.MaxBatchSamples || now.Sub(batch[0].added) >= w.cfg.FlushInterval {
			return true
		}
		if inFlight > 0 {
			return false
		}
		// The batch's newest request is the last one that came: writes take
		// the oldest.
		return rows >= minRows || (w.cfg.QuietInterval > 0 && rows >= quietRows && now.Sub(batch[len(batch)-1].added) >= w.cfg.QuietInterval)
	}
	in := w.in
	for in != nil || inFlight > 0 || len(batch) > 0 {
		select {
		case p, ok := <-in:
			if !ok {
				in = nil // closed: write what is left, then wait for the writes
				continue
			}
			batch = append(batch, p)
			rows += len(p.batch.Samples)
		case <-ticker.C:
		case <-done:
			inFlight--
		}
		if ready() || (in == nil && len(batch) > 0 && inFlight < w.cfg.MaxConcurrentWrites) {
			start()
		}
	}
}

// flush writes a group of requests, retrying while any of them may wait,
// under a span when the requests are traced.
func (w *Writer) flush(ps []*pending) {
	ctx, span, traced := w.startSpan(ps)
	var err error
	selftrace.Do(ctx, func(ctx context.Context) { err = w.flushWithRetries(ctx, span, ps) })
	if traced {
		selftrace.Finish(span, err)
	}
}

// flushWithRetries writes and answers a group of requests; it returns the
// error they were answered with (nil: written).
func (w *Writer) flushWithRetries(ctx context.Context, span trace.Span, ps []*pending) error {
	backoff := w.cfg.RetryInitial
	var drainDeadline time.Time
	for attempt := 1; ; attempt++ {
		ps = w.dropExpired(ps)
		if len(ps) == 0 {
			return errAllExpired
		}
		start := w.now()
		err := w.write(ctx, ps)
		took := w.now().Sub(start)
		w.metrics.writeSeconds.Observe(took.Seconds())
		if err == nil {
			w.answer(ps, nil)
			return nil
		}
		w.metrics.writeErrors.Inc()
		w.log.Warn("write to clickhouse failed; retrying", "attempt", attempt, "requests", len(ps), "error", err)
		span.AddEvent("write failed", trace.WithAttributes(attribute.Int("attempt", attempt), attribute.String("error", err.Error())))
		deadline, ok := latestDeadline(ps)
		if !ok && w.stopping() {
			// Draining with requests that have no deadline: a few more tries.
			if drainDeadline.IsZero() {
				drainDeadline = w.now().Add(3 * w.cfg.RetryMax)
			}
			deadline, ok = drainDeadline, true
		}
		// Answer while the sender still listens: another attempt would
		// end (as this one took) after its deadline.
		if ok && w.now().Add(backoff+took).After(deadline) {
			werr := &WriteError{Err: err}
			w.answer(ps, werr)
			return werr
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, w.cfg.RetryMax)
	}
}

func (w *Writer) stopping() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// dropExpired answers requests whose sender gave up, so that their rows
// are not written behind their back.
func (w *Writer) dropExpired(ps []*pending) []*pending {
	live := ps[:0:0]
	for _, p := range ps {
		if err := p.ctx.Err(); err != nil {
			w.answer([]*pending{p}, err)
			continue
		}
		live = append(live, p)
	}
	return live
}

// latestDeadline is the latest deadline among requests; ok is false when
// one of them has none (it waits as long as it takes).
func latestDeadline(ps []*pending) (time.Time, bool) {
	var latest time.Time
	for _, p := range ps {
		d, ok := p.ctx.Deadline()
		if !ok {
			return time.Time{}, false
		}
		if d.After(latest) {
			latest = d
		}
	}
	return latest, true
}
