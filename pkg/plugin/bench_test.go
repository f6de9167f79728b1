package plugin_test

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/benchenv"
	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/chembed"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// BenchmarkQuery measures flame graph and top-table queries through
// QueryData on the workload of the performance targets: one service at
// 10k samples/s over 100 pods with 50k distinct stacks (log-uniform
// popularity), CPU time in nanoseconds.
//
// The stacks, frames and series come through the ingest's pipeline and
// writer (generator reports, fixture_test.go); the sample rows are then synthesized in ClickHouse at 8,000
// rows/s (10k events/s aggregated per second): FLAMEHOUSE_BENCH_MINUTES
// minutes of raw rows (default 2, so that CI stays quick; 60 for the
// 1-hour target), which the rollup views aggregate as usual, plus
// FLAMEHOUSE_BENCH_HOURS hours of hourly rollup rows before them (default
// 23, 200k rows per hour; 167 for the 7-day target, 719 for 30 days) and the service
// rollup's rows of those hours, for the 24-hour and 7-day queries. FLAMEHOUSE_BENCH_RATE multiplies the rows per second and
// per hour (2: the doubled ingest rate of the targets).
//
// Reported: ms per query (p50 over the runs), the data's minutes, and
// allocated bytes per query (the plugin's memory). The datasource caches
// stacks and frame labels across queries; "-cold" runs start without.
func BenchmarkQuery(b *testing.B) {
	minutes := benchenv.Int(b, "FLAMEHOUSE_BENCH_MINUTES", 2)
	hours := benchenv.Int(b, "FLAMEHOUSE_BENCH_HOURS", 23)
	rate := benchenv.Int(b, "FLAMEHOUSE_BENCH_RATE", 1)
	f := newFixture(b, plugintest.Migrated, nil)
	start := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	fillSamples(b, f, "", start, minutes, hours, rate)
	// Ranges end off the minute, as Grafana's "now" does: their edges are
	// read from the raw table, whose rows grow with the rate.
	end := start.Add(time.Duration(minutes)*time.Minute - 17*time.Second)
	// The fixture's datasource caches no answers; this one does (the
	// "-cached" queries: their range ended over a minute ago).
	settings := plugintest.EmbeddedSettings(b, f.tables.Database)
	settings["profiles"].(map[string]any)["cache"] = "auto" // built by embeddedSettings
	cached := &fixture{ds: plugintest.Instance(b, settings, nil)}
	for _, bq := range []struct {
		name     string
		from     time.Time
		maxNodes int
		kind     string
		extra    map[string]any
	}{
		{"flame-1h-cold", end.Add(-time.Hour), 16384, "profile", nil},
		{"flame-1h", end.Add(-time.Hour), 16384, "profile", nil},
		{"table-1h", end.Add(-time.Hour), 0, "table", nil},
		// the last hour against the hour before (hourly rollup rows)
		{"diff-1h", end.Add(-time.Hour), 16384, "diff", map[string]any{"left": map[string]any{"offset": "1h"}}},
		// the same hour twice (a regexp selector of the same service, no offset): both sides read what
		// flame-1h reads, from the same tables
		{"diff-1h-same-range", end.Add(-time.Hour), 16384, "diff", map[string]any{"left": map[string]any{
			"labelSelector": `{service_name=~"check.*"}`,
		}}},
		{"flame-24h", end.Add(-24 * time.Hour), 16384, "profile", nil},
		{"flame-24h-cached", end.Add(-24 * time.Hour), 16384, "profile", nil},
		{"table-24h", end.Add(-24 * time.Hour), 0, "table", nil},
		{"flame-7d", end.Add(-7 * 24 * time.Hour), 16384, "profile", nil},
		// with FLAMEHOUSE_BENCH_HOURS=719 (30 days of hourly rollup rows)
		{"flame-30d", end.Add(-30 * 24 * time.Hour), 16384, "profile", nil},
	} {
		b.Run(bq.name, func(b *testing.B) {
			q := map[string]any{"queryType": bq.kind, "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="checkout"}`}
			if bq.maxNodes > 0 {
				q["maxNodes"] = bq.maxNodes
			}
			for k, v := range bq.extra {
				q[k] = v
			}
			fx := f
			if strings.HasSuffix(bq.name, "-cached") {
				fx = cached
				require.NoError(b, plugintest.Query(b, fx.ds, q, bq.from, end).Error) // fills the cache
			}
			var took []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				if strings.HasSuffix(bq.name, "-cold") {
					f.ds.ResetSymbols() // nothing cached: every stack and frame is read
				}
				t0 := time.Now()
				r := plugintest.Query(b, fx.ds, q, bq.from, end)
				took = append(took, time.Since(t0))
				require.NoError(b, r.Error)
				require.Positive(b, r.Frames[0].Rows())
				if bq.maxNodes > 0 {
					require.LessOrEqual(b, r.Frames[0].Rows(), bq.maxNodes)
				}
			}
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(minutes), "raw-minutes")
			b.ReportMetric(float64(hours), "rollup-hours")
			b.ReportMetric(float64(rate), "rate-factor")
		})
	}
}

