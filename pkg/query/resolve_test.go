package query

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// table builds a range table from ranges given as (start, end, levels
// innermost first, each "function file:line" parts).
type testRange struct {
	start, end uint64
	levels     [][3]string // function, file, line
}

func newTable(rs ...testRange) *rangeTable {
	t := &rangeTable{}
	for _, r := range rs {
		t.starts, t.ends = append(t.starts, r.start), append(t.ends, r.end)
		t.first = append(t.first, uint32(len(t.funcs)))
		for _, l := range r.levels {
			var line uint32
			_, _ = fmt.Sscan(l[2], &line)
			t.funcs, t.files, t.lines = append(t.funcs, l[0]), append(t.files, l[1]), append(t.lines, line)
		}
	}
	t.first = append(t.first, uint32(len(t.funcs)))
	return t
}

func TestRangeTableFind(t *testing.T) {
	tab := newTable(
		testRange{0x1000, 0x1010, [][3]string{{"a", "", "0"}}},
		testRange{0x1010, 0x1020, [][3]string{{"b", "", "0"}}},
		testRange{0x1100, 0x1200, [][3]string{{"c", "", "0"}}},
	)
	for _, tc := range []struct {
		va   uint64
		want int
	}{
		{0xfff, -1},
		{0x1000, 0},
		{0x100f, 0},
		{0x1010, 1},
		{0x101f, 1},
		{0x1020, -1},
		{0x10ff, -1}, // a gap between ranges
		{0x1100, 2},
		{0x11ff, 2},
		{0x1200, -1},
		{^uint64(0), -1},
	} {
		require.Equal(t, tc.want, tab.find(tc.va), "0x%x", tc.va)
	}
	require.Equal(t, -1, (&rangeTable{}).find(0x1000), "an empty table")
}

func TestResolutionNamesFramesWithTheAddressRule(t *testing.T) {
	// A PIE whose text segment is at file offset 0x1000, virtual address
	// 0x1000, and a data segment whose offset and address differ.
	segs := []symbols.Segment{{Offset: 0, Vaddr: 0, Filesz: 0x600}, {Offset: 0x1000, Vaddr: 0x1000, Filesz: 0x200}, {Offset: 0x2e00, Vaddr: 0x3e00, Filesz: 0x210}}
	tab := newTable(
		testRange{0x1100, 0x1180, [][3]string{{"leaf", "/src/a.c", "7"}}},
		testRange{0x1180, 0x11c0, [][3]string{{"inl_square", "/src/inl.h", "4"}, {"inl_twice", "/src/inl.h", "9"}, {"work", "/src/a.c", "13"}}},
		testRange{0x11c0, 0x11d0, [][3]string{{"nofile", "", "0"}}},
		testRange{0x3e00, 0x3e10, [][3]string{{"data", "", "0"}}},
	)
	rs := &resolution{
		exes:   map[string]*executable{"b1": {buildID: "b1", segs: segs}},
		tables: map[string]*rangeTable{"b1": tab},
	}
	const base = 0x7f0000000000
	natives := map[uint64]nativeFrame{
		1: {buildID: "b1", address: base + 0x1101, mappingStart: base + 0x1000, mappingOffset: 0x1000}, // runtime address, PIE
		2: {buildID: "b1", address: 0x1190, mappingStart: 0x1000, mappingOffset: 0x1000},               // the eBPF profiler: start is a VA
		3: {buildID: "b1", address: 0x11c4},                                                            // placement unknown: va = address
		4: {buildID: "b1", address: base + 0x3e04, mappingStart: base + 0x3000, mappingOffset: 0x2000}, // offset 0x2e04: the data segment
		5: {buildID: "b1", address: base + 0x1f00, mappingStart: base + 0x1000, mappingOffset: 0x1000}, // offset 0x1f00: in no segment
		6: {buildID: "b1", address: base + 0x0fff, mappingStart: base + 0x1000, mappingOffset: 0x1000}, // below its mapping
		7: {buildID: "b2", address: 0x1101},                                                            // no symbols stored
		8: {buildID: "b1", address: 0x1250},                                                            // no range holds it
	}
	for _, lines := range []bool{false, true} {
		fn := &frameNames{labels: map[uint64]string{}}
		for id := range natives {
			fn.labels[id] = "[prog]"
		}
		rs.name(natives, fn, lines)
		if lines {
			require.Equal(t, "leaf /src/a.c:7", fn.labels[1])
			require.Equal(t, []string{"work /src/a.c:13", "inl_twice /src/inl.h:9", "inl_square /src/inl.h:4"}, fn.levels[2], "inline levels root first")
		} else {
			require.Equal(t, "leaf", fn.labels[1])
			require.Equal(t, []string{"work", "inl_twice", "inl_square"}, fn.levels[2], "inline levels root first")
		}
		require.Equal(t, "nofile", fn.labels[3], "no file: the function alone")
		require.Equal(t, "data", fn.labels[4])
		for _, id := range []uint64{5, 6, 7, 8} {
			require.Equal(t, "[prog]", fn.labels[id], "frame %d keeps its label", id)
			require.NotContains(t, fn.levels, id)
		}
	}
	var nilRes *resolution
	fn := &frameNames{labels: map[uint64]string{1: "[prog]"}}
	nilRes.name(natives, fn, false)
	require.Equal(t, "[prog]", fn.labels[1], "no symbol tables: labels stay")
}

