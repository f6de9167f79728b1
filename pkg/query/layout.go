package query

// Schema names a table layout the engine reads profiles from.
type Schema string

// Schemas.
const (
	// SchemaFlamehouse is Flamehouse's own tables: samples keyed by stack
	// and series ids, rollups, and stacks, frames and series stored once.
	SchemaFlamehouse Schema = "flamehouse"
	// SchemaOTel is the OpenTelemetry Collector ClickHouse exporter's
	// profiles table: one row per sample with its frames in arrays.
	SchemaOTel Schema = "otel"
)

// DefaultOTelTable is the exporter's default profiles table name.
const DefaultOTelTable = "otel_profiles"
