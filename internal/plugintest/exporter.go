package plugintest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// exporterColumns are the exporter table's columns the adapter reads, with
// their types (the real table, made by a Collector, is tested in
// TestOTelExporterSchemaMatchesFlamehouse).
var exporterColumns = []string{
	"Timestamp DateTime64(9)", "ServiceName LowCardinality(String)", "SampleType LowCardinality(String)",
	"SampleUnit LowCardinality(String)", "PeriodType LowCardinality(String)", "PeriodUnit LowCardinality(String)",
	"Period Int64", "ResourceAttributes Map(LowCardinality(String), String)", "SampleAttributes Map(LowCardinality(String), String)",
	"StackHash UInt64", "FunctionNames Array(LowCardinality(String))", "FileNames Array(LowCardinality(String))", "LineNumbers Array(Int32)",
	"MappingFileNames Array(LowCardinality(String))", "Addresses Array(UInt64)", "Values Array(Int64)",
	"TimestampsUnixNano Array(UInt64)", "TraceId String", "SpanId String",
}

// CreateExporterTable creates an exporter-shaped profiles table without
// the columns named in drop.
func CreateExporterTable(t *testing.T, db, table string, drop ...string) {
	t.Helper()
	var cols []string
	for _, c := range exporterColumns {
		if !slices.Contains(drop, strings.Fields(c)[0]) {
			cols = append(cols, c)
		}
	}
	for _, attr := range []string{
		"service.namespace", "service.instance.id", "deployment.environment.name", "k8s.cluster.name",
		"k8s.namespace.name", "k8s.deployment.name", "k8s.pod.name", "k8s.pod.uid", "k8s.node.name", "k8s.container.name",
	} {
		cols = append(cols, "`__otel_materialized_"+attr+"` LowCardinality(String) MATERIALIZED ResourceAttributes['"+attr+"']")
	}
	conn := chtest.Get(t).Open(t)
	require.NoError(t, conn.Exec(context.Background(), "CREATE TABLE "+schema.QuoteIdentifier(db)+"."+schema.QuoteIdentifier(table)+
		" ("+strings.Join(cols, ", ")+") ENGINE = MergeTree ORDER BY (ServiceName, SampleType, toDateTime(Timestamp))"))
}