// fillSamples registers the workload's stacks through the ingest's
// pipeline (tenant "") and synthesizes a tenant's sample rows in ClickHouse.
func fillSamples(b *testing.B, f *fixture, tenant string, start time.Time, minutes, hours, rate int) {
	b.Helper()
	conn := chtest.Get(b).Open(b)
	tables := f.tables
	ctx := context.Background()
	tq := "'" + tenant + "'"
	if tenant == "" {
		g := profilegen.New(profilegen.DefaultConfig())
		for i := range 3 { // about 40k of the 50k stacks, as in an hour of real reports
			f.send(b, g.Report(start.Add(-time.Duration(hours+1)*time.Hour+time.Duration(i)*5*time.Second)))
		}
	} else { // the same stacks, frames and series for another tenant
		for _, t := range []string{schema.Stacks, schema.Frames, schema.Series} {
			// (a subquery: WHERE would see the replaced TenantId)
			require.NoError(b, conn.Exec(ctx, "INSERT INTO "+tables.Qualified(t)+" SELECT * REPLACE ("+tq+" AS TenantId) FROM (SELECT * FROM "+
				tables.Qualified(t)+" WHERE TenantId = '')"))
		}
	}
	ids := "WITH (SELECT groupArray(DISTINCT StackId) FROM " + tables.Qualified(schema.Stacks) + " WHERE TenantId = " + tq + ") AS st, " +
		"(SELECT groupArray(DISTINCT SeriesId) FROM " + tables.Qualified(schema.Series) + " WHERE TenantId = " + tq + ") AS se "
	// log-uniform stack popularity, uniform pods
	pick := "arrayElement(st, 1 + least(length(st) - 1, toUInt64(exp(log(length(st)) * randCanonical())) - 1)) AS StackId, " +
		"arrayElement(se, 1 + (rand() % length(se))) AS SeriesId"
	require.NoError(b, conn.Exec(ctx, "INSERT INTO "+tables.Qualified(schema.Samples)+
		" (Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId, Value, SampleAttributes) "+ids+
		"SELECT toDateTime("+strconv.FormatInt(start.Unix(), 10)+" + intDiv(number, "+strconv.Itoa(8000*rate)+")), "+tq+", 'checkout', '"+plugintest.CPUType+"', "+pick+
		", 10000000 * (1 + rand() % 2), map('thread.name', concat('worker-', toString(number % 16))) FROM numbers("+
		strconv.Itoa(minutes*60*8000*rate)+")"))
	if hours > 0 {
		require.NoError(b, conn.Exec(ctx, "INSERT INTO "+tables.Qualified(schema.SamplesHour)+
			" (Timestamp, TenantId, ServiceName, ProfileType, StackId, SeriesId, Value) "+ids+
			"SELECT toDateTime("+strconv.FormatInt(start.Add(-time.Duration(hours)*time.Hour).Unix(), 10)+" + 3600 * intDiv(number, "+strconv.Itoa(200000*rate)+")), "+tq+", 'checkout', '"+
			plugintest.CPUType+"', "+pick+", 10000000 * 180 FROM numbers("+strconv.Itoa(hours*200000*rate)+")"))
		// The service rollup of those hours, as its view would have built it.
		require.NoError(b, conn.Exec(ctx, "INSERT INTO "+tables.Qualified(schema.ServiceHour)+
			" (Timestamp, TenantId, ServiceName, ProfileType, StackId, Value) SELECT Timestamp, TenantId, ServiceName, ProfileType, StackId, sum(Value) FROM "+
			tables.Qualified(schema.SamplesHour)+" WHERE TenantId = "+tq+" AND Timestamp < toDateTime("+strconv.FormatInt(start.Unix(), 10)+
			") GROUP BY Timestamp, TenantId, ServiceName, ProfileType, StackId"))
	}
}

