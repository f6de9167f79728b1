package query

import (
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/flamehouse/flamehouse/pkg/query/selector"
)

// Titles of the internal links the frames carry.
const (
	// LinkSpanProfiles is on the traces frame's profileSpanID field.
	LinkSpanProfiles = "Profiles for this span"
	// LinkSpanFlameGraph is on the spans frame's spanID field.
	LinkSpanFlameGraph = "Span flame graph"
	// LinkSeriesFlameGraph is on each time series' value field.
	LinkSeriesFlameGraph = "Flame graph for this series"
)

// linkTarget is the datasource the frames' internal links open (this one)
// and the time range they open: the query's range as sent.
type linkTarget struct {
	uid, name string
	from, to  time.Time
}

// linkTarget is the target of a request's links.
func (e *Engine) linkTarget(r *Request) linkTarget {
	return linkTarget{uid: e.DatasourceUID, name: e.DatasourceName, from: r.rangeFrom, to: r.rangeTo}
}

// links is one internal link to a query of this datasource, or none when
// the datasource's uid is unknown. withRange sets the query's range as
// the link's (the SDK has one range per field, not per value); without
// it, Grafana opens its own range (the trace view: the span's).
func (t linkTarget) links(title string, query map[string]any, withRange bool) []data.DataLink {
	if t.uid == "" {
		return nil
	}
	in := &data.InternalDataLink{DatasourceUID: t.uid, DatasourceName: t.name, Query: query}
	if withRange && !t.from.IsZero() {
		in.Range = &data.TimeRange{From: t.from, To: t.to}
	}
	return []data.DataLink{{Title: title, Internal: in}}
}

// profileQuery is the query of a flame graph link: a profile type, the
// matchers (escaped so that Grafana's interpolation leaves them as they
// are), and optionally span ids (which may be Grafana variables such as
// ${__value.raw}) and a trace id.
func profileQuery(profileType string, ms []selector.Matcher, spans []string, traceID string) map[string]any {
	q := map[string]any{
		"queryType":     TypeProfile,
		"profileTypeId": profileType,
		"labelSelector": selector.FormatForTemplate(ms),
	}
	if len(spans) > 0 {
		q["spanSelector"] = spans
	}
	if traceID != "" {
		q["traceId"] = traceID
	}
	return q
}

// spanValueVariable is Grafana's variable for the raw value of the field
// a link is on.
const spanValueVariable = "${__value.raw}"
