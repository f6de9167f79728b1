package debuginfod

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/nativebin"
	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// recordingStore keeps what the fetcher stores (the real store is
// exercised by the service's integration test against ClickHouse).
type recordingStore struct {
	mu   sync.Mutex
	puts []put
	err  error
}

type put struct {
	tenant, source, file, buildID string
	ranges                        int
}

func (s *recordingStore) Put(_ context.Context, tenant, source, fileName string, exe *symbols.Executable) (symbols.Stored, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return symbols.Stored{}, s.err
	}
	s.puts = append(s.puts, put{tenant: tenant, source: source, file: fileName, buildID: exe.BuildID, ranges: len(exe.Ranges)})
	return symbols.Stored{BuildID: exe.BuildID, Ranges: len(exe.Ranges)}, nil
}

func (s *recordingStore) all() []put {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]put(nil), s.puts...)
}

// staticKnown says the listed build ids are stored, and counts lookups.
type staticKnown struct {
	ids     map[string]bool
	lookups atomic.Int32
}

func (k *staticKnown) Known(_ context.Context, _ string, ids []string) (map[string]bool, error) {
	k.lookups.Add(1)
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = k.ids[id]
	}
	return out, nil
}

type outcome struct{ buildID, reason string }

type harness struct {
	f     *Fetcher
	store *recordingStore
	known *staticKnown
	done  chan outcome
}

func newHarness(t *testing.T, urls []string, change func(*Config)) *harness {
	t.Helper()
	cfg := DefaultConfig()
	cfg.URLs = urls
	cfg.Backoff = time.Millisecond
	if change != nil {
		change(&cfg)
	}
	h := &harness{store: &recordingStore{}, known: &staticKnown{}, done: make(chan outcome, 16)}
	f, err := New(cfg, h.store, h.known, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	f.done = func(id, reason string) { h.done <- outcome{id, reason} }
	h.f = f
	t.Cleanup(func() { require.NoError(t, f.Close(context.Background())) })
	return h
}

// see reports one executable for tenant "acme".
func (h *harness) see(buildID, file string) {
	h.f.Unsymbolized("acme", []model.Executable{{BuildID: buildID, File: file}})
}

func (h *harness) wait(t *testing.T) outcome {
	t.Helper()
	select {
	case o := <-h.done:
		return o
	case <-time.After(time.Minute):
		t.Fatal("no fetch finished within a minute")
	}
	return outcome{}
}

// server answers /buildid/<id>/<artifact> from handle, counting requests.
type server struct {
	*httptest.Server
	requests atomic.Int32
	paths    sync.Map
}

func newServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, artifact string, n int32)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.requests.Add(1)
		s.paths.Store(r.URL.Path, true)
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if len(parts) != 3 || parts[0] != "buildid" {
			http.NotFound(w, r)
			return
		}
		handle(w, r, parts[2], n)
	}))
	t.Cleanup(s.Close)
	return s
}

func notFound(w http.ResponseWriter, r *http.Request, _ string, _ int32) { http.NotFound(w, r) }

func serveFile(t *testing.T, path string) func(w http.ResponseWriter, r *http.Request) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(data) }
}

const otherID = "00112233445566778899aabbccddeeff00112233"

func TestFetcherNotFoundEverywhereIsCachedNegatively(t *testing.T) {
	a, b := newServer(t, notFound), newServer(t, notFound)
	h := newHarness(t, []string{a.URL, b.URL + "/prefix"}, nil)
	h.see(otherID, "/lib/libnone.so")
	require.Equal(t, outcome{otherID, ReasonNotFound}, h.wait(t))
	require.Equal(t, int32(2), a.requests.Load(), "debuginfo, then executable")
	require.Equal(t, int32(2), b.requests.Load())
	_, ok := b.paths.Load("/prefix/buildid/" + otherID + "/executable")
	require.True(t, ok, "the server URL's path is kept")
	require.InDelta(t, 1, value(t, h.f.m.failed.WithLabelValues(ReasonNotFound)), 0)

	h.see(otherID, "/lib/libnone.so") // within the TTL: not asked again
	h.see(otherID, "/lib/libnone.so")
	require.InDelta(t, 2, value(t, h.f.m.negativeHits), 0)
	require.Equal(t, int32(2), a.requests.Load())
	require.Empty(t, h.store.all())

	h.f.mu.Lock()
	h.f.now = func() time.Time { return time.Now().Add(2 * time.Hour) } // the TTL passed
	h.f.mu.Unlock()
	h.see(otherID, "/lib/libnone.so")
	require.Equal(t, outcome{otherID, ReasonNotFound}, h.wait(t))
	require.Equal(t, int32(4), a.requests.Load())
}

