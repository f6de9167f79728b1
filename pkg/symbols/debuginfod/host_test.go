package debuginfod

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/nativebin"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// newHostHarness is newHarness with the host source on over dirs.
func newHostHarness(t *testing.T, dirs []string, urls []string, change func(*Config)) *harness {
	t.Helper()
	cfg := DefaultConfig()
	cfg.URLs = urls
	cfg.Backoff = 0
	if change != nil {
		change(&cfg)
	}
	return startHostHarness(t, cfg, HostConfig{Enabled: true, DebugDirs: dirs})
}

// startHostHarness starts a fetcher with cfg and host into a recording
// store.
func startHostHarness(t *testing.T, cfg Config, host HostConfig) *harness {
	t.Helper()
	h := &harness{store: &recordingStore{}, known: &staticKnown{}, done: make(chan outcome, 16)}
	f, err := NewWithHost(cfg, host, h.store, h.known, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	f.done = func(id, reason string) { h.done <- outcome{id, reason} }
	h.f = f
	t.Cleanup(func() { require.NoError(t, f.Close(context.Background())) })
	return h
}

// TestHostSource: the files of this host, by build id, with no server.
// The mapping's path is used only when the file there has the frame's
// build id; a debug dir laid out by build id gives the debug file, which
// is combined with the stripped executable at the mapping's path.
func TestHostSource(t *testing.T) {
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared})
	other := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	stripped, dbg := nativebin.Stripped(t, bin), nativebin.DebugOnly(t, bin)
	debugDir := nativebin.DebugDir(t, dbg)
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, tc := range []struct {
		name       string
		dirs       []string
		file       string
		change     func(*Config)
		wantReason string
		wantPuts   []put
		wantFound  map[string]float64 // hostFound by artifact
	}{
		{
			name: "the mapping's file, same build id", file: bin.Path,
			wantPuts:  []put{{tenant: "acme", source: symbols.SourceHost, file: bin.Path, buildID: bin.BuildID}},
			wantFound: map[string]float64{"executable": 1},
		},
		{
			name: "the mapping's file has another build id: refused", file: other.Path,
			wantReason: ReasonMismatch,
		},
		{
			name: "debug dir by build id, then the stripped executable at the mapping's path", dirs: []string{t.TempDir(), debugDir}, file: stripped.Path,
			wantPuts: []put{
				{tenant: "acme", source: symbols.SourceHost, file: stripped.Path, buildID: bin.BuildID},
				{tenant: "acme", source: symbols.SourceHost, file: stripped.Path, buildID: bin.BuildID},
			},
			wantFound: map[string]float64{"debuginfo": 1, "executable": 1},
		},
		{
			name: "debug dir alone: the debug file is stored without segments", dirs: []string{debugDir}, file: "/nonexistent/libprog.so",
			wantPuts:  []put{{tenant: "acme", source: symbols.SourceHost, file: "/nonexistent/libprog.so", buildID: bin.BuildID}},
			wantFound: map[string]float64{"debuginfo": 1},
		},
		{name: "nothing on the host", file: "/nonexistent/libprog.so", wantReason: ReasonNotFound},
		{name: "a relative path is not looked at", file: filepath.Base(bin.Path), wantReason: ReasonNotFound},
		{name: "a FIFO is not opened for reading", file: fifo, wantReason: ReasonNotFound},
		{name: "a directory", file: filepath.Dir(bin.Path), wantReason: ReasonNotFound},
		{
			name: "larger than max_file_bytes", file: bin.Path, wantReason: ReasonTooLarge,
			change: func(c *Config) { c.MaxFileBytes = 100 },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostHarness(t, tc.dirs, nil, tc.change)
			h.see(bin.BuildID, tc.file)
			require.Equal(t, outcome{bin.BuildID, tc.wantReason}, h.wait(t))
			puts := h.store.all()
			for i := range puts {
				puts[i].ranges = 0
			}
			require.Equal(t, tc.wantPuts, puts)
			for _, a := range artifacts {
				require.InDelta(t, tc.wantFound[a], value(t, h.f.m.hostFound.WithLabelValues(a)), 0, a)
				require.Zero(t, value(t, h.f.m.fetched.WithLabelValues(a)), "nothing counted as downloaded")
			}
			if tc.wantReason != "" {
				require.InDelta(t, 1, value(t, h.f.m.failed.WithLabelValues(tc.wantReason)), 0)
			}
		})
	}
}

