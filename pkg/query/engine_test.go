package query

import (
	"context"
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