func TestFetcherStoresWhatItFetches(t *testing.T) {
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	other := nativebin.Build(t, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared})
	require.NotEqual(t, bin.BuildID, other.BuildID)
	serve, serveOther := serveFile(t, bin.Path), serveFile(t, other.Path)
	for _, tc := range []struct {
		name         string
		handle       func(t *testing.T) func(w http.ResponseWriter, r *http.Request, artifact string, n int32)
		change       func(*Config)
		wantReason   string
		wantRequests int32
	}{
		{
			name: "debuginfo", wantRequests: 1,
			handle: func(*testing.T) func(http.ResponseWriter, *http.Request, string, int32) {
				return func(w http.ResponseWriter, r *http.Request, _ string, _ int32) { serve(w, r) }
			},
		},
		{
			name: "no debuginfo: the executable", wantRequests: 2,
			handle: func(*testing.T) func(http.ResponseWriter, *http.Request, string, int32) {
				return func(w http.ResponseWriter, r *http.Request, artifact string, _ int32) {
					if artifact == "debuginfo" {
						http.NotFound(w, r)
						return
					}
					serve(w, r)
				}
			},
		},
		{
			name: "500 then 200: retried", wantRequests: 3,
			handle: func(*testing.T) func(http.ResponseWriter, *http.Request, string, int32) {
				return func(w http.ResponseWriter, r *http.Request, _ string, n int32) {
					if n < 3 {
						http.Error(w, "busy", http.StatusServiceUnavailable)
						return
					}
					serve(w, r)
				}
			},
		},
		{
			name: "500 after the retries", wantReason: ReasonHTTP, wantRequests: 3,
			change: func(c *Config) { c.Retries = 2 },
			handle: func(*testing.T) func(http.ResponseWriter, *http.Request, string, int32) {
				return func(w http.ResponseWriter, _ *http.Request, _ string, _ int32) {
					http.Error(w, "broken", http.StatusInternalServerError)
				}
			},
		},
		{
			name: "timeouts after the retries", wantReason: ReasonTimeout, wantRequests: 2,
			change: func(c *Config) { c.Retries, c.Timeout = 1, 20*time.Millisecond },
			handle: func(*testing.T) func(http.ResponseWriter, *http.Request, string, int32) {
				return func(_ http.ResponseWriter, r *http.Request, _ string, _ int32) { <-r.Context().Done() }
			},
		},
		{
			name: "forbidden: not retried", wantReason: ReasonHTTP, wantRequests: 1,
			handle: func(*testing.T) func(http.ResponseWriter, *http.Request, string, int32) {
				return func(w http.ResponseWriter, _ *http.Request, _ string, _ int32) {
					http.Error(w, "no", http.StatusForbidden)
				}
			},
		},
		{
			name: "oversize by Content-Length", wantReason: ReasonTooLarge, wantRequests: 2,
			change: func(c *Config) { c.MaxFileBytes = 1000 },
			handle: func(*testing.T) func(http.ResponseWriter, *http.Request, string, int32) {
				return func(w http.ResponseWriter, r *http.Request, _ string, _ int32) { serve(w, r) }
			},
		},
		{
			name: "oversize while streaming", wantReason: ReasonTooLarge, wantRequests: 2,
			change: func(c *Config) { c.MaxFileBytes = 1000 },
			handle: func(*testing.T) func(http.ResponseWriter, *http.Request, string, int32) {
				return func(w http.ResponseWriter, _ *http.Request, _ string, _ int32) {
					for range 10 { // flushed chunks: no Content-Length
						_, _ = w.Write(make([]byte, 512))
						w.(http.Flusher).Flush() // httptest's writer flushes
					}
				}
			},
		},
		{
			name: "another build id", wantReason: ReasonMismatch, wantRequests: 2,
			handle: func(*testing.T) func(http.ResponseWriter, *http.Request, string, int32) {
				return func(w http.ResponseWriter, r *http.Request, _ string, _ int32) { serveOther(w, r) }
			},
		},
		{
			name: "not an ELF file", wantReason: ReasonBadFile, wantRequests: 2,
			handle: func(*testing.T) func(http.ResponseWriter, *http.Request, string, int32) {
				return func(w http.ResponseWriter, _ *http.Request, _ string, _ int32) {
					_, _ = io.WriteString(w, "<html>mirror</html>")
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handle(t))
			h := newHarness(t, []string{srv.URL}, tc.change)
			h.see(bin.BuildID, "/usr/bin/prog")
			require.Equal(t, outcome{bin.BuildID, tc.wantReason}, h.wait(t))
			require.Equal(t, tc.wantRequests, srv.requests.Load())
			if tc.wantReason != "" {
				require.Empty(t, h.store.all())
				require.InDelta(t, 1, value(t, h.f.m.failed.WithLabelValues(tc.wantReason)), 0)
				return
			}
			puts := h.store.all()
			require.Len(t, puts, 1)
			require.Equal(t, put{tenant: "acme", source: symbols.SourceDebuginfod, file: "/usr/bin/prog", buildID: bin.BuildID, ranges: puts[0].ranges}, puts[0])
			require.Positive(t, puts[0].ranges)
			require.InDelta(t, 1, value(t, h.f.m.fetched.WithLabelValues("debuginfo"))+value(t, h.f.m.fetched.WithLabelValues("executable")), 0)
			h.see(bin.BuildID, "/usr/bin/prog") // stored: not fetched again
			require.Equal(t, tc.wantRequests, srv.requests.Load())
		})
	}
}

