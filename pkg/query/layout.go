package query

import (
	"context"
	"slices"

	"github.com/flamehouse/flamehouse/pkg/schema"
)

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

// Schemas are the table layouts.
var Schemas = []Schema{SchemaFlamehouse, SchemaOTel}

// DefaultSchema is the layout of a datasource that names none.
const DefaultSchema = SchemaFlamehouse

// String is the schema's name, SchemaFlamehouse for "".
func (s Schema) String() string {
	if s == "" {
		return string(SchemaFlamehouse)
	}
	return string(s)
}

// DefaultOTelTable is the exporter's default profiles table name.
const DefaultOTelTable = "otel_profiles"

// layout is how a schema's tables answer the query model: the adapter
// between the one query design (requests, selectors, flame graph, table
// and series rendering) and a table layout.
type layout interface {
	// stacks sums the request's values per stack and returns each stack's
	// frame ids, root first, and the names of every frame id (resolved
	// from the symbol store where it can).
	stacks(ctx context.Context, r *Request) ([]stackValue, *frameNames, error)
	// executables sums the request's values per executable (mapped file
	// and build id): the stacks through it, each counted once.
	executables(ctx context.Context, r *Request) (*executableSums, error)
	// series adds the request's bucket sums per group to acc.
	series(ctx context.Context, r *Request, acc *seriesAccumulator) error
	// spans sums the request's values per span (span and trace id) and
	// returns the top r.Limit spans, largest first, and the total of the
	// whole selection, samples without a span included.
	spans(ctx context.Context, r *Request) ([]spanValue, int64, error)
	// profileTypes lists the profile type ids with data in the scope.
	profileTypes(ctx context.Context, s Scope) ([]string, error)
	// services lists the services with data in the scope.
	services(ctx context.Context, s Scope) ([]string, error)
	// labelKeys lists the resource and sample attribute keys in the scope.
	labelKeys(ctx context.Context, s Scope) ([]string, error)
	// labelValues lists a label's values in the scope (not service_name).
	labelValues(ctx context.Context, s Scope, label string) ([]string, error)
}

// layout returns the adapter of the engine's schema.
func (e *Engine) layout() layout {
	if e.Schema == SchemaOTel {
		table := e.OTelTable
		if table == "" {
			table = DefaultOTelTable
		}
		return &otelLayout{e: e, table: schema.QuoteIdentifier(e.Tables.Database) + "." + schema.QuoteIdentifier(table)}
	}
	return &flamehouseLayout{e: e}
}

// ValidSchema reports whether a schema name is known ("" is the default,
// SchemaFlamehouse).
func ValidSchema(s Schema) bool { return s == "" || slices.Contains(Schemas, s) }
