package flamehouseexporter

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/flamehouse/flamehouse/collector/flamehouseexporter/internal/metadata"
	fhpipeline "github.com/flamehouse/flamehouse/pkg/ingest/pipeline"
)

// TestMetadata holds metadata.yaml and the code to each other: the type,
// the profiles stability, and the metrics the exporter records (each name
// with the Collector's otelcol_ prefix).
func TestMetadata(t *testing.T) {
	cm, err := confmaptest.LoadConf("metadata.yaml")
	require.NoError(t, err)
	require.Equal(t, metadata.Type.String(), cm.Get("type"))
	require.Equal(t, []any{"profiles"}, cm.Get("status::stability::development"))
	require.Equal(t, component.StabilityLevelDevelopment, metadata.ProfilesStability)
	metrics, err := cm.Sub("telemetry::metrics")
	require.NoError(t, err)
	var declared []string
	for _, k := range slices.Sorted(slices.Values(metrics.AllKeys())) {
		if name, _, ok := strings.Cut(k, "::"); ok && !slices.Contains(declared, name) {
			declared = append(declared, name)
		}
	}

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	rec, err := newTelemetry(set.TelemetrySettings, set.ID)
	require.NoError(t, err)
	_, err = fhpipeline.New(&fakeWriter{}, fhpipeline.Options{}, rec).Export(context.Background(),
		fhpipeline.Request{Payload: wireOf(t, newReport(t, 8, 0).pd)})
	require.NoError(t, err)
	require.NotEmpty(t, declared)
	for _, name := range declared {
		_, err := tel.GetMetric("otelcol_" + name)
		require.NoError(t, err, "metadata.yaml declares %s", name)
	}
}