// TestHostSourceBeforeServers: the host is asked first for each
// artifact; a server only for what the host lacks.
func TestHostSourceBeforeServers(t *testing.T) {
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared})
	stripped, dbg := nativebin.Stripped(t, bin), nativebin.DebugOnly(t, bin)
	serveDbg := serveFile(t, dbg.Path)
	t.Run("the executable on the host: no request", func(t *testing.T) {
		srv := newServer(t, notFound)
		h := newHostHarness(t, nil, []string{srv.URL}, nil)
		h.see(bin.BuildID, bin.Path)
		require.Equal(t, outcome{bin.BuildID, ""}, h.wait(t))
		// debuginfo is asked for first (the host has no debug dir): one request.
		require.Equal(t, int32(1), srv.requests.Load())
		require.Equal(t, []put{{tenant: "acme", source: symbols.SourceHost, file: bin.Path, buildID: bin.BuildID}}, zeroRanges(h.store.all()))
	})
	t.Run("the debug file from the server, its executable from the host", func(t *testing.T) {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request, artifact string, _ int32) {
			if artifact == "debuginfo" {
				serveDbg(w, r)
				return
			}
			http.NotFound(w, r)
		})
		h := newHostHarness(t, nil, []string{srv.URL}, nil)
		h.see(bin.BuildID, stripped.Path)
		require.Equal(t, outcome{bin.BuildID, ""}, h.wait(t))
		require.Equal(t, int32(1), srv.requests.Load(), "the executable is not downloaded: the host has it")
		require.Equal(t, []put{
			{tenant: "acme", source: symbols.SourceDebuginfod, file: stripped.Path, buildID: bin.BuildID},
			{tenant: "acme", source: symbols.SourceHost, file: stripped.Path, buildID: bin.BuildID},
		}, zeroRanges(h.store.all()))
		require.InDelta(t, 1, value(t, h.f.m.fetched.WithLabelValues("debuginfo")), 0)
		require.InDelta(t, 1, value(t, h.f.m.hostFound.WithLabelValues("executable")), 0)
	})
	t.Run("another build id on the host: the server's file", func(t *testing.T) {
		other := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
		serveExe := serveFile(t, bin.Path)
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request, artifact string, _ int32) {
			if artifact == "executable" {
				serveExe(w, r)
				return
			}
			http.NotFound(w, r)
		})
		h := newHostHarness(t, nil, []string{srv.URL}, nil)
		h.see(bin.BuildID, other.Path)
		require.Equal(t, outcome{bin.BuildID, ""}, h.wait(t))
		require.Equal(t, []put{{tenant: "acme", source: symbols.SourceDebuginfod, file: other.Path, buildID: bin.BuildID}}, zeroRanges(h.store.all()))
	})
}

func zeroRanges(puts []put) []put {
	for i := range puts {
		puts[i].ranges = 0
	}
	return puts
}

func TestHostConfig(t *testing.T) {
	def := DefaultHostConfig()
	require.True(t, def.Enabled, "on by default: files are checked by build id")
	require.Equal(t, PathList{DefaultDebugDir}, def.DebugDirs)
	require.Equal(t, DefaultSearchDirs(), def.SearchDirs)
	require.NoError(t, def.Validate())
	bad := HostConfig{Enabled: true, DebugDirs: PathList{"/usr/lib/debug", "relative/dir"}}
	require.ErrorContains(t, bad.Validate(), `debug_dirs[1]: "relative/dir" is not an absolute path`)
	badSearch := HostConfig{Enabled: true, SearchDirs: PathList{"lib", "/usr/lib", "bin"}}
	err := badSearch.Validate()
	require.ErrorContains(t, err, `search_dirs[0]: "lib" is not an absolute path`)
	require.ErrorContains(t, err, `search_dirs[2]: "bin" is not an absolute path`)

	var l PathList
	require.NoError(t, l.Set(" /a, ,/b "))
	require.Equal(t, PathList{"/a", "/b"}, l)
	require.Equal(t, "/a,/b", l.String())

	_, err = NewWithHost(DefaultConfig(), HostConfig{}, &recordingStore{}, &staticKnown{}, slog.New(slog.DiscardHandler), nil)
	require.ErrorContains(t, err, "no debuginfod urls and the host source is off")
	_, err = NewWithHost(DefaultConfig(), bad, &recordingStore{}, &staticKnown{}, slog.New(slog.DiscardHandler), nil)
	require.ErrorContains(t, err, "debug_dirs[1]")
	f, err := NewWithHost(DefaultConfig(), def, &recordingStore{}, &staticKnown{}, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err, "the host source alone starts the fetcher")
	require.NoError(t, f.Close(context.Background()))
}

// The host source never leaves a file open: the mapping's file is
// released after each try (Close waits for the workers).
func TestHostSourceReleasesFiles(t *testing.T) {
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared})
	h := &hostSource{maxBytes: DefaultMaxFileBytes}
	file, size, release, err := h.open(item{key: key{"acme", bin.BuildID}, file: bin.Path}, "executable")
	require.NoError(t, err)
	st, err := os.Stat(bin.Path)
	require.NoError(t, err)
	require.Equal(t, st.Size(), size)
	release()
	_, err = file.Stat()
	require.ErrorIs(t, err, os.ErrClosed)
	_, _, _, err = h.open(item{key: key{"acme", bin.BuildID}, file: bin.Path}, "debuginfo")
	require.ErrorIs(t, err, errNotFound, "the mapping's path is an executable, never a debug file")
}
