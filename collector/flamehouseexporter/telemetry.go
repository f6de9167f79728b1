package flamehouseexporter

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/flamehouse/flamehouse/collector/flamehouseexporter/internal/metadata"
	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
)

// telemetry is the exporter's own metrics (metadata.yaml's, through the
// generated TelemetryBuilder and the Collector's MeterProvider, next to
// exporterhelper's otelcol_exporter_* metrics). It records the pipeline's
// counts (pipeline.Recorder).
type telemetry struct {
	*metadata.TelemetryBuilder
	// attrs identify the exporter, as exporterhelper's metrics do.
	attrs metric.MeasurementOption
	id    attribute.KeyValue
}

func newTelemetry(set component.TelemetrySettings, id component.ID) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t := &telemetry{TelemetryBuilder: tb, id: attribute.String("exporter", id.String())}
	t.attrs = metric.WithAttributeSet(attribute.NewSet(t.id))
	return t, nil
}

// Received counts a converted request's profiles.
func (t *telemetry) Received(_ string, profiles int) {
	t.ExporterFlamehouseReceivedProfiles.Add(context.Background(), int64(profiles), t.attrs)
}

// Rejected counts dropped profiles by reason.
func (t *telemetry) Rejected(_ string, reason convert.Reason, profiles int) {
	t.ExporterFlamehouseRejectedProfiles.Add(context.Background(), int64(profiles),
		metric.WithAttributeSet(attribute.NewSet(t.id, attribute.String("reason", string(reason)))))
}

// Written counts a committed request's rows and events.
func (t *telemetry) Written(_ string, rows int, events int64) {
	t.ExporterFlamehouseWrittenRows.Add(context.Background(), int64(rows), t.attrs)
	t.ExporterFlamehouseWrittenSamples.Add(context.Background(), events, t.attrs)
}
