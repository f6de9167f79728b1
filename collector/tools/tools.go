// Package tools pins the generators the Collector exporter's module uses,
// in a module of its own so that their dependencies stay out of the
// exporter's (and of every Collector built with it): mdatagen, which
// writes the exporter's internal/metadata, generated tests and
// documentation from its metadata.yaml (`go generate` in
// collector/flamehouseexporter). mdatagen is at v0.159.0: its v0.161.0
// needs go.opentelemetry.io/collector/internal/schemagen, which the module
// proxy refuses.
package tools
