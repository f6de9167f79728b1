package query

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// ProfileIDTag is the span tag Grafana's trace view reads to show a span's
// flame graph ("Profiles for this span", the embedded span flame graph):
// the span id, as the Pyroscope SDKs set it.
const ProfileIDTag = "pyroscope.profile.id"

// traceSpan is one row of the exporter's spans table.
type traceSpan struct {
	traceID, spanID, parentSpanID, name, service, namespace  string
	kind, statusCode, statusMessage, scopeName, scopeVersion string
	traceState                                               string
	resource, attributes                                     map[string]string
	start, duration                                          int64 // ns
	eventTimes                                               []int64
	eventNames                                               []string
	eventAttrs                                               []map[string]string
	linkTraceIDs, linkSpanIDs                                []string
	linkAttrs                                                []map[string]string
}

// trace answers a traces query: the trace's spans from the exporter's
// spans table, started within the lookup table's bounds of the trace
// (else within the query's range), as Grafana's trace frame; spans with
// samples of the profile type carry the ProfileIDTag and a profileSpanID
// that links to their flame graph.
func (e *Engine) trace(ctx context.Context, t *tracesTables, r *Request) (*data.Frame, error) {
	if !t.hasSpans {
		return nil, fmt.Errorf("%w: no table %q in database %q; set the traces database and table to the "+
			"OpenTelemetry Collector ClickHouse exporter's", ErrNoTracesTable, t.table, t.database)
	}
	from, to, err := e.traceWindow(ctx, t, r)
	if err != nil {
		return nil, err
	}
	spans, err := e.readSpans(ctx, t, r.TraceID, from, to)
	if err != nil {
		return nil, err
	}
	profiled, err := e.profiledSpans(ctx, r, &traceScope{table: t.spans, traceID: r.TraceID, from: from, to: to}, spans)
	if err != nil {
		return nil, err
	}
	return traceFrame(spans, profiled, r.ProfileType.ID, e.linkTarget(r)), nil
}

// profiledSpans finds which of a trace's spans have samples of the
// request's profile type (none without a type), in the trace's extent
// widened by the padding: one trace-wide read through the layout.
func (e *Engine) profiledSpans(ctx context.Context, r *Request, scope *traceScope, spans []traceSpan) (map[string]bool, error) {
	out := map[string]bool{}
	if len(spans) == 0 || r.ProfileType.ID == "" {
		return out, nil
	}
	start, end := spans[0].start, spans[0].start+spans[0].duration
	for _, s := range spans {
		start, end = min(start, s.start), max(end, s.start+s.duration)
	}
	sr := *r
	sr.Type, sr.Limit, sr.SpanIDs = TypeSpans, len(spans), nil
	sr.scopeToTrace(scope, start, end)
	top, _, err := e.layout().spans(ctx, &sr)
	if err != nil {
		return nil, fmt.Errorf("find the spans with samples: %w", err)
	}
	for _, s := range top {
		out[s.spanID] = true
	}
	return out, nil
}

// readSpans reads a trace's spans that started in [from, to) (Unix
// seconds), in start order.
func (e *Engine) readSpans(ctx context.Context, t *tracesTables, traceID string, from, to int64) ([]traceSpan, error) {
	var p params
	q := "SELECT TraceId, SpanId, ParentSpanId, SpanName, ServiceName, ResourceAttributes['service.namespace'], SpanKind, " +
		"StatusCode, StatusMessage, ScopeName, ScopeVersion, TraceState, ResourceAttributes, SpanAttributes, " +
		"toUnixTimestamp64Nano(Timestamp), toInt64(Duration), arrayMap(x -> toUnixTimestamp64Nano(x), Events.Timestamp), " +
		"arrayMap(x -> toString(x), Events.Name), Events.Attributes, Links.TraceId, Links.SpanId, Links.Attributes FROM " + t.spans +
		" WHERE TraceId = " + p.str(traceID) +
		" AND " + nanoTimeRange(&p, from, to) +
		" ORDER BY Timestamp, SpanId"
	rows, err := e.Conn.Query(ctx, q, p.args...)
	if err != nil {
		return nil, fmt.Errorf("read the trace's spans: %w", err)
	}
	defer rows.Close()
	var out []traceSpan
	for rows.Next() {
		var s traceSpan
		if err := rows.Scan(&s.traceID, &s.spanID, &s.parentSpanID, &s.name, &s.service, &s.namespace, &s.kind,
			&s.statusCode, &s.statusMessage, &s.scopeName, &s.scopeVersion, &s.traceState, &s.resource, &s.attributes,
			&s.start, &s.duration, &s.eventTimes, &s.eventNames, &s.eventAttrs, &s.linkTraceIDs, &s.linkSpanIDs, &s.linkAttrs); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// traceFrame renders spans as Grafana's trace frame (the columns of
// Tempo's), plus profileSpanID: the span id of spans with samples (nil
// for the others), linking to the span's flame graph. The ProfileIDTag
// marks exactly the spans with samples, whatever the stored attributes say.
func traceFrame(spans []traceSpan, profiled map[string]bool, profileType string, target linkTarget) *data.Frame {
	n := len(spans)
	str := func() []string { return make([]string, n) }
	traceIDs, spanIDs, parents, names, services, namespaces := str(), str(), str(), str(), str(), str()
	kinds, statusMessages, scopeNames, scopeVersions, traceStates := str(), str(), str(), str(), str()
	statusCodes := make([]int64, n)
	starts, durations := make([]float64, n), make([]float64, n)
	serviceTags, logs, references, tags := make([]json.RawMessage, n), make([]json.RawMessage, n), make([]json.RawMessage, n), make([]json.RawMessage, n)
	profileSpanIDs := make([]*string, n)
	for i := range spans {
		s := &spans[i]
		traceIDs[i], spanIDs[i], parents[i], names[i], services[i], namespaces[i] = s.traceID, s.spanID, s.parentSpanID, s.name, s.service, s.namespace
		kinds[i], statusCodes[i], statusMessages[i] = spanKind(s.kind), statusCode(s.statusCode), s.statusMessage
		scopeNames[i], scopeVersions[i], traceStates[i] = s.scopeName, s.scopeVersion, s.traceState
		starts[i], durations[i] = float64(s.start)/1e6, float64(s.duration)/1e6
		serviceTags[i], logs[i], references[i] = keyValues(s.resource), spanLogs(s), spanReferences(s)
		// A sender's own mark (a Pyroscope SDK, flamehouse's self-tracing)
		// is replaced by ours: on the spans with samples, once.
		delete(s.attributes, ProfileIDTag)
		var extra []keyValue
		if profiled[s.spanID] {
			id := s.spanID
			profileSpanIDs[i] = &id
			extra = append(extra, keyValue{Key: ProfileIDTag, Value: id})
		}
		tags[i] = keyValues(s.attributes, extra...)
	}
	query := profileQuery(profileType, nil, []string{spanValueVariable}, "")
	frame := data.NewFrame("Trace",
		data.NewField("traceID", nil, traceIDs),
		data.NewField("spanID", nil, spanIDs),
		data.NewField("parentSpanID", nil, parents),
		data.NewField("operationName", nil, names),
		data.NewField("serviceName", nil, services),
		data.NewField("serviceNamespace", nil, namespaces),
		data.NewField("kind", nil, kinds),
		data.NewField("statusCode", nil, statusCodes),
		data.NewField("statusMessage", nil, statusMessages),
		data.NewField("instrumentationLibraryName", nil, scopeNames),
		data.NewField("instrumentationLibraryVersion", nil, scopeVersions),
		data.NewField("traceState", nil, traceStates),
		data.NewField("serviceTags", nil, serviceTags),
		data.NewField("startTime", nil, starts),
		data.NewField("duration", nil, durations),
		data.NewField("logs", nil, logs),
		data.NewField("references", nil, references),
		data.NewField("tags", nil, tags),
		data.NewField("profileSpanID", nil, profileSpanIDs).SetConfig(&data.FieldConfig{
			Links: target.links(LinkSpanProfiles, query, false),
		}),
	)
	return frame.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeTrace})
}