func TestResolverCachesTablesByVersionWithinItsBound(t *testing.T) {
	r := NewResolver(1000)
	small := func(size int64) *rangeTable { return &rangeTable{size: size} }
	a, b := tableKey{"", "a"}, tableKey{"", "b"}
	r.put(a, 1, small(400))
	require.NotNil(t, r.get(a, 1))
	require.Nil(t, r.get(a, 2), "another version (a new upload) is not served from the cache")
	r.put(a, 2, small(400))
	require.Nil(t, r.get(a, 1), "the new version replaces the old one")
	require.NotNil(t, r.get(a, 2))
	r.put(b, 1, small(500))
	require.NotNil(t, r.get(b, 1))
	require.NotNil(t, r.get(a, 2), "900 bytes fit")
	r.put(tableKey{"t2", "a"}, 1, small(300)) // evicts the least recently used: b
	require.Nil(t, r.get(b, 1))
	require.NotNil(t, r.get(a, 2))
	require.NotNil(t, r.get(tableKey{"t2", "a"}, 1), "tenants have their own tables")
	r.put(tableKey{"", "huge"}, 1, small(5000))
	require.Nil(t, r.get(tableKey{"", "huge"}, 1), "a table beyond the bound is not kept")
	require.NotNil(t, r.get(a, 2), "and evicts nothing")
	require.Equal(t, 5, r.Loads())
}

func TestLookupIDsKeepOnlyBuildIDs(t *testing.T) {
	natives := map[uint64]nativeFrame{
		1: {buildID: "3b2b2455914cf52ffe4dfdd68c0b2171a7aa40c8"},
		2: {buildID: "3b2b2455914cf52ffe4dfdd68c0b2171a7aa40c8"},
		3: {buildID: "abc/def-_x"},
		4: {buildID: "x' OR 1=1 --"},
		5: {buildID: "a b"},
	}
	require.Equal(t, []string{"3b2b2455914cf52ffe4dfdd68c0b2171a7aa40c8", "abc/def-_x"}, lookupIDs(natives))
	require.Equal(t, "['a','b']", idArray([]string{"a", "b"}))
}

