package tracetable_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/selftrace/tracetable"
)

func TestTableNamesAreIdentifiers(t *testing.T) {
	for _, bad := range []tracetable.Table{
		{Database: "otel", Name: "otel_traces`; DROP TABLE x; --"},
		{Database: "otel", Name: "otel.traces"},
		{Database: "ot el", Name: "otel_traces"},
		{Database: "otel", Name: ""},
		{Database: "otel", Name: "otel_traces", TTL: -time.Hour},
	} {
		_, err := bad.Statements()
		require.Error(t, err, "%+v", bad)
		_, err = tracetable.NewExporter(nil, bad)
		require.Error(t, err, "%+v", bad)
	}
}

func TestTableStatements(t *testing.T) {
	stmts, err := tracetable.Table{Database: "otel", Name: "spans"}.Statements()
	require.NoError(t, err)
	require.Len(t, stmts, 3)
	require.True(t, strings.HasPrefix(stmts[0], "CREATE TABLE IF NOT EXISTS `otel`.`spans`\n("), stmts[0])
	require.True(t, strings.HasPrefix(stmts[1], "CREATE TABLE IF NOT EXISTS `otel`.`spans_trace_id_ts`\n("), stmts[1])
	require.True(t, strings.HasPrefix(stmts[2], "CREATE MATERIALIZED VIEW IF NOT EXISTS `otel`.`spans_trace_id_ts_mv` TO `otel`.`spans_trace_id_ts`\n"), stmts[2])
	require.Contains(t, stmts[2], "FROM `otel`.`spans`\n")
	for _, s := range stmts {
		require.NotContains(t, s, "TTL", "no retention: kept forever")
	}
	stmts, err = tracetable.Table{Database: "otel", Name: "spans", TTL: 36 * time.Hour}.Statements()
	require.NoError(t, err)
	require.Contains(t, stmts[0], "\nTTL toDateTime(Timestamp) + toIntervalSecond(129600)\nSETTINGS")
	require.Contains(t, stmts[1], "\nTTL toDateTime(Start) + toIntervalSecond(129600)\nSETTINGS")
}
