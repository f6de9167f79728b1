// Package metadata holds the exporter's type, instrumentation scope and
// stability, as metadata.yaml states them (what mdatagen would generate).
package metadata

import "go.opentelemetry.io/collector/component"

// Type is the exporter's component type: "flamehouse".
var Type = component.MustNewType("flamehouse")

// ScopeName is the instrumentation scope of the exporter's own telemetry.
const ScopeName = "github.com/flamehouse/flamehouse/collector/flamehouseexporter"

// ProfilesStability is the stability of the profiles signal, the only one
// the exporter supports.
const ProfilesStability = component.StabilityLevelDevelopment
