package debuginfod

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// Store is where fetched symbols go; *symbols.Store implements it.
type Store interface {
	Put(ctx context.Context, tenant, source, fileName string, exe *symbols.Executable) (symbols.Stored, error)
}

// Known answers which of a tenant's build ids already have symbols stored
// (by upload or an earlier fetch); NewTableKnown asks profile_executables.
type Known interface {
	Known(ctx context.Context, tenant string, buildIDs []string) (map[string]bool, error)
}

// Failure reasons (the reason label of flamehouse_symbols_debuginfod_failed_total).
const (
	ReasonNotFound  = "not_found"         // every server answered 404 for both artifacts
	ReasonHTTP      = "http_status"       // another status, or a 5xx after the retries
	ReasonTimeout   = "timeout"           // a request timed out after the retries
	ReasonNetwork   = "network"           // connection refused, reset, DNS, ... after the retries
	ReasonTooLarge  = "too_large"         // the file is larger than max_file_bytes
	ReasonMismatch  = "build_id_mismatch" // the server sent a file with another build id
	ReasonBadFile   = "bad_file"          // not ELF, truncated, no symbols, too many ranges
	ReasonStore     = "store"             // writing to ClickHouse failed
	ReasonQueueFull = "queue_full"        // the queue was full; the build id is seen again later
)

// artifacts are what is asked for, in order: the separate debug file
// (DWARF and the full symbol table), else the executable itself.
var artifacts = [...]string{"debuginfo", "executable"}

// maxCheckBatch bounds the build ids looked up in one query.
const maxCheckBatch = 256

// knownTTL is how long a build id found stored is not looked up again.
const knownTTL = time.Hour

// maxEntries bounds each in-memory set; past it, expired entries are
// dropped, and if that is not enough, all of them (they are caches).
const maxEntries = 100_000

// key is a build id for a tenant: symbols are stored per tenant.
type key struct{ tenant, buildID string }

// item is a queued build id and the file name its frames' mapping had.
type item struct {
	key
	file string
}

// Fetcher finds, in the background, the symbols of executables that
// ingested frames left unsymbolized, on this host (source "ingest host") and on
// debuginfod servers (source "debuginfod"), and stores them. It is a
// pipeline.UnsymbolizedSink.
type Fetcher struct {
	cfg  Config
	host HostConfig
	// sources are asked in order for each artifact: the host, then the
	// servers.
	sources []source
	store   Store
	known   Known
	client  *http.Client
	log     *slog.Logger
	m       *metrics
	now     func() time.Time

	queue  chan item
	work   chan item
	ctx    context.Context //nolint:containedctx // the fetcher's lifetime: Close cancels it
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// pending holds build ids queued or being fetched.
	pending map[key]struct{}
	// negative holds, per build id, until when it is not asked for again.
	negative map[string]time.Time
	// stored holds, per tenant and build id, until when it is known to be
	// stored (not looked up again).
	stored map[key]time.Time
	closed bool

	// done, when set (tests), hears the outcome of each fetch: "" for
	// stored, else the failure reason.
	done func(buildID, reason string)
}

// New starts a fetcher of debuginfod servers alone (no host source):
// NewWithHost with the host source off.
func New(cfg Config, store Store, known Known, log *slog.Logger, reg prometheus.Registerer) (*Fetcher, error) {
	return NewWithHost(cfg, HostConfig{}, store, known, log, reg)
}

