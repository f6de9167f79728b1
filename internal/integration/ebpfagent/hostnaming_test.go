package ebpfagent_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
	"github.com/flamehouse/flamehouse/pkg/profiletype"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/symbols"
	"github.com/flamehouse/flamehouse/pkg/symbols/debuginfod"
)

// executableRow is a row of the Executables view.
type executableRow struct {
	name, buildID, source string
	frames                int64
	symbolized            float64
}

// named is how many of its distinct frames have a name.
func (r executableRow) named() int64 { return int64(math.Round(r.symbolized * float64(r.frames))) }

// executables is the Executables view of the whole machine (every
// process the agent profiled) in a destination.
func executables(t *testing.T, d destination, from, to time.Time) map[string]executableRow {
	t.Helper()
	frames := run(t, d, from, to, map[string]any{"queryType": "executables", "profileTypeId": profiletype.CPUTime, "labelSelector": "{}", "limit": 10000})
	f := frames[0]
	out := map[string]executableRow{}
	for i := range f.Rows() {
		var r executableRow
		for _, field := range f.Fields {
			v, _ := field.ConcreteAt(i)
			switch field.Name {
			case "executable":
				r.name = fmt.Sprint(v)
			case "buildId":
				r.buildID = fmt.Sprint(v)
			case "source":
				r.source = fmt.Sprint(v)
			case "frames":
				r.frames = toInt64(v)
			case "symbolized":
				r.symbolized, _ = v.(float64)
			}
		}
		out[r.name+" "+r.buildID] = r
	}
	return out
}

// checkHostNaming measures what the host source's index of search dirs
// (symbols.host.search_dirs) adds on this machine, on the agent's real
// traffic. The ingest ran with the defaults (the index on); the
// Collector's database, which got the same requests but has no fetcher,
// gets the host source as it was before the index (debug dirs and the
// mapping's path only): a fetcher of its own, fed the build ids its
// unsymbolized frames carry, as the ingest feeds its fetcher. Both are then
// read through the Executables view.
func checkHostNaming(t *testing.T, ingestMetrics string, ingest, before destination, from, to time.Time) {
	t.Helper()
	ctx := context.Background()
	waitIdle(t, "the ingest's symbol fetcher", func() float64 { return metricValue(t, ingestMetrics, "flamehouse_symbols_debuginfod_queue_length") })

	var exes []model.Executable
	rows, err := before.engine.Conn.Query(ctx, "SELECT DISTINCT BuildId, MappingFile FROM "+before.tables.Qualified(schema.Frames)+
		" WHERE FunctionName = '' AND BuildId != ''")
	require.NoError(t, err)
	for rows.Next() {
		var e model.Executable
		require.NoError(t, rows.Scan(&e.BuildID, &e.File))
		exes = append(exes, e)
	}
	require.NoError(t, rows.Close())
	host := debuginfod.DefaultHostConfig()
	host.SearchDirs = nil // as before the index
	reg := prometheus.NewRegistry()
	fetcher, err := debuginfod.NewWithHost(debuginfod.DefaultConfig(), host, symbols.NewStore(before.tables, before.engine.Conn, nil),
		debuginfod.NewTableKnown(before.engine.Conn, before.tables), slog.New(slog.DiscardHandler), reg)
	require.NoError(t, err)
	fetcher.Unsymbolized("", exes)
	waitIdle(t, "the debug-dirs-only fetcher", func() float64 { return gathered(t, reg, "flamehouse_symbols_debuginfod_queue_length") })
	require.NoError(t, fetcher.Close(ctx))

	after, was := executables(t, ingest, from, to), executables(t, before, from, to)
	var lines []string
	var framesTotal, namedBefore, namedAfter int64
	for _, k := range slices.Sorted(maps.Keys(after)) {
		a, b := after[k], was[k]
		framesTotal += a.frames
		namedBefore += b.named()
		namedAfter += a.named()
		if a.named() != b.named() || a.source != b.source {
			lines = append(lines, fmt.Sprintf("  %-28s %5d frames: named %4d (%s) -> %4d (%s)", a.name, a.frames, b.named(), b.source, a.named(), a.source))
		}
	}
	t.Logf("distinct frames of the whole machine named, debug dirs only -> with search_dirs: %d -> %d of %d (%.1f%% -> %.1f%%; unnamed %d -> %d); changed:\n%s",
		namedBefore, namedAfter, framesTotal, 100*float64(namedBefore)/float64(framesTotal), 100*float64(namedAfter)/float64(framesTotal),
		framesTotal-namedBefore, framesTotal-namedAfter, strings.Join(lines, "\n"))
	require.Greater(t, namedAfter, namedBefore, "the index names frames the debug dirs alone do not")
	py := after["python3.11 "+interpreterBuildID(t)]
	require.Equal(t, "ingest host", py.source, "the interpreter's own frames (mapping python3.11) named from /usr/bin/python3.11: %+v", py)
	require.Positive(t, py.named(), "%+v", py)
}

// interpreterBuildID is the GNU build id of the Python workload's
// interpreter (other Pythons on the machine have other build ids).
func interpreterBuildID(t *testing.T) string {
	t.Helper()
	f, err := os.Open(pythonPath)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	id, err := symbols.ReadBuildID(f)
	require.NoError(t, err)
	return id
}

// waitIdle waits until a fetcher's queue has been empty for 2 s running.
func waitIdle(t *testing.T, what string, queue func() float64) {
	t.Helper()
	deadline, idleSince := time.Now().Add(2*time.Minute), time.Time{}
	for {
		switch {
		case queue() > 0:
			idleSince = time.Time{}
		case idleSince.IsZero():
			idleSince = time.Now()
		case time.Since(idleSince) >= 2*time.Second:
			return
		}
		require.True(t, time.Now().Before(deadline), "%s still busy after 2 minutes", what)
		time.Sleep(200 * time.Millisecond)
	}
}

// metricValue reads one series of the ingest's /metrics.
func metricValue(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for line := range strings.Lines(string(body)) {
		if name, value, ok := strings.Cut(strings.TrimSpace(line), " "); ok && name == series {
			v, err := strconv.ParseFloat(value, 64)
			require.NoError(t, err)
			return v
		}
	}
	t.Fatalf("no %s in %s", series, url)
	return 0
}

// gathered reads an unlabelled gauge or counter of a registry.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			if g := f.GetMetric()[0].GetGauge(); g != nil {
				return g.GetValue()
			}
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
