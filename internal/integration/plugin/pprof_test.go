package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/pproftest"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/pprofconv"
)

// pprofResponse calls the pprof resource with a query over a range.
func (f *fixture) pprofResponse(t *testing.T, q map[string]any, from, to time.Time) *backend.CallResourceResponse {
	t.Helper()
	raw, err := json.Marshal(q)
	require.NoError(t, err)
	u := "pprof?" + url.Values{
		"query": {string(raw)}, "from": {strconv.FormatInt(from.UnixMilli(), 10)}, "to": {strconv.FormatInt(to.UnixMilli(), 10)},
	}.Encode()
	var resp *backend.CallResourceResponse
	err = f.ds.CallResource(context.Background(), &backend.CallResourceRequest{Method: http.MethodGet, Path: "pprof", URL: u},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { resp = r; return nil }))
	require.NoError(t, err)
	require.NotNil(t, resp)
	return resp
}

// TestPprofExportMatchesPprofTop imports a real CPU profile, downloads the
// flame graph query's answer through the pprof resource, and checks the
// file with `go tool pprof -top`: every function's flat and cum equal the
// top-functions table's self and total for the same query, and the
// original profile's; the file carries the profile's types, period,
// range, source lines and mapping.
func TestPprofExportMatchesPprofTop(t *testing.T) {
	f := newFixture(t, nil)
	dir := t.TempDir()
	rec := pproftest.Record(t, dir)
	wantFlat, wantCum, orig := rec.Flat, rec.Cum, rec.Profile
	req, err := pprofconv.Convert(orig, pprofconv.Options{ResourceAttributes: []string{"service.name", "pprof-export"}})
	require.NoError(t, err)
	f.send(t, req)

	at := time.Unix(0, orig.TimeNanos)
	from, to := at.Add(-time.Minute).Truncate(time.Millisecond), at.Add(time.Minute).Truncate(time.Millisecond) // the URL carries milliseconds
	q := map[string]any{"queryType": "profile", "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="pprof-export"}`, "maxNodes": 5}
	resp := f.pprofResponse(t, q, from, to)
	require.Equal(t, http.StatusOK, resp.Status, string(resp.Body))
	require.Equal(t, []string{"application/octet-stream"}, resp.Headers["Content-Type"])
	require.Equal(t, []string{`attachment; filename="flamehouse-process_cpu-pprof-export-` + from.UTC().Format("20060102T150405Z") + `.pb.gz"`},
		resp.Headers["Content-Disposition"])
	exported := filepath.Join(dir, "export.pb.gz")
	require.NoError(t, os.WriteFile(exported, resp.Body, 0o600))

	gotFlat, gotCum := pproftest.Top(t, exported)
	tableSelf, tableTotal := querytest.TableTop(plugintest.RequireOK(t, f.query(t, map[string]any{"queryType": "table", "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="pprof-export"}`}, from, to))[0])
	require.Equal(t, tableSelf, gotFlat, "pprof -top flat of the export equals the table's self")
	require.Equal(t, tableTotal, gotCum, "pprof -top cum of the export equals the table's total")
	require.Equal(t, wantFlat, gotFlat, "and the original profile's flat")
	require.Equal(t, wantCum, gotCum, "and the original profile's cum")

	p, err := profile.ParseData(resp.Body)
	require.NoError(t, err)
	require.Equal(t, []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}, p.SampleType)
	require.Equal(t, &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, p.PeriodType)
	require.Equal(t, orig.Period, p.Period, "the period of the profiles it holds")
	require.Equal(t, from.UnixNano(), p.TimeNanos)
	require.Equal(t, to.Sub(from).Nanoseconds(), p.DurationNanos)
	lines := 0
	for _, l := range p.Location {
		for _, line := range l.Line {
			if strings.HasSuffix(line.Function.Filename, "pproftest/pproftest.go") && line.Line > 0 {
				lines++
			}
		}
	}
	require.Positive(t, lines, "the work's locations carry their file and line")
	files := map[string]string{}
	for _, m := range p.Mapping {
		files[m.File] = m.BuildID
	}
	for _, m := range orig.Mapping {
		if m.File != "" && m.HasFunctions {
			require.Contains(t, files, m.File, "the original's mapping is there")
			require.Equal(t, m.BuildID, files[m.File], "with its build id")
		}
	}

	bad := f.pprofResponse(t, map[string]any{"queryType": "metrics", "profileTypeId": plugintest.CPUType}, from, to)
	require.Equal(t, http.StatusBadRequest, bad.Status)
	require.Contains(t, string(bad.Body), `not queryType \"metrics\"`)
	bad = f.pprofResponse(t, map[string]any{"profileTypeId": plugintest.CPUType, "labelSelector": "{nope"}, from, to)
	require.Equal(t, http.StatusBadRequest, bad.Status)
}
