// Package flamehouseexporter is an OpenTelemetry Collector exporter that
// writes profiles into Flamehouse's ClickHouse tables (otel_profile_samples,
// its rollups, and the deduplicated stacks, frames and series), which the
// Flamehouse Grafana datasource reads. It runs Flamehouse's own ingest path
// (package github.com/flamehouse/flamehouse/pkg/ingest/pipeline): the same
// validation, normalisation, deduplication, batching and Native-format
// inserts as the `flamehouse run` ingest service, so a profile gives the
// same rows through either.
//
// A push returns once its rows are committed. A profile that fails
// validation is dropped and reported as a permanent error naming it, after
// the rest of the push is written; ClickHouse failures are retryable. With
// create_schema (the default) the exporter applies Flamehouse's migrations
// when it starts. Profiles need the Collector's service.profilesSupport
// feature gate.
package flamehouseexporter

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
	"go.opentelemetry.io/collector/exporter/xexporter"

	"github.com/flamehouse/flamehouse/collector/flamehouseexporter/internal/metadata"
)

// NewFactory returns the factory of the "flamehouse" exporter (profiles
// only, development stability).
func NewFactory() exporter.Factory {
	return xexporter.NewFactory(metadata.Type, func() component.Config { return createDefaultConfig() },
		xexporter.WithProfiles(createProfiles, metadata.ProfilesStability))
}

// createProfiles builds the exporter behind exporterhelper's queue,
// retries and timeout.
func createProfiles(ctx context.Context, set exporter.Settings, cfg component.Config) (xexporter.Profiles, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("flamehouse exporter: unexpected configuration type %T", cfg)
	}
	exp, err := newExporter(c, set)
	if err != nil {
		return nil, err
	}
	return xexporterhelper.NewProfiles(ctx, set, cfg, exp.push,
		exporterhelper.WithStart(exp.start),
		exporterhelper.WithShutdown(exp.shutdown),
		exporterhelper.WithTimeout(c.TimeoutSettings),
		exporterhelper.WithQueue(c.QueueSettings),
		exporterhelper.WithRetry(c.BackOffConfig),
	)
}
