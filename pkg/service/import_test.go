package service

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/pproftest"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// TestImportMatchesPprofTop imports a real CPU profile with `flamehouse
// import` into a running Flamehouse and checks that per-function flat and
// cumulative CPU time computed from ClickHouse equal `go tool pprof -top`.
func TestImportMatchesPprofTop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine; skipped under -short")
	}
	rec := pproftest.Record(t, t.TempDir())
	svc, cfg, printed := importedService(t, rec.Path, "imported", "-attr", "env=test")
	require.Contains(t, printed, `as service "imported"`)

	gotFlat, gotCum := clickhouseTop(t, svc, cfg.Schema)
	require.Equal(t, rec.Flat, gotFlat, "flat CPU time per function")
	require.Equal(t, rec.Cum, gotCum, "cumulative CPU time per function")
}

// importedService runs Flamehouse (no self-profiling, no retention, so
// that recorded times are kept) and imports a pprof file into it with
// `flamehouse import` as a service, more flags of the command after it; it
// returns the service, its configuration and what the command printed.
func importedService(t *testing.T, path, service string, flags ...string) (*Service, Config, string) {
	t.Helper()
	cfg := localConfig(t)
	cfg.SelfProfile.Enabled = false
	cfg.Schema.Retention = schema.Retention{}
	ctx := context.Background()
	svc, err := Start(ctx, cfg, slog.New(slog.DiscardHandler), Everything)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Stop(ctx)) })
	_, httpAddr := svc.IngestAddresses()
	var out, errOut bytes.Buffer
	args := append([]string{"import", "-endpoint", "http://" + httpAddr, "-service", service}, flags...)
	require.Equal(t, 0, Main(append(args, path), &out, &errOut), errOut.String())
	return svc, cfg, out.String()
}

// clickhouseTop computes flat and cumulative CPU time per function from
// the stored samples, stacks and frames, the way a top table does.
func clickhouseTop(t *testing.T, svc *Service, tables schema.Config) (flat, cum map[string]int64) {
	t.Helper()
	ctx := context.Background()
	names := map[uint64]string{}
	rows, err := svc.Conn().Query(ctx, "SELECT FrameId, any(FunctionName), any(MappingFile) FROM "+tables.Qualified(schema.Frames)+
		" WHERE ServiceName = 'imported' GROUP BY FrameId")
	require.NoError(t, err)
	for rows.Next() {
		var id uint64
		var name, mapping string
		require.NoError(t, rows.Scan(&id, &name, &mapping))
		if name == "" && mapping != "" {
			// pprof's function granularity names an unsymbolized
			// location after its mapping's base name.
			name = "[" + filepath.Base(mapping) + "]"
		}
		names[id] = name
	}
	require.NoError(t, rows.Err())
	rows, err = svc.Conn().Query(ctx, `SELECT s.v, st.FrameIds FROM (
		SELECT StackId, sum(Value) AS v FROM `+tables.Qualified(schema.Samples)+`
		WHERE ServiceName = 'imported' AND ProfileType = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds' GROUP BY StackId) AS s
		INNER JOIN (SELECT StackId, any(FrameIds) AS FrameIds FROM `+tables.Qualified(schema.Stacks)+` GROUP BY StackId) AS st USING (StackId)`)
	require.NoError(t, err)
	flat, cum = map[string]int64{}, map[string]int64{}
	for rows.Next() {
		var v int64
		var frames []uint64
		require.NoError(t, rows.Scan(&v, &frames))
		require.NotEmpty(t, frames)
		flat[names[frames[len(frames)-1]]] += v // frames are root first
		seen := map[string]bool{}
		for _, f := range frames {
			if n := names[f]; !seen[n] {
				seen[n] = true
				cum[n] += v
			}
		}
	}
	require.NoError(t, rows.Err())
	for n, v := range flat {
		if v == 0 {
			delete(flat, n)
		}
	}
	// pprof -top lists every function, with 0 flat for callers only.
	for n := range cum {
		if _, ok := flat[n]; !ok {
			flat[n] = 0
		}
	}
	return flat, cum
}