func TestFetcherTriesTheNextServer(t *testing.T) {
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	serve := serveFile(t, bin.Path)
	down := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ string, _ int32) {
		http.Error(w, "down", http.StatusBadGateway)
	})
	empty := newServer(t, notFound)
	good := newServer(t, func(w http.ResponseWriter, r *http.Request, _ string, _ int32) { serve(w, r) })
	h := newHarness(t, []string{down.URL, empty.URL, good.URL}, func(c *Config) { c.Retries = 1 })
	h.see(bin.BuildID, "")
	require.Equal(t, outcome{bin.BuildID, ""}, h.wait(t))
	require.Equal(t, int32(2), down.requests.Load(), "one retry, then the next server")
	require.Equal(t, int32(1), empty.requests.Load(), "404 for the debug file; the good server has it")
	require.Equal(t, int32(1), good.requests.Load())
	require.Equal(t, bin.BuildID, h.store.all()[0].file, "without a mapping file name, the build id names it")
}

// TestFetcherCombinesDebugFileAndExecutable is a distribution's layout:
// the server has a separate debug file (DWARF, code segments without file
// size) and the stripped executable. Both are fetched and stored, the
// debug file first; Store.Put combines them.
func TestFetcherCombinesDebugFileAndExecutable(t *testing.T) {
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	dbg, stripped := nativebin.DebugOnly(t, bin), nativebin.Stripped(t, bin)
	serveDbg, serveExe := serveFile(t, dbg.Path), serveFile(t, stripped.Path)
	for _, tc := range []struct {
		name      string
		exe       bool
		wantPuts  int
		wantDwarf bool
	}{
		{name: "debug file and executable", exe: true, wantPuts: 2},
		{name: "debug file only: stored anyway", exe: false, wantPuts: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, artifact string, _ int32) {
				switch {
				case artifact == "debuginfo":
					serveDbg(w, r)
				case tc.exe:
					serveExe(w, r)
				default:
					http.NotFound(w, r)
				}
			})
			h := newHarness(t, []string{srv.URL}, nil)
			h.see(bin.BuildID, "/usr/bin/prog")
			require.Equal(t, outcome{bin.BuildID, ""}, h.wait(t))
			puts := h.store.all()
			require.Len(t, puts, tc.wantPuts)
			require.Equal(t, int32(2), srv.requests.Load())
			require.InDelta(t, 1, value(t, h.f.m.fetched.WithLabelValues("debuginfo")), 0)
			require.InDelta(t, float64(tc.wantPuts-1), value(t, h.f.m.fetched.WithLabelValues("executable")), 0)
		})
	}
}

func TestFetcherSkipsWhatItNeedNotFetch(t *testing.T) {
	srv := newServer(t, notFound)
	h := newHarness(t, []string{srv.URL}, nil)
	stored := strings.Repeat("ab", 20)
	h.known.ids = map[string]bool{stored: true}
	// A Go build id, a short id and upper case are not GNU build ids as
	// the pipeline reports them; a stored one is looked up once.
	h.f.Unsymbolized("acme", []model.Executable{
		{BuildID: "Go/abc/def"}, {BuildID: "abcd"}, {BuildID: strings.ToUpper(otherID)}, {BuildID: stored},
	})
	h.f.Unsymbolized("acme", []model.Executable{{BuildID: otherID}})
	require.Equal(t, outcome{otherID, ReasonNotFound}, h.wait(t))
	require.Equal(t, int32(2), srv.requests.Load(), "only the unknown build id is asked for")
	h.see(stored, "")
	require.Equal(t, int32(2), srv.requests.Load())
	require.LessOrEqual(t, h.known.lookups.Load(), int32(2))
}

// gatedKnown blocks every lookup until the gate opens or the fetcher closes.
type gatedKnown struct {
	entered chan struct{}
	gate    chan struct{}
}