// NewWithHost starts a fetcher with cfg.Concurrency workers that looks on
// this host first, when host is enabled, then on cfg's servers. Both
// configs must be valid and one of them enabled. Close stops it.
func NewWithHost(cfg Config, host HostConfig, store Store, known Known, log *slog.Logger, reg prometheus.Registerer) (*Fetcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("debuginfod config: %w", err)
	}
	if err := host.Validate(); err != nil {
		return nil, fmt.Errorf("symbols host config: %w", err)
	}
	if !cfg.Enabled() && !host.Enabled {
		return nil, errors.New("symbols fetcher: no debuginfod urls and the host source is off")
	}
	f := &Fetcher{
		cfg: cfg, host: host, store: store, known: known, log: log, now: time.Now,
		client:  &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}, // the standard library's
		queue:   make(chan item, cfg.QueueSize),
		work:    make(chan item),
		pending: map[key]struct{}{}, negative: map[string]time.Time{}, stored: map[key]time.Time{},
	}
	if host.Enabled {
		f.sources = append(f.sources, newHostSource(host, cfg.MaxFileBytes))
	}
	for _, raw := range cfg.URLs {
		u, _ := parseURL(raw) // validated
		f.sources = append(f.sources, &serverSource{f: f, u: u})
	}
	m, err := newMetrics(reg, f.queueLength)
	if err != nil {
		return nil, err
	}
	f.m = m
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.wg.Add(1 + cfg.Concurrency)
	go f.dispatch()
	for range cfg.Concurrency {
		go f.worker()
	}
	return f, nil
}

// Unsymbolized queues the build ids that are not stored, not being
// fetched and not in the negative cache (pipeline.UnsymbolizedSink). It
// never blocks: when the queue is full the build id is dropped, and the
// next frames of that executable bring it back.
func (f *Fetcher) Unsymbolized(tenant string, exes []model.Executable) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	for _, e := range exes {
		if !validBuildID(e.BuildID) { // a Go build id or a profiler's own hash: no debuginfod has it, no .build-id path names it
			continue
		}
		k := key{tenant, e.BuildID}
		if _, ok := f.pending[k]; ok {
			continue
		}
		if until, ok := f.stored[k]; ok && now.Before(until) {
			continue
		}
		if until, ok := f.negative[e.BuildID]; ok {
			if now.Before(until) {
				f.m.negativeHits.Inc()
				continue
			}
			delete(f.negative, e.BuildID)
		}
		k = key{strings.Clone(tenant), strings.Clone(e.BuildID)} // the caller's strings alias its request
		select {
		case f.queue <- item{key: k, file: strings.Clone(e.File)}:
			f.pending[k] = struct{}{}
		default:
			f.m.failed.WithLabelValues(ReasonQueueFull).Inc()
		}
	}
}

// validBuildID accepts what a GNU build id can be: lowercase hex, whole
// bytes, 8 to 64 of them (linkers write 8, 16 or 20).
func validBuildID(id string) bool {
	if len(id) < 16 || len(id) > 128 || len(id)%2 != 0 {
		return false
	}
	for i := range len(id) {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// queueLength is the number of build ids queued or being fetched.
func (f *Fetcher) queueLength() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return float64(len(f.pending))
}

// Close stops taking build ids, cancels the fetches in flight (their
// temporary files are removed; a partial store leaves no
// profile_executables row, so nothing half-written is used) and waits for
// the workers, or for ctx. Queued build ids are dropped: frames seen after
// a restart bring them back.
func (f *Fetcher) Close(ctx context.Context) error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cancel()
	stopped := make(chan struct{})
	go func() {
		f.wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop the debuginfod fetcher: %w", ctx.Err())
	}
}

// dispatch takes queued build ids in batches, drops those already stored
// (one query per tenant and batch) and hands the rest to the workers.
func (f *Fetcher) dispatch() {
	defer f.wg.Done()
	defer close(f.work)
	for {
		var batch []item
		select {
		case <-f.ctx.Done():
			return
		case it := <-f.queue:
			batch = append(batch, it)
		}
	more:
		for len(batch) < maxCheckBatch {
			select {
			case it := <-f.queue:
				batch = append(batch, it)
			default:
				break more
			}
		}
		for _, it := range f.unknown(batch) {
			select {
			case <-f.ctx.Done():
				return
			case f.work <- it:
			}
		}
	}
}

