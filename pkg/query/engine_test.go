package query

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQueryTypes: a request names one of the engine's query types (none:
// the first), and alert rules ask for the numeric ones only; the others
// are refused, saying what they answer, before anything is read (the
// engine here has no connection).
func TestQueryTypes(t *testing.T) {
	forAlerts := map[string]bool{
		TypeProfile: false, TypeMetrics: true, TypeBoth: true, TypeTable: true, TypeTraces: false,
		TypeSpans: false, TypeDiff: false, TypeExecutables: false, TypeProfiles: false,
	}
	var names []string
	for _, qt := range queryTypes {
		names = append(names, qt.name)
		want, known := forAlerts[qt.name]
		require.True(t, known, "%s is a query type of this test", qt.name)
		require.Equal(t, want, qt.alerts, "%s for alert rules", qt.name)
		require.NotEmpty(t, qt.answers, qt.name)
		require.NotNil(t, qt.answer, qt.name)
		r := &Request{}
		require.NoError(t, r.setType(qt.name))
		require.Equal(t, qt.name, r.Type)
		if !qt.alerts {
			_, err := (&Engine{}).run(context.Background(), &Request{Type: qt.name, Alert: true})
			require.ErrorIs(t, err, ErrNotForAlerts, qt.name)
			require.ErrorContains(t, err, "answers "+qt.answers+", which alert rules cannot evaluate")
		}
	}
	require.Len(t, names, len(forAlerts), "every query type has an answer")

	r := &Request{}
	require.NoError(t, r.setType(""))
	require.Equal(t, TypeProfile, r.Type, "the default")
	require.EqualError(t, r.setType("flame"),
		`queryType "flame" is not one of profile, metrics, both, table, traces, spans, diff, executables, profiles`)
}

// TestWholeServicesUpToRowsPerID: a lookup reads the services' whole rows
// when they are at most rowsPerID per id it misses.
func TestWholeServicesUpToRowsPerID(t *testing.T) {
	for _, tc := range []struct {
		name    string
		missing int
		rows    uint64
		whole   bool
	}{
		{"a dense pod's stacks", 1497, 35123, false},
		{"a small service's pod's frames", 9696, 13774, true},
		{"a third of a small service's stacks", 1170, 3509, true},
		{"just more than rowsPerID rows per id", 1000, 3001, false},
		{"the sparse day's last hour", 10491, 46710, false},
		{"the whole day", 44000, 46710, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.whole, wholeServices(tc.missing, tc.rows))
		})
	}
}

// TestFramesBesideStacks: a new datasource reads the frames of any stacks
// it misses beside them; one with the tenant's frames cached only for
// framesBesideFrom stacks or more.
func TestFramesBesideStacks(t *testing.T) {
	for _, tc := range []struct {
		missing int
		cached  bool
		beside  bool
	}{
		{0, false, false},
		{75, false, true},
		{75, true, false},
		{framesBesideFrom - 1, true, false},
		{framesBesideFrom, true, true},
	} {
		require.Equal(t, tc.beside, framesBeside(tc.missing, tc.cached), "%d missing, cached %v", tc.missing, tc.cached)
	}
}

// TestLookupReadsByIDInChunks: a lookup that need not count the services'
// rows (fewer than countFrom ids, or no service named) reads the ids it
// misses, sorted, in chunks of idsPerLookup, without touching the
// database (the engine here has no connection).
func TestLookupReadsByIDInChunks(t *testing.T) {
	ids := func(n int) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = uint64(n - i) // descending: lookup sorts
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		services []string
		missing  int
		want     []int // ids per load
	}{
		{"none", []string{"checkout"}, 0, nil},
		{"a pod's stacks", []string{"checkout"}, 573, []int{573}},
		{"just below countFrom", []string{"checkout"}, countFrom - 1, []int{countFrom - 1}},
		{"more, no service named", nil, 2*idsPerLookup + 1, []int{idsPerLookup, idsPerLookup, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			err := (&Engine{}).lookup(context.Background(), &filter{services: tc.services}, "profile_stacks", ids(tc.missing), func(chunk []uint64) error {
				require.NotNil(t, chunk, "by id")
				require.True(t, slices.IsSorted(chunk), "ids are read sorted")
				got = append(got, len(chunk))
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