// TestExecutableReadsCoverWhatTheyRead: the executables read beside the
// sums answer for the build ids they covered, found or not; only the
// others are read after, and an executable the query does not need is
// left out. A failed read beside the sums is made again after them.
func TestExecutableReadsCoverWhatTheyRead(t *testing.T) {
	ctx := context.Background()
	stored := map[string]*executable{"a": {buildID: "a"}, "b": {buildID: "b"}, "d": {buildID: "d"}}
	var reads [][]string
	read := func(_ context.Context, ids []string) (map[string]*executable, error) {
		reads = append(reads, ids)
		out := map[string]*executable{}
		for _, id := range ids {
			if x := stored[id]; x != nil {
				out[id] = x
			}
		}
		return out, nil
	}
	done := make(chan struct{})
	close(done)
	prefetched := &executableReads{ids: []string{"a", "c", "d"}, done: done, exes: map[string]*executable{"a": stored["a"], "d": stored["d"]}}

	got, err := prefetched.of(ctx, []string{"a", "b", "c"}, read)
	require.NoError(t, err)
	require.Equal(t, map[string]*executable{"a": stored["a"], "b": stored["b"]}, got, "a from beside the sums, b after; c has none; d is not needed")
	require.Equal(t, [][]string{{"b"}}, reads, "only the build id the read beside the sums did not cover")

	reads = nil
	got, err = prefetched.of(ctx, []string{"a", "c"}, read)
	require.NoError(t, err)
	require.Equal(t, map[string]*executable{"a": stored["a"]}, got)
	require.Empty(t, reads, "all covered: no read after the sums")

	reads = nil
	failed := &executableReads{ids: []string{"a"}, done: done, err: errors.New("connection reset")}
	got, err = failed.of(ctx, []string{"a", "b"}, read)
	require.NoError(t, err)
	require.Equal(t, map[string]*executable{"a": stored["a"], "b": stored["b"]}, got)
	require.Equal(t, [][]string{{"a", "b"}}, reads, "a failed read beside the sums is made again")

	reads = nil
	var none *executableReads
	_, err = none.of(ctx, []string{"b"}, read)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"b"}}, reads, "nothing read beside the sums: all after")
	none.wait()
}

// BenchmarkResolutionNaming measures the in-memory part of query-time
// resolution with warm tables: naming 7,000 unsymbolized frames (PIE
// placement) across 200 executables of 256 ranges, as in
// BenchmarkSymbolResolution (pkg/plugin), which measures the whole query.
func BenchmarkResolutionNaming(b *testing.B) {
	const (
		ids, ranges, size = 200, 256, 4096
		base              = 0x7f0000000000
	)
	rs := &resolution{exes: map[string]*executable{}, tables: map[string]*rangeTable{}}
	for i := range ids {
		id := fmt.Sprintf("%040x", i)
		var trs []testRange
		for r := range ranges {
			trs = append(trs, testRange{uint64(0x1000 + r*size), uint64(0x1000 + (r+1)*size), [][3]string{{fmt.Sprintf("lib%d::fn%d", i, r), "lib.c", "10"}}})
		}
		rs.tables[id] = newTable(trs...)
		rs.exes[id] = &executable{buildID: id, segs: []symbols.Segment{{Offset: 0, Vaddr: 0, Filesz: 1 << 24}}}
	}
	// 7,000 unsymbolized frames: BenchmarkSymbolResolution's graph; 100,000:
	// the bound for one flame graph.
	for _, frames := range []int{7000, 100_000} {
		b.Run(fmt.Sprintf("frames=%d", frames), func(b *testing.B) {
			natives := map[uint64]nativeFrame{}
			for i := range frames {
				va := uint64(0x1000 + (i*7919)%(ranges*size))
				natives[uint64(i)] = nativeFrame{buildID: fmt.Sprintf("%040x", i%ids), address: base + va, mappingStart: base, mappingOffset: 0}
			}
			b.ReportAllocs()
			for b.Loop() {
				fn := &frameNames{labels: make(map[uint64]string, frames)}
				rs.name(natives, fn, false)
				if len(fn.labels) != frames {
					b.Fatalf("named %d of %d frames", len(fn.labels), frames)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(frames), "ns/frame")
		})
	}
}