// unknown returns the items whose build ids are not stored for their
// tenant, marking the others stored. When the lookup fails the items are
// fetched anyway (a second store of the same symbols is harmless).
func (f *Fetcher) unknown(batch []item) []item {
	byTenant := map[string][]string{}
	for _, it := range batch {
		byTenant[it.tenant] = append(byTenant[it.tenant], it.buildID)
	}
	stored := map[key]bool{}
	for tenant, ids := range byTenant {
		have, err := f.known.Known(f.ctx, tenant, ids)
		if err != nil {
			if f.ctx.Err() == nil {
				f.log.Warn("debuginfod: cannot tell which build ids are stored; fetching them", "tenant", tenant, "build_ids", len(ids), "error", err)
			}
			continue
		}
		for id, ok := range have {
			if ok {
				stored[key{tenant, id}] = true
			}
		}
	}
	out := batch[:0]
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, it := range batch {
		if stored[it.key] {
			delete(f.pending, it.key)
			f.markStored(it.key, now)
			continue
		}
		out = append(out, it)
	}
	return out
}

func (f *Fetcher) worker() {
	defer f.wg.Done()
	for it := range f.work {
		reason := f.fetch(it)
		now := f.now()
		f.mu.Lock()
		delete(f.pending, it.key)
		switch reason {
		case "":
			f.markStored(it.key, now)
		case "canceled":
		case ReasonTimeout, ReasonNetwork, ReasonHTTP, ReasonStore:
			f.markNegative(it.buildID, now.Add(min(FailureTTL, f.cfg.NegativeCacheTTL)))
		default:
			f.markNegative(it.buildID, now.Add(f.cfg.NegativeCacheTTL))
		}
		f.mu.Unlock()
		if reason != "" && reason != "canceled" {
			f.m.failed.WithLabelValues(reason).Inc()
		}
		if f.done != nil && reason != "canceled" {
			f.done(it.buildID, reason)
		}
	}
}

// markStored and markNegative record a build id in the bounded sets; f.mu is held.
func (f *Fetcher) markStored(k key, now time.Time) {
	prune(f.stored, now)
	f.stored[k] = now.Add(knownTTL)
}

func (f *Fetcher) markNegative(buildID string, until time.Time) {
	prune(f.negative, until.Add(-f.cfg.NegativeCacheTTL))
	f.negative[buildID] = until
}

func prune[K comparable](m map[K]time.Time, now time.Time) {
	if len(m) < maxEntries {
		return
	}
	for k, until := range m {
		if !now.Before(until) {
			delete(m, k)
		}
	}
	if len(m) >= maxEntries {
		clear(m)
	}
}

// fetchError is a failed download or a file that could not be used.
type fetchError struct {
	reason string
	err    error
}

