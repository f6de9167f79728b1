// Package tenancy is the convention by which a ClickHouse user carries its
// tenant: a tenant user's log_comment setting is "flamehouse:tenant:" and
// the tenant. `flamehouse tenants` gives a server's tenant users that
// setting, the embedded engine's HTTP interface sets it on every statement
// of a tenant user (where its row policies compare with it), and the
// datasource reads it to learn which tenant it shows (docs/security.md).
package tenancy

import "strings"

// Setting is the ClickHouse setting that carries the marker.
const Setting = "log_comment"

// markerPrefix starts a tenant marker.
const markerPrefix = "flamehouse:tenant:"

// Marker is the log_comment of a tenant user's statements.
func Marker(tenant string) string { return markerPrefix + tenant }

// FromMarker returns the tenant a log_comment names, if it is a marker.
func FromMarker(comment string) (string, bool) { return strings.CutPrefix(comment, markerPrefix) }

// MarkerPrefixLen is the length of a marker before the tenant, for SQL
// that cuts the tenant out of the setting (substring from
// MarkerPrefixLen+1).
const MarkerPrefixLen = len(markerPrefix)

// MarkerPrefix is the text every marker starts with.
const MarkerPrefix = markerPrefix
