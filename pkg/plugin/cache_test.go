package plugin_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/internal/querytest"
	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
	"github.com/flamehouse/flamehouse/pkg/plugin"
	"github.com/flamehouse/flamehouse/pkg/query"
)

// recordingConn passes statements through and records them.
type recordingConn struct {
	clickhouse.Conn
	mu         sync.Mutex
	statements []string
}

func (c *recordingConn) Query(ctx context.Context, q string, args ...any) (driver.Rows, error) {
	c.record(q)
	return c.Conn.Query(ctx, q, args...)
}

func (c *recordingConn) QueryRow(ctx context.Context, q string, args ...any) driver.Row {
	c.record(q)
	return c.Conn.QueryRow(ctx, q, args...)
}

func (c *recordingConn) record(q string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.statements = append(c.statements, q)
}

// take returns the statements recorded since the last take.
func (c *recordingConn) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.statements
	c.statements = nil
	return out
}

// sampleTables matches the tables that hold sample rows: the raw table and
// every rollup.
var sampleTables = regexp.MustCompile("`otel_profile_(service_)?samples(_1m|_1h)?`")

func readsSamples(statements []string) bool {
	for _, s := range statements {
		if sampleTables.MatchString(s) {
			return true
		}
	}
	return false
}

// recordQueries puts a recording connection between a datasource and
// ClickHouse.
func recordQueries(t *testing.T, ds *plugin.Datasource) *recordingConn {
	t.Helper()
	conn, err := ds.Connection()
	require.NoError(t, err)
	rec := &recordingConn{Conn: conn}
	ds.SetConnection(rec)
	return rec
}

// dashboardQuery runs a query as a dashboard panel does, whose uid goes
// into the ClickHouse log_comment.
func dashboardQuery(t *testing.T, ds *plugin.Datasource, dashboard string, q map[string]any, from, to time.Time) backend.DataResponse {
	t.Helper()
	raw, err := json.Marshal(q)
	require.NoError(t, err)
	resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{
		Headers: map[string]string{"http_X-Dashboard-Uid": dashboard, "http_X-Panel-Id": "1"},
		Queries: []backend.DataQuery{{RefID: "A", JSON: raw, TimeRange: backend.TimeRange{From: from, To: to}, Interval: time.Minute}},
	})
	require.NoError(t, err)
	return resp.Responses["A"]
}

// queryLogReadRows sums read_rows in system.query_log of the queries that
// read the sample tables under a dashboard's log_comment (a server with a
// query log only).
func queryLogReadRows(t *testing.T, ds *plugin.Datasource, dashboard string) (queries, rows uint64) {
	t.Helper()
	conn, err := ds.Connection()
	require.NoError(t, err)
	require.NoError(t, conn.Exec(context.Background(), "SYSTEM FLUSH LOGS"))
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT count(), sum(read_rows) FROM system.query_log WHERE type = 'QueryFinish' "+
		"AND log_comment LIKE ? AND match(query, ?)", "%grafana_dashboard:"+dashboard+" %", sampleTables.String()).Scan(&queries, &rows))
	return queries, rows
}

func sameFrames(t *testing.T, want, got data.Frames) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		wj, err := want[i].MarshalJSON()
		require.NoError(t, err)
		gj, err := got[i].MarshalJSON()
		require.NoError(t, err)
		require.JSONEq(t, string(wj), string(gj))
	}
}