func (e *fetchError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

// errNotFound is a 404.
var errNotFound = errors.New("not found")

// fetch stores the symbols of one build id and returns "", or the reason
// it failed ("canceled" when the fetcher is closing). It asks the sources
// (this host, then the servers) for the debug file first; a debug file's
// code segments cannot place addresses (symbols.UsableSegments), so then
// the executable is looked for too, and Store.Put combines the two (the
// debug file's symbols, the executable's segments), whichever sources
// they came from. Without a debug file, the executable alone.
func (f *Fetcher) fetch(it item) string {
	failed := map[source]bool{} // servers that failed for a transport reason: not asked again for this build id
	dbg, reason := f.obtain(it, "debuginfo", failed, false)
	switch {
	case reason == "canceled" || reason == ReasonStore:
		return reason
	case reason == "" && symbols.UsableSegments(dbg.Segments):
		return ""
	}
	// After a debug file, the executable is wanted for its segments alone:
	// a stripped one that exports no function is fine.
	_, exeReason := f.obtain(it, "executable", failed, reason == "")
	switch {
	case exeReason == "canceled":
		return exeReason
	case exeReason == "" || reason == "": // either stored
		if exeReason != "" {
			f.log.Info("debuginfod: debug file stored without its executable: addresses may not resolve until the executable is uploaded",
				"build_id", it.buildID, "reason", exeReason)
		}
		return ""
	case reason == ReasonNotFound:
		reason = exeReason
	}
	if reason == ReasonNotFound {
		f.log.Debug("debuginfod: no source has the build id", "build_id", it.buildID)
	} else {
		f.log.Info("debuginfod: fetching symbols failed", "build_id", it.buildID, "file", it.file, "reason", reason)
	}
	return reason
}

// obtain asks each source in turn for one artifact until one gives a
// usable file, and stores its symbols. It returns them, or the reason of
// the last failure (ReasonNotFound when no source had the artifact).
// segmentsOnly accepts a file without symbols (see fetch).
func (f *Fetcher) obtain(it item, artifact string, failed map[source]bool, segmentsOnly bool) (*symbols.Executable, string) {
	reason := ReasonNotFound
	for _, src := range f.sources {
		if failed[src] {
			continue
		}
		exe, err := f.fetchFrom(it, src, artifact, segmentsOnly)
		if err == nil {
			return exe, ""
		}
		if f.ctx.Err() != nil {
			return nil, "canceled"
		}
		if errors.Is(err, errNotFound) {
			continue
		}
		var fe *fetchError
		if !errors.As(err, &fe) {
			fe = &fetchError{reason: ReasonHTTP, err: err}
		}
		if fe.reason == ReasonStore { // ClickHouse, not the source: another source will not help
			f.log.Warn("debuginfod: storing symbols failed", "build_id", it.buildID, "error", err)
			return nil, ReasonStore
		}
		reason = fe.reason
		f.log.Debug("debuginfod: no usable file", "source", src.String(), "build_id", it.buildID, "artifact", artifact, "error", err)
		if fe.reason == ReasonTimeout || fe.reason == ReasonNetwork || fe.reason == ReasonHTTP {
			failed[src] = true
		}
	}
	return nil, reason
}

// source is where the files of a build id are looked for: this host
// (hostSource) or a debuginfod server.
type source interface {
	// open returns the artifact ("debuginfo" or "executable") of the
	// item's build id, its size and what releases it, or errNotFound.
	open(it item, artifact string) (*os.File, int64, func(), error)
	// kind is the stored source: symbols.SourceHost or SourceDebuginfod.
	kind() string
	// String names the source in logs (a server's URL redacted).
	String() string
}

// serverSource is a debuginfod server: open downloads the artifact into a
// temporary file, removed on release.
type serverSource struct {
	f *Fetcher
	u *url.URL
}

func (*serverSource) kind() string     { return symbols.SourceDebuginfod }
func (s *serverSource) String() string { return s.u.Redacted() }

func (s *serverSource) open(it item, artifact string) (*os.File, int64, func(), error) {
	path, size, err := s.f.download(s.u, it.buildID, artifact)
	if err != nil {
		return nil, 0, nil, err
	}
	file, err := os.Open(path) //nolint:gosec // G304: our own temporary file
	if err != nil {
		_ = os.Remove(path)
		return nil, 0, nil, &fetchError{reason: ReasonBadFile, err: err}
	}
	return file, size, func() {
		_ = file.Close()
		_ = os.Remove(path)
	}, nil
}

// fetchFrom takes one artifact from one source, extracts its symbols,
// checks its build id (a file with another one is refused, whichever
// source gave it) and stores them with the source's kind.
func (f *Fetcher) fetchFrom(it item, src source, artifact string, segmentsOnly bool) (*symbols.Executable, error) {
	file, size, release, err := src.open(it, artifact)
	if err != nil {
		return nil, err
	}
	defer release()
	exe, err := symbols.ExtractWith(file, size, symbols.Options{
		Limits: symbols.Limits{MaxFileBytes: f.cfg.MaxFileBytes}, ExpectBuildID: it.buildID, AllowNoSymbols: segmentsOnly,
	})
	switch {
	case errors.Is(err, symbols.ErrBuildIDMismatch):
		return nil, &fetchError{reason: ReasonMismatch, err: err}
	case errors.Is(err, symbols.ErrTooLarge):
		return nil, &fetchError{reason: ReasonTooLarge, err: err}
	case err != nil:
		return nil, &fetchError{reason: ReasonBadFile, err: err}
	}
	name := it.file
	if name == "" {
		name = it.buildID
	}
	kind := src.kind()
	stored, err := f.store.Put(f.ctx, it.tenant, kind, name, exe)
	if err != nil {
		return nil, &fetchError{reason: ReasonStore, err: err}
	}
	if kind == symbols.SourceHost {
		f.m.hostFound.WithLabelValues(artifact).Inc()
	} else {
		f.m.fetched.WithLabelValues(artifact).Inc()
		f.m.bytes.Add(float64(size))
	}
	f.log.Info("debuginfod: symbols stored", "source", src.String(), "tenant", it.tenant, "build_id", it.buildID, "file", name,
		"artifact", artifact, "bytes", size, "ranges", stored.Ranges, "held", exe.Sources(), "merged", stored.Merged)
	return exe, nil
}

// download GETs <server>/buildid/<id>/<artifact> into a temporary file,
// retrying 5xx answers, timeouts and network errors with backoff. It
// returns errNotFound for a 404.
func (f *Fetcher) download(u *url.URL, buildID, artifact string) (string, int64, error) {
	target := u.JoinPath("buildid", buildID, artifact)
	wait := f.cfg.Backoff
	for attempt := 0; ; attempt++ {
		path, size, err := f.get(target)
		var fe *fetchError
		retry := errors.As(err, &fe) && (fe.reason == ReasonTimeout || fe.reason == ReasonNetwork || fe.reason == retryableHTTP)
		if !retry {
			return path, size, err
		}
		if fe.reason == retryableHTTP {
			fe.reason = ReasonHTTP
		}
		if attempt >= f.cfg.Retries || f.ctx.Err() != nil {
			return "", 0, err
		}
		f.log.Debug("debuginfod: retrying", "url", target.Redacted(), "attempt", attempt+1, "wait", wait, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-f.ctx.Done():
			t.Stop()
			return "", 0, f.ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, time.Minute)
	}
}

// retryableHTTP marks a status worth retrying (5xx, 408, 429) inside
// download; it is reported as ReasonHTTP.
const retryableHTTP = "retryable_http_status"

// get is one request.
func (f *Fetcher) get(target *url.URL) (string, int64, error) {
	ctx, cancel := context.WithTimeout(f.ctx, f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), http.NoBody)
	if err != nil {
		return "", 0, &fetchError{reason: ReasonHTTP, err: err}
	}
	req.Header.Set("User-Agent", "flamehouse")
	resp, err := f.client.Do(req)
	if err != nil {
		return "", 0, f.transportError(ctx, err)
	}
	defer func() { _ = resp.Body.Close() }()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return "", 0, errNotFound
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests:
		return "", 0, &fetchError{reason: retryableHTTP, err: fmt.Errorf("%s answered %s", target.Redacted(), resp.Status)}
	case resp.StatusCode != http.StatusOK:
		return "", 0, &fetchError{reason: ReasonHTTP, err: fmt.Errorf("%s answered %s", target.Redacted(), resp.Status)}
	}
	if resp.ContentLength > f.cfg.MaxFileBytes {
		return "", 0, &fetchError{reason: ReasonTooLarge, err: fmt.Errorf("%s is %d bytes, the limit is %d", target.Redacted(), resp.ContentLength, f.cfg.MaxFileBytes)}
	}
	tmp, err := os.CreateTemp("", "flamehouse-debuginfod-*")
	if err != nil {
		return "", 0, &fetchError{reason: ReasonStore, err: fmt.Errorf("temporary file: %w", err)}
	}
	n, err := io.Copy(tmp, io.LimitReader(resp.Body, f.cfg.MaxFileBytes+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		_ = os.Remove(tmp.Name())
		return "", 0, f.transportError(ctx, fmt.Errorf("download %s: %w", target.Redacted(), err))
	case n > f.cfg.MaxFileBytes:
		_ = os.Remove(tmp.Name())
		return "", 0, &fetchError{reason: ReasonTooLarge, err: fmt.Errorf("%s is larger than the limit of %d bytes", target.Redacted(), f.cfg.MaxFileBytes)}
	}
	return tmp.Name(), n, nil
}

// transportError classifies a failed request: the fetcher closing, a
// timeout, or another network error. url.Error's text names the URL,
// which is redacted here.
func (f *Fetcher) transportError(ctx context.Context, err error) error {
	if f.ctx.Err() != nil {
		return f.ctx.Err()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redacted(ue.URL)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return &fetchError{reason: ReasonTimeout, err: err}
	}
	return &fetchError{reason: ReasonNetwork, err: err}
}