// BenchmarkQueryRateScaling measures what doubling the ingest rate costs
// a query: the same workload as BenchmarkQuery for two tenants, one at the
// base rate and one at twice it, queried alternately so that the machine's
// load drifts over both alike. Reported: p50 ms at each rate and their
// ratio (target: at most 1.2).
func BenchmarkQueryRateScaling(b *testing.B) {
	minutes := benchenv.Int(b, "FLAMEHOUSE_BENCH_MINUTES", 2)
	hours := benchenv.Int(b, "FLAMEHOUSE_BENCH_HOURS", 23)
	f := newFixture(b, plugintest.Migrated, nil)
	start := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	fillSamples(b, f, "", start, minutes, hours, 1)
	fillSamples(b, f, "double", start, minutes, hours, 2)
	settings := plugintest.EmbeddedSettings(b, f.tables.Database)
	settings["profiles"].(map[string]any)["tenant"] = "double" // built by embeddedSettings
	double := &fixture{ds: plugintest.Instance(b, settings, nil), tables: f.tables, export: f.export}
	end := start.Add(time.Duration(minutes)*time.Minute - 17*time.Second)
	for _, bq := range []struct {
		name string
		from time.Time
		kind string
	}{
		{"flame-1h", end.Add(-time.Hour), "profile"},
		{"table-1h", end.Add(-time.Hour), "table"},
		{"flame-24h", end.Add(-24 * time.Hour), "profile"},
		{"table-24h", end.Add(-24 * time.Hour), "table"},
	} {
		b.Run(bq.name, func(b *testing.B) {
			q := map[string]any{"queryType": bq.kind, "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="checkout"}`, "maxNodes": 16384}
			for _, fx := range []*fixture{f, double} { // warm both symbol caches
				require.NoError(b, plugintest.Query(b, fx.ds, q, bq.from, end).Error)
			}
			base, doubled := alternately(b, f, double, q, bq.from, end)
			b.ReportMetric(p50Millis(base), "p50-ms")
			b.ReportMetric(p50Millis(doubled), "p50-ms-2x")
			b.ReportMetric(p50Millis(doubled)/p50Millis(base), "ratio")
		})
	}
}

// BenchmarkRowPolicy measures what the embedded engine's tenant row
// policies cost a query: BenchmarkQuery's workload for two tenants in a
// database with row policies, queried as the admin with the tenant
// setting (the policy's filter is then a constant true) and as a tenant
// user with no tenant setting (every table read is filtered by the
// tenant), alternately. Reported: p50 ms of each and their ratio (target:
// at most 1.1).
func BenchmarkRowPolicy(b *testing.B) {
	minutes := benchenv.Int(b, "FLAMEHOUSE_BENCH_MINUTES", 2)
	hours := benchenv.Int(b, "FLAMEHOUSE_BENCH_HOURS", 23)
	srv := chtest.Get(b)
	f := newFixture(b, plugintest.MigratedTenancy, nil)
	tables := f.tables
	start := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	fillSamples(b, f, "", start, minutes, hours, 1)
	fillSamples(b, f, "other", start, minutes, hours, 1)
	srv.AddUser(b, chembed.User{Name: "bench_tenant", Password: "bench-password", Role: chembed.RoleTenant, Tenant: ""})
	settings := plugintest.EmbeddedSettings(b, tables.Database)
	settings["username"] = "bench_tenant"
	tenant := &fixture{ds: plugintest.Instance(b, settings, map[string]string{"password": "bench-password"})}
	end := start.Add(time.Duration(minutes)*time.Minute - 17*time.Second)
	for _, bq := range []struct {
		name string
		from time.Time
		kind string
	}{
		{"flame-1h", end.Add(-time.Hour), "profile"},
		{"table-1h", end.Add(-time.Hour), "table"},
		{"flame-24h", end.Add(-24 * time.Hour), "profile"},
	} {
		b.Run(bq.name, func(b *testing.B) {
			q := map[string]any{"queryType": bq.kind, "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="checkout"}`, "maxNodes": 16384}
			want := plugintest.Query(b, f.ds, q, bq.from, end)
			require.NoError(b, want.Error)
			got := plugintest.Query(b, tenant.ds, q, bq.from, end)
			require.NoError(b, got.Error)
			require.Equal(b, want.Frames[0].Rows(), got.Frames[0].Rows(), "the tenant user's answer is the admin's for its tenant")
			admin, policy := alternately(b, f, tenant, q, bq.from, end)
			b.ReportMetric(p50Millis(admin), "p50-ms")
			b.ReportMetric(p50Millis(policy), "p50-ms-policy")
			b.ReportMetric(p50Millis(policy)/p50Millis(admin), "ratio")
		})
	}
}

// alternately runs a query on two fixtures in turn every iteration, so
// that the machine's load drifts over both alike, and returns each one's
// durations.
func alternately(b *testing.B, first, second *fixture, q map[string]any, from, to time.Time) (firstTook, secondTook []time.Duration) {
	b.Helper()
	for b.Loop() {
		for i, fx := range []*fixture{first, second} {
			t0 := time.Now()
			r := plugintest.Query(b, fx.ds, q, from, to)
			took := time.Since(t0)
			require.NoError(b, r.Error)
			require.Positive(b, r.Frames[0].Rows())
			if i == 0 {
				firstTook = append(firstTook, took)
			} else {
				secondTook = append(secondTook, took)
			}
		}
	}
	return firstTook, secondTook
}

// p50Millis is the median of durations in milliseconds (d is sorted).
func p50Millis(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Microseconds()) / 1000
}
