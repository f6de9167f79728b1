package service

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/pproftest"
)

// TestExportCommandMatchesPprofTop imports a real CPU profile with
// `flamehouse import`, exports the service's flame graph with `flamehouse
// export` against the running service's ClickHouse (as an operator would),
// and checks the file with `go tool pprof -top`: the original's flat and
// cum per function.
func TestExportCommandMatchesPprofTop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine; skipped under -short")
	}
	dir := t.TempDir()
	rec := pproftest.Record(t, dir)
	wantFlat, wantCum, orig := rec.Flat, rec.Cum, rec.Profile
	svc, _, _ := importedService(t, rec.Path, "exported")

	at := time.Unix(0, orig.TimeNanos)
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	exported := filepath.Join(dir, "export.pb.gz")
	server := []string{"-clickhouse.address", svc.HTTPAddress(), "-clickhouse.protocol", "http", "-log.level", "warn"}
	var out, errOut bytes.Buffer
	code := Main(append([]string{
		"export", "-selector", `{service_name="exported"}`, "-from", ms(at.Add(-time.Minute)), "-to", ms(at.Add(time.Minute)),
		"-o", exported,
	}, server...), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Regexp(t, `^`+regexp.QuoteMeta(exported)+`: \d+ stacks, \d+ nanoseconds of process_cpu:cpu:nanoseconds:cpu:nanoseconds, `, out.String())
	gotFlat, gotCum := pproftest.Top(t, exported)
	require.Equal(t, wantFlat, gotFlat, "flat per function")
	require.Equal(t, wantCum, gotCum, "cum per function")

	// A table query with a function filter: only the stacks through it.
	out.Reset()
	code = Main(append([]string{
		"export", "-query", `{"queryType":"table","function":"github.com/flamehouse/flamehouse/internal/pproftest.spinBoth"}`,
		"-selector", `{service_name="exported"}`, "-from", ms(at.Add(-time.Minute)), "-to", ms(at.Add(time.Minute)), "-o", "-",
	}, server...), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	p, err := profile.Parse(&out)
	require.NoError(t, err)
	var total int64
	for _, s := range p.Sample {
		total += s.Value[0]
	}
	require.Equal(t, wantCum["github.com/flamehouse/flamehouse/internal/pproftest.spinBoth"], total, "the function's total")

	for _, tt := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"-query", "{nope"}, 2, "-query is not a JSON object"},
		{[]string{"-from", "yesterday"}, 2, `-from: "yesterday" is not a time`},
		{[]string{"-selector", `{service_name=}`}, 2, "label selector: position 15"},
		{[]string{"-query", `{"queryType":"metrics"}`}, 1, `not queryType "metrics"`},
	} {
		errOut.Reset()
		code := Main(append(append([]string{"export"}, tt.args...), server...), &out, &errOut)
		require.Equal(t, tt.code, code, "%v: %s", tt.args, errOut.String())
		require.Contains(t, errOut.String(), tt.err, tt.args)
	}
}