func (k *gatedKnown) Known(ctx context.Context, _ string, _ []string) (map[string]bool, error) {
	select {
	case k.entered <- struct{}{}:
	default:
	}
	select {
	case <-k.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return nil, nil
}

func TestFetcherQueueIsBounded(t *testing.T) {
	srv := newServer(t, notFound)
	cfg := DefaultConfig()
	cfg.URLs, cfg.Concurrency, cfg.QueueSize = []string{srv.URL}, 1, 2
	known := &gatedKnown{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	f, err := New(cfg, &recordingStore{}, known, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close(context.Background())) }()
	f.Unsymbolized("acme", []model.Executable{{BuildID: otherID}})
	<-known.entered // the dispatcher holds the first build id
	var exes []model.Executable
	for i := range 10 {
		exes = append(exes, model.Executable{BuildID: fmt.Sprintf("%040x", i+1)})
	}
	f.Unsymbolized("acme", exes)
	require.InDelta(t, 8, value(t, f.m.failed.WithLabelValues(ReasonQueueFull)), 0, "queue_size build ids wait; the rest are dropped")
	require.InDelta(t, 3, value(t, f.m.queue), 0, "one being looked up, two queued")
	f.Unsymbolized("acme", exes[:2]) // already queued: not again, not dropped
	require.InDelta(t, 8, value(t, f.m.failed.WithLabelValues(ReasonQueueFull)), 0)
}

func TestFetcherCloseCancelsTheFetchInFlight(t *testing.T) {
	started := make(chan struct{}, 1)
	srv := newServer(t, func(_ http.ResponseWriter, r *http.Request, _ string, _ int32) {
		started <- struct{}{}
		<-r.Context().Done() // never answers
	})
	cfg := DefaultConfig()
	cfg.URLs = []string{srv.URL}
	store := &recordingStore{}
	f, err := New(cfg, store, &staticKnown{}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	var outcomes atomic.Int32
	f.done = func(string, string) { outcomes.Add(1) }
	f.Unsymbolized("acme", []model.Executable{{BuildID: otherID}})
	<-started
	require.NoError(t, f.Close(context.Background()), "Close cancels the download and waits for the workers")
	f.Unsymbolized("acme", []model.Executable{{BuildID: otherID}}) // after Close: ignored
	require.Empty(t, store.all())
	require.Zero(t, outcomes.Load(), "a cancelled fetch is no failure")
	for _, r := range []string{ReasonTimeout, ReasonNetwork, ReasonHTTP} {
		require.Zero(t, value(t, f.m.failed.WithLabelValues(r)), r)
	}
}

func TestFetcherStoreFailureIsRetriedLater(t *testing.T) {
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	serve := serveFile(t, bin.Path)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, _ string, _ int32) { serve(w, r) })
	h := newHarness(t, []string{srv.URL, srv.URL + "/second"}, nil)
	h.store.err = errors.New("clickhouse is down")
	h.see(bin.BuildID, "/usr/bin/prog")
	require.Equal(t, outcome{bin.BuildID, ReasonStore}, h.wait(t))
	require.Equal(t, int32(1), srv.requests.Load(), "a store failure does not ask the next server")
	h.f.mu.Lock()
	until := h.f.negative[bin.BuildID]
	h.f.mu.Unlock()
	require.WithinDuration(t, time.Now().Add(FailureTTL), until, time.Minute, "retried after FailureTTL, not the negative TTL")
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, func() error { c := DefaultConfig(); return c.Validate() }())
	c := DefaultConfig()
	c.URLs = []string{"https://user:s3cret@debuginfod.example.org", "ftp://x", "http://", "https://h/?q=1", "https://debuginfod.debian.net"}
	c.Concurrency, c.QueueSize, c.Timeout, c.Retries, c.Backoff, c.NegativeCacheTTL, c.MaxFileBytes = 0, 0, 0, -1, -1, 0, 0
	err := c.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"urls[1]: ftp://x: the scheme must be http or https", "urls[2]: http:: no host", "urls[3]", "concurrency", "queue_size",
		"timeout", "retries", "backoff", "negative_cache_ttl", "max_file_bytes",
	} {
		require.Contains(t, err.Error(), want)
	}
	require.NotContains(t, err.Error(), "urls[0]")
	require.NotContains(t, err.Error(), "urls[4]")
	bad := DefaultConfig()
	bad.URLs = []string{"https://user:s3cret@h:99999999/x?y"}
	require.NotContains(t, bad.Validate().Error(), "s3cret", "errors never repeat a password")
	list := URLList{"https://user:s3cret@h/"}
	require.NotContains(t, list.String(), "s3cret")
	shown, err := list.MarshalYAML()
	require.NoError(t, err)
	require.Equal(t, []string{"https://user:xxxxx@h/"}, shown)
}

// value reads a counter or gauge.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	require.NoError(t, m.Write(&out))
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}
