package plugin_test

import (
	"context"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/plugintest"
	"github.com/flamehouse/flamehouse/internal/profilegen"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// Shape of the resolution benchmark's symbol store: benchBuildIDs
// executables, each with benchRanges functions of benchRangeBytes bytes
// from benchTextStart, loaded at benchLoadBase (PIE: MappingStart is the
// load base, MappingOffset 0, one segment from file offset 0).
const (
	benchBuildIDs   = 200
	benchRanges     = 256
	benchRangeBytes = 4096
	benchTextStart  = 0x1000
	benchLoadBase   = 0x7f0000000000
	// benchNativePercent of the frames are unsymbolized.
	benchNativePercent = 30
)

// BenchmarkSymbolResolution measures what resolving unsymbolized frames
// adds to a warm flame graph query: the stacks of BenchmarkQuery's
// workload (~40k of its 50k stacks through the ingest's pipeline, two minutes
// of sample rows) for two tenants that differ only in their frames. In
// "native" 30% of the frames are unsymbolized (a mapping placed at a PIE
// load base, one of 200 build ids, an address) and the symbol store holds
// those 200 executables (256 ranges each); in "named" the same frames
// carry, as names sent by the host, exactly the names the symbol store
// gives them, so both answer the same flame graph. Queries alternate
// between the tenants so that the machine's load drifts over both alike.
//
// Reported: p50 ms of each, their ratio (target: at most 1.3), and, once,
// the same resolution done in ClickHouse by an ASOF JOIN of the frames
// with the ranges (what the in-memory range tables were chosen over; the
// query still has to read the frames and stacks around it).
func BenchmarkSymbolResolution(b *testing.B) {
	f := newFixture(b, plugintest.Migrated, nil)
	start := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	// More stacks than fillSamples' three reports bring: denser reports of
	// a larger pool (whose first 50k stacks are the workload's), so that
	// about 50k stacks have samples.
	cfg := profilegen.DefaultConfig()
	cfg.SamplesPerSecond, cfg.Stacks = 40_000, 60_000
	g := profilegen.New(cfg)
	for i := range 2 {
		f.send(b, g.Report(start.Add(-time.Hour+time.Duration(i)*5*time.Second)))
	}
	fillSamples(b, f, "", start, 2, 0, 1)
	conn := chtest.Get(b).Open(b)
	tables := f.tables
	ctx := context.Background()

	// Frame h (a hash of FrameId) is unsymbolized when h % 100 < 30; its
	// executable is h % 200 and its function (h / 200) % 256. The
	// workload's own unsymbolized frames (libc, libssl) are named by their
	// mapping file in both tenants, as the query would label them.
	h := "cityHash64(FrameId, 15)"
	native := h + " % 100 < " + strconv.Itoa(benchNativePercent)
	bid := "lower(hex(cityHash64('bench-build-id', " + h + " % " + strconv.Itoa(benchBuildIDs) + ")))"
	fn := "intDiv(" + h + ", " + strconv.Itoa(benchBuildIDs) + ") % " + strconv.Itoa(benchRanges)
	va := "toUInt64(" + strconv.Itoa(benchTextStart) + " + " + strconv.Itoa(benchRangeBytes) + " * (" + fn + ") + " + h + " % " + strconv.Itoa(benchRangeBytes) + ")"
	name := "concat('lib', toString(" + h + " % " + strconv.Itoa(benchBuildIDs) + "), '::fn', toString(" + fn + "))"
	copyTenant := func(tenant string) {
		for _, t := range []string{schema.Stacks, schema.Series} {
			require.NoError(b, conn.Exec(ctx, "INSERT INTO "+tables.Qualified(t)+" SELECT * REPLACE ('"+tenant+"' AS TenantId) FROM (SELECT * FROM "+
				tables.Qualified(t)+" WHERE TenantId = '')"))
		}
	}
	for _, tenant := range []string{"named", "native"} {
		copyTenant(tenant)
	}
	frames := tables.Qualified(schema.Frames)
	hostName := "if(FunctionName = '' AND SystemName = '' AND FileName = '', concat('[', basename(MappingFile), ']'), FunctionName)"
	// The frames that tenant "native" leaves unsymbolized are native frames
	// in both tenants (a frame of another kind, kernel say, is marked in the
	// answer).
	require.NoError(b, conn.Exec(ctx, "INSERT INTO "+frames+" SELECT * REPLACE ('named' AS TenantId, if("+native+", "+name+", "+hostName+") AS FunctionName, "+
		"if("+native+", 'native', FrameType) AS FrameType) FROM (SELECT * FROM "+frames+" WHERE TenantId = '')"))
	require.NoError(b, conn.Exec(ctx, "INSERT INTO "+frames+" SELECT * EXCEPT (n) REPLACE ('native' AS TenantId, "+
		"if(n, '', "+hostName+") AS FunctionName, if(n, '', SystemName) AS SystemName, if(n, '', FileName) AS FileName, if(n, 0, Line) AS Line, "+
		"if(n, concat('lib', toString("+h+" % "+strconv.Itoa(benchBuildIDs)+"), '.so'), MappingFile) AS MappingFile, if(n, "+bid+", BuildId) AS BuildId, "+
		"if(n, "+strconv.Itoa(benchLoadBase)+" + "+va+", Address) AS Address, if(n, 'native', FrameType) AS FrameType, "+
		"if(n, toUInt64("+strconv.Itoa(benchLoadBase)+"), MappingStart) AS MappingStart, if(n, toUInt64(0), MappingOffset) AS MappingOffset) "+
		"FROM (SELECT *, "+native+" AS n FROM "+frames+" WHERE TenantId = '')"))
	// The sample rows of both tenants: those of tenant "".
	for _, tenant := range []string{"named", "native"} {
		require.NoError(b, conn.Exec(ctx, "INSERT INTO "+tables.Qualified(schema.Samples)+" SELECT * REPLACE ('"+tenant+"' AS TenantId) FROM (SELECT * FROM "+
			tables.Qualified(schema.Samples)+" WHERE TenantId = '')"))
	}
	// The symbol store: 200 executables of 256 functions each.
	version := time.Now().UnixMilli()
	ids := "(SELECT lower(hex(cityHash64('bench-build-id', number))) AS b, number AS k FROM numbers(" + strconv.Itoa(benchBuildIDs) + "))"
	require.NoError(b, conn.Exec(ctx, "INSERT INTO "+tables.Qualified(schema.Symbols)+" (TenantId, BuildId, Start, End, Functions, Files, Lines, Version) "+
		"SELECT 'native', b, "+strconv.Itoa(benchTextStart)+" + "+strconv.Itoa(benchRangeBytes)+" * r, "+strconv.Itoa(benchTextStart)+" + "+strconv.Itoa(benchRangeBytes)+" * (r + 1), "+
		"[concat('lib', toString(k), '::fn', toString(r))], [concat('lib', toString(k), '.c')], [toUInt32(10 + r)], "+strconv.FormatInt(version, 10)+
		" FROM "+ids+" ARRAY JOIN range("+strconv.Itoa(benchRanges)+") AS r"))
	require.NoError(b, conn.Exec(ctx, "INSERT INTO "+tables.Qualified(schema.Executables)+
		" (TenantId, BuildId, FileName, Size, Source, HasSymtab, Ranges, SegmentOffsets, SegmentVaddrs, SegmentSizes, UpdatedAt) "+
		"SELECT 'native', b, concat('lib', toString(k), '.so'), 1048576, 'upload', true, "+strconv.Itoa(benchRanges)+", [0], [0], [16777216], fromUnixTimestamp64Milli(toInt64("+
		strconv.FormatInt(version, 10)+")) FROM "+ids))

	var stacks, unsymbolized, allFrames uint64
	require.NoError(b, conn.QueryRow(ctx, "SELECT (SELECT uniqExact(StackId) FROM "+tables.Qualified(schema.Samples)+" WHERE TenantId = 'native'), "+
		"(SELECT uniqExactIf(FrameId, FunctionName = '' AND BuildId != '') FROM "+frames+" WHERE TenantId = 'native'), "+
		"(SELECT uniqExact(FrameId) FROM "+frames+" WHERE TenantId = 'native')").Scan(&stacks, &unsymbolized, &allFrames))

	tenant := func(name string) *fixture {
		settings := plugintest.EmbeddedSettings(b, f.tables.Database)
		settings["profiles"].(map[string]any)["tenant"] = name // built by embeddedSettings
		return &fixture{ds: plugintest.Instance(b, settings, nil), tables: f.tables, export: f.export}
	}
	named, resolved := tenant("named"), tenant("native")
	end := start.Add(2*time.Minute - 17*time.Second)
	from := end.Add(-time.Hour)
	q := map[string]any{"queryType": "profile", "profileTypeId": plugintest.CPUType, "labelSelector": `{service_name="checkout"}`, "maxNodes": 16384}

	// Both answer the same flame graph, totals and names.
	a, c := plugintest.Query(b, named.ds, q, from, end), plugintest.Query(b, resolved.ds, q, from, end)
	require.NoError(b, a.Error)
	require.NoError(b, c.Error)
	plugintest.RequireSameFrames(b, a.Frames[0], c.Frames[0])

	b.Run("flame-1h", func(b *testing.B) {
		var base, withResolution []time.Duration
		for b.Loop() {
			for i, fx := range []*fixture{named, resolved} {
				t0 := time.Now()
				r := plugintest.Query(b, fx.ds, q, from, end)
				took := time.Since(t0)
				require.NoError(b, r.Error)
				if i == 0 {
					base = append(base, took)
				} else {
					withResolution = append(withResolution, took)
				}
			}
		}
		b.ReportMetric(p50Millis(base), "p50-ms-named")
		b.ReportMetric(p50Millis(withResolution), "p50-ms-resolved")
		b.ReportMetric(p50Millis(withResolution)/p50Millis(base), "ratio")
		b.ReportMetric(float64(stacks), "stacks")
		b.ReportMetric(float64(unsymbolized), "unsymbolized-frames")
		b.ReportMetric(100*float64(unsymbolized)/float64(allFrames), "unsymbolized-%")
	})

	// The first query after a start or an upload: the 200 range tables are
	// read from ClickHouse (stacks and labels stay cached).
	b.Run("flame-1h-tables-cold", func(b *testing.B) {
		var took []time.Duration
		for b.Loop() {
			resolved.ds.ResetResolver()
			t0 := time.Now()
			r := plugintest.Query(b, resolved.ds, q, from, end)
			took = append(took, time.Since(t0))
			require.NoError(b, r.Error)
		}
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	})

	// What every warm query with unsymbolized frames asks ClickHouse on top:
	// which of its build ids have symbols, and their version and segments
	// (the statement of pkg/query's executablesSQL, over the 200 ids).
	b.Run("executables-lookup", func(b *testing.B) {
		lookup := "SELECT BuildId, argMax(FileName, UpdatedAt), argMax(Source, UpdatedAt), toInt64(toUnixTimestamp64Milli(max(UpdatedAt))), " +
			"argMax(SegmentOffsets, UpdatedAt), argMax(SegmentVaddrs, UpdatedAt), argMax(SegmentSizes, UpdatedAt) FROM " +
			tables.Qualified(schema.Executables) + " WHERE TenantId = 'native' AND BuildId IN (SELECT lower(hex(cityHash64('bench-build-id', number))) FROM numbers(" +
			strconv.Itoa(benchBuildIDs) + ")) GROUP BY BuildId"
		var took []time.Duration
		for b.Loop() {
			t0 := time.Now()
			rows, err := conn.Query(ctx, lookup)
			require.NoError(b, err)
			n := 0
			for rows.Next() {
				n++
			}
			require.NoError(b, rows.Err())
			require.NoError(b, rows.Close())
			took = append(took, time.Since(t0))
			require.Equal(b, benchBuildIDs, n)
		}
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	})

	// The alternative: resolve the same frames in ClickHouse, an ASOF JOIN
	// of the unsymbolized frames with the ranges of their build ids.
	b.Run("asof-join", func(b *testing.B) {
		asof := "SELECT count(), countIf(s.End > va) FROM (SELECT FrameId, BuildId, toUInt64(Address - MappingStart + MappingOffset) AS va FROM " + frames +
			" WHERE TenantId = 'native' AND FunctionName = '' AND BuildId != '') AS f ASOF LEFT JOIN (SELECT BuildId, Start, End, Functions FROM " +
			tables.Qualified(schema.Symbols) + " WHERE TenantId = 'native' AND BuildId IN (SELECT DISTINCT BuildId FROM " + frames +
			" WHERE TenantId = 'native' AND FunctionName = '' AND BuildId != '')) AS s ON toString(f.BuildId) = s.BuildId AND f.va >= s.Start"
		var took []time.Duration
		for b.Loop() {
			var n, hit uint64
			t0 := time.Now()
			require.NoError(b, conn.QueryRow(ctx, asof).Scan(&n, &hit))
			took = append(took, time.Since(t0))
			require.Equal(b, n, hit, "every unsymbolized frame resolves")
		}
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms-join-only")
	})
}