// TestClosedRangesAreCached: a second identical query over a range that
// ended more than a minute ago reads no sample rows (the plugin's cache on
// the embedded engine, whose ClickHouse query cache has no room; with an
// external server that has one, ClickHouse's, checked in
// system.query_log), and answers the same; late rows show once the TTL
// has passed; a range that touches now is never cached.
func TestClosedRangesAreCached(t *testing.T) {
	f := newFixture(t, plugintest.Migrated, map[string]any{"cache": "auto", "cacheTtl": "300"})
	clock := time.Now()
	f.ds.Cache().Now = func() time.Time { return clock }
	rec := recordQueries(t, f.ds)
	at := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	req, batch := plugintest.Report(t, at)
	f.send(t, req)
	_, _, total := querytest.Top(batch, plugintest.CPUOnly)
	from, to := at.Add(-time.Minute), at.Add(5*time.Minute)
	mode := f.ds.Cache().ModeInUse(context.Background(), rec.Conn)

	queries := []map[string]any{
		{"queryType": "profile", "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="checkout"}`},
		{"queryType": "table", "profileTypeId": plugintest.CPUType},
		{"queryType": "metrics", "profileTypeId": plugintest.CPUType, "groupBy": []string{"k8s_pod_name", "thread_name"}},
		{"queryType": "diff", "profileTypeId": plugintest.CPUType, "left": map[string]any{"offset": "1h"}},
		{"queryType": "spans", "profileTypeId": plugintest.CPUType},
	}
	first := make([]data.Frames, len(queries))
	dashboard := "cache-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for i, q := range queries {
		rec.take()
		first[i] = plugintest.RequireOK(t, dashboardQuery(t, f.ds, dashboard+"-first", q, from, to))
		require.True(t, readsSamples(rec.take()), "%v: the first query reads the samples", q["queryType"])
	}
	require.Equal(t, total, querytest.FlameRows(t, first[0][0], "ns")[0].Value)
	for i, q := range queries {
		again := plugintest.RequireOK(t, dashboardQuery(t, f.ds, dashboard+"-again", q, from, to))
		sameFrames(t, first[i], again)
		statements := rec.take()
		switch mode {
		case query.CachePlugin:
			require.False(t, readsSamples(statements), "%v: answered from the plugin's cache: %q", q["queryType"], statements)
		case query.CacheClickHouse:
			n, rows := queryLogReadRows(t, f.ds, dashboard+"-again")
			require.Positive(t, n)
			require.Zero(t, rows, "answered from ClickHouse's query cache")
		default:
			t.Fatalf("cache mode %q", mode)
		}
	}
	if mode == query.CachePlugin {
		require.Positive(t, f.ds.Cache().Stats().Hits)
		// Another query that makes the same read (the profile query's sums per stack, as a table) reads no
		// samples either: the plugin keeps the reads' rows as well as the answers.
		table := plugintest.RequireOK(t, dashboardQuery(t, f.ds, dashboard+"-table", map[string]any{
			"queryType": "table", "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="checkout"}`,
		}, from, to))
		require.False(t, readsSamples(rec.take()), "the table of the flame graph's selection and range")
		require.Positive(t, table[0].Rows())
		// Answers are shared: a caller's RefID stays its own.
		a := plugintest.RequireOK(t, dashboardQuery(t, f.ds, dashboard, queries[0], from, to))
		a[0].RefID = "changed"
		require.Equal(t, "A", plugintest.RequireOK(t, dashboardQuery(t, f.ds, dashboard, queries[0], from, to))[0].RefID)
	}

	// Late rows in the closed range: the cached answer stays until the TTL
	// has passed (answers are invalidated by time only).
	late, lateBatch := plugintest.Report(t, at.Add(2*time.Minute))
	f.send(t, late)
	_, _, lateTotal := querytest.Top(lateBatch, plugintest.CPUOnly)
	require.Equal(t, total, plugintest.FlameRoot(t, f.ds, queries[0], from, to), "within the TTL")
	clock = clock.Add(301 * time.Second)
	require.Equal(t, total+lateTotal, plugintest.FlameRoot(t, f.ds, queries[0], from, to), "after the TTL")

	// A range that touches now is read every time and sees every row.
	recent := time.Now().UTC().Add(-20 * time.Second)
	clock = time.Now()
	cfg := profilegen.DefaultConfig()
	cfg.Stacks, cfg.Pods, cfg.SamplesPerSecond, cfg.Seed = 100, 2, 100, 9
	g := profilegen.New(cfg)
	var want int64
	for i := range 2 {
		r := g.Report(recent.Add(time.Duration(i) * 5 * time.Second))
		f.send(t, r)
		want += sumCPU(t, r)
		rec.take()
		got := plugintest.FlameRoot(t, f.ds, queries[0], recent.Add(-10*time.Minute), clock)
		require.True(t, readsSamples(rec.take()), "a range touching now is read")
		require.Equal(t, want, got, "report %d is counted", i)
	}
}