// spanKind spells the exporter's span kind ("Server", or
// "SPAN_KIND_SERVER") as the trace view does: client, server, producer,
// consumer or internal ("" for unspecified).
func spanKind(k string) string {
	k = strings.ToLower(strings.TrimPrefix(strings.ToUpper(k), "SPAN_KIND_"))
	if k == "unspecified" {
		return ""
	}
	return k
}

// statusCode maps the exporter's status ("Unset", "Ok", "Error", or
// "STATUS_CODE_…") to the trace view's 0, 1 and 2.
func statusCode(c string) int64 {
	switch strings.ToLower(strings.TrimPrefix(strings.ToUpper(c), "STATUS_CODE_")) {
	case "ok":
		return 1
	case "error":
		return 2
	}
	return 0
}

// keyValue is one tag of the trace frame's JSON columns.
type keyValue struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// keyValues renders attributes as [{"key", "value"}], sorted by key, with
// extra tags after them.
func keyValues(m map[string]string, extra ...keyValue) json.RawMessage {
	kvs := make([]keyValue, 0, len(m)+len(extra))
	for k, v := range m {
		kvs = append(kvs, keyValue{Key: k, Value: v})
	}
	slices.SortFunc(kvs, func(a, b keyValue) int { return strings.Compare(a.Key, b.Key) })
	return mustJSON(append(kvs, extra...))
}

// spanLog is one span event in the trace frame's logs column.
type spanLog struct {
	Timestamp float64         `json:"timestamp"` // ms
	Name      string          `json:"name,omitempty"`
	Fields    json.RawMessage `json:"fields"`
}

// spanLogs renders a span's events.
func spanLogs(s *traceSpan) json.RawMessage {
	logs := make([]spanLog, 0, len(s.eventTimes))
	for i, ts := range s.eventTimes {
		l := spanLog{Timestamp: float64(ts) / 1e6, Fields: keyValues(nil)}
		if i < len(s.eventNames) {
			l.Name = s.eventNames[i]
		}
		if i < len(s.eventAttrs) {
			l.Fields = keyValues(s.eventAttrs[i])
		}
		logs = append(logs, l)
	}
	return mustJSON(logs)
}

// spanReference is one span link in the trace frame's references column.
type spanReference struct {
	TraceID string          `json:"traceID"`
	SpanID  string          `json:"spanID"`
	Tags    json.RawMessage `json:"tags"`
}

// spanReferences renders a span's links.
func spanReferences(s *traceSpan) json.RawMessage {
	refs := make([]spanReference, 0, len(s.linkSpanIDs))
	for i, id := range s.linkSpanIDs {
		ref := spanReference{SpanID: id, Tags: keyValues(nil)}
		if i < len(s.linkTraceIDs) {
			ref.TraceID = s.linkTraceIDs[i]
		}
		if i < len(s.linkAttrs) {
			ref.Tags = keyValues(s.linkAttrs[i])
		}
		refs = append(refs, ref)
	}
	return mustJSON(refs)
}

// mustJSON marshals values that always marshal (strings, numbers, raw
// JSON).
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal trace frame column: %v", err))
	}
	return b
}
