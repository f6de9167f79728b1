package flamehouseexporter

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/flamehouse/flamehouse/collector/flamehouseexporter/internal/metadata"
	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
)

// telemetry is the exporter's own metrics, through the Collector's
// MeterProvider (next to exporterhelper's otelcol_exporter_* metrics). It
// records the pipeline's counts (pipeline.Recorder).
type telemetry struct {
	received, rejected, rows, samples metric.Int64Counter
	// attrs identify the exporter, as exporterhelper's metrics do.
	attrs metric.MeasurementOption
	id    attribute.KeyValue
}

func newTelemetry(set component.TelemetrySettings, id component.ID) (*telemetry, error) {
	meter := set.MeterProvider.Meter(metadata.ScopeName)
	t := &telemetry{id: attribute.String("exporter", id.String())}
	t.attrs = metric.WithAttributeSet(attribute.NewSet(t.id))
	var err error
	counter := func(name, description, unit string) metric.Int64Counter {
		c, e := meter.Int64Counter("otelcol_exporter_flamehouse_"+name, metric.WithDescription(description), metric.WithUnit(unit))
		err = errors.Join(err, e)
		return c
	}
	t.received = counter("received_profiles", "Profiles in the requests the exporter converted, valid or not.", "{profile}")
	t.rejected = counter("rejected_profiles", "Profiles dropped because they failed validation, by reason.", "{profile}")
	t.rows = counter("written_rows", "Sample rows committed to Flamehouse's samples table.", "{row}")
	t.samples = counter("written_samples", "Profiling events (sample timestamps or values) behind the committed rows.", "{sample}")
	return t, err
}

// Received counts a converted request's profiles.
func (t *telemetry) Received(_ string, profiles int) {
	t.received.Add(context.Background(), int64(profiles), t.attrs)
}

// Rejected counts dropped profiles by reason.
func (t *telemetry) Rejected(_ string, reason convert.Reason, profiles int) {
	t.rejected.Add(context.Background(), int64(profiles), metric.WithAttributeSet(attribute.NewSet(t.id, attribute.String("reason", string(reason)))))
}

// Written counts a committed request's rows and events.
func (t *telemetry) Written(_ string, rows int, events int64) {
	t.rows.Add(context.Background(), int64(rows), t.attrs)
	t.samples.Add(context.Background(), events, t.attrs)
}