// sumCPU is the CPU time of a generated report as converted.
func sumCPU(t *testing.T, req *collectorpb.ExportProfilesServiceRequest) int64 {
	t.Helper()
	res, err := convert.Convert(req, convert.DefaultOptions(""))
	require.NoError(t, err)
	require.Empty(t, res.Rejected)
	_, _, sum := querytest.Top(res.Batch, plugintest.CPUOnly)
	return sum
}

// TestCacheModes: on the embedded engine the automatic mode is the
// plugin's cache (its query cache has no room); a datasource forced to
// ClickHouse's cache sends use_query_cache and its TTL with the
// datasource's own settings, which the embedded engine's guard accepts;
// "off" and a TTL of 0 cache nothing.
func TestCacheModes(t *testing.T) {
	f := newFixture(t, plugintest.Migrated, map[string]any{"cache": "auto"})
	conn, err := f.ds.Connection()
	require.NoError(t, err)
	ctx := context.Background()
	var size uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT toUInt64OrZero(any(value)) FROM system.server_settings WHERE name = 'query_cache.max_size_in_bytes'").Scan(&size))
	want := query.CachePlugin
	if size > 0 {
		want = query.CacheClickHouse
	}
	require.Equal(t, want, f.ds.Cache().ModeInUse(ctx, conn))

	at := time.Now().UTC().Truncate(time.Minute).Add(-20 * time.Minute)
	req, batch := plugintest.Report(t, at)
	f.send(t, req)
	_, _, total := querytest.Top(batch, plugintest.CPUOnly)
	q := map[string]any{"profileTypeId": plugintest.CPUType}
	for name, profiles := range map[string]map[string]any{
		"clickhouse": {"cache": "clickhouse"}, "off": {"cache": "off"}, "no ttl": {"cache": "auto", "cacheTtl": "0"},
	} {
		t.Run(name, func(t *testing.T) {
			settings := plugintest.EmbeddedSettings(t, f.tables.Database)
			for k, v := range profiles {
				settings["profiles"].(map[string]any)[k] = v // built by embeddedSettings
			}
			ds := plugintest.Instance(t, settings, nil)
			rec := recordQueries(t, ds)
			for range 2 {
				require.Equal(t, total, plugintest.FlameRoot(t, ds, q, at.Add(-time.Minute), at.Add(5*time.Minute)))
				require.True(t, readsSamples(rec.take()), "%s: read every time", name)
			}
		})
	}

	settings := plugintest.EmbeddedSettings(t, f.tables.Database)
	settings["profiles"].(map[string]any)["cache"] = "clickhouse" // built by embeddedSettings
	ds := plugintest.Instance(t, settings, nil)
	conn, err = ds.Connection()
	require.NoError(t, err)
	require.Equal(t, query.CacheClickHouse, ds.Cache().ModeInUse(ctx, conn))
	cached := ds.Cache().ClickHouseContext(ds.QueryContext(ctx, &backend.User{Login: "bob"}, "d", "2", ""), "acme")
	var use, ttl uint64
	var comment, tag string
	require.NoError(t, conn.QueryRow(cached, "SELECT toUInt64(getSetting('use_query_cache')), toUInt64(getSetting('query_cache_ttl')), "+
		"toString(getSetting('log_comment')), toString(getSetting('query_cache_tag'))").Scan(&use, &ttl, &comment, &tag))
	require.Equal(t, uint64(1), use)
	require.Equal(t, uint64(300), ttl)
	require.Equal(t, `flamehouse tenant "acme"`, tag, "entries per tenant")
	require.Equal(t, "flamehouse grafana_user:bob grafana_dashboard:d grafana_panel:2", comment, "the datasource's settings stay")

	for _, bad := range []map[string]any{{"cache": "sometimes"}, {"cacheTtl": "soon"}, {"cacheClosedAfter": "-1"}} {
		settings := plugintest.EmbeddedSettings(t, "default")
		for k, v := range bad {
			settings["profiles"].(map[string]any)[k] = v // built by embeddedSettings
		}
		_, err := plugin.LoadSettings(backend.DataSourceInstanceSettings{JSONData: mustJSON(t, settings)})
		require.Error(t, err, "%v", bad)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}
