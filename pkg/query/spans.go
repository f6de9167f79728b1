package query

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
)

// spanLookback is how long before a query's range a span may have started
// and still be looked up by its samples (spans query: operation names and
// durations). Longer spans that began earlier show without them.
const spanLookback = time.Hour

// spanValue is the profile value of one span in a selection.
type spanValue struct {
	traceID, spanID, service string
	value                    int64
}

// spansSQL ranks the spans of a source of (SpanId, TraceId, ServiceName,
// Value) rows by value: the top limit spans, each with the selection's
// total (samples without a span included) for its share.
func spansSQL(p *params, source string, limit int) string {
	return "SELECT s, t, svc, v, total FROM (SELECT SpanId AS s, TraceId AS t, any(ServiceName) AS svc, sum(Value) AS v, " +
		"sum(sum(Value)) OVER () AS total FROM (" + source + ") GROUP BY SpanId, TraceId) WHERE s != '' ORDER BY v DESC, s, t LIMIT " +
		p.i64(int64(limit))
}

// scanSpans runs a spansSQL query.
func scanSpans(ctx context.Context, e *Engine, r *Request, q string, p *params) ([]spanValue, int64, error) {
	rows, err := e.read(ctx, r, q, p.args)
	if err != nil {
		return nil, 0, fmt.Errorf("sum samples per span: %w", err)
	}
	defer closeRows(rows)
	var out []spanValue
	var total int64
	for rows.Next() {
		var s spanValue
		if err := rows.Scan(&s.spanID, &s.traceID, &s.service, &s.value, &total); err != nil {
			return nil, 0, err
		}
		out = append(out, s)
	}
	return out, total, rows.Err()
}

// spanInfo is what the spans table says about a span.
type spanInfo struct {
	name, service string
	duration      int64 // ns
}

// hexID matches the span and trace ids that may be looked up in the spans
// table: lower-case hex, as the exporter writes them.
var hexID = regexp.MustCompile(`^[0-9a-f]{1,64}$`)

// hexArray renders ids as an Array(String) parameter value; ids must match
// hexID, so that they need no quoting.
func hexArray(ids []string) string {
	return "['" + strings.Join(ids, "','") + "']"
}

// spanInfos looks up the names, services and durations of spans in the
// spans table, by (trace id, span id), among the spans that started in
// [from − spanLookback, to).
func (e *Engine) spanInfos(ctx context.Context, t *tracesTables, spans []spanValue, from, to time.Time) (map[[2]string]spanInfo, error) {
	traceSet, spanSet := map[string]bool{}, map[string]bool{}
	var traceIDs, spanIDs []string
	for _, s := range spans {
		if !hexID.MatchString(s.traceID) || !hexID.MatchString(s.spanID) {
			continue
		}
		if !traceSet[s.traceID] {
			traceSet[s.traceID] = true
			traceIDs = append(traceIDs, s.traceID)
		}
		if !spanSet[s.spanID] {
			spanSet[s.spanID] = true
			spanIDs = append(spanIDs, s.spanID)
		}
	}
	out := map[[2]string]spanInfo{}
	if len(spanIDs) == 0 {
		return out, nil
	}
	var p params
	q := "SELECT TraceId, SpanId, any(SpanName), any(ServiceName), toInt64(max(Duration)) FROM " + t.spans +
		" WHERE TraceId IN " + p.add("Array(String)", hexArray(traceIDs)) + " AND SpanId IN " + p.add("Array(String)", hexArray(spanIDs)) +
		" AND " + nanoTimeRange(&p, from.Add(-spanLookback).Unix(), ceilSecond(to)) +
		" GROUP BY TraceId, SpanId"
	rows, err := e.Conn.Query(ctx, q, p.args...)
	if err != nil {
		return nil, fmt.Errorf("look up spans: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var traceID, spanID string
		var info spanInfo
		if err := rows.Scan(&traceID, &spanID, &info.name, &info.service, &info.duration); err != nil {
			return nil, err
		}
		out[[2]string{traceID, spanID}] = info
	}
	return out, rows.Err()
}

// spans answers a spans query: the spans with the most profile value in
// the selection, named from the spans table when it exists.
func (e *Engine) spans(ctx context.Context, l layout, t *tracesTables, r *Request) (*data.Frame, error) {
	top, total, err := l.spans(ctx, r)
	if err != nil {
		return nil, err
	}
	infos := map[[2]string]spanInfo{}
	if len(top) > 0 && t.hasSpans {
		if infos, err = e.spanInfos(ctx, t, top, r.From, r.To); err != nil {
			return nil, err
		}
	}
	return spansFrame(r, top, total, infos, e.linkTarget(r)), nil
}

// spansFrame renders ranked spans: the service is the span's (else the
// samples'), operation name and duration come from the spans table ("" and
// 0 when it does not know the span), share is of the selection's total.
func spansFrame(r *Request, top []spanValue, total int64, infos map[[2]string]spanInfo, target linkTarget) *data.Frame {
	n := len(top)
	traceIDs, spanIDs, services, names := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	durations, shares := make([]float64, n), make([]float64, n)
	values := make([]int64, n)
	for i, s := range top {
		traceIDs[i], spanIDs[i], services[i], values[i] = s.traceID, s.spanID, s.service, s.value
		if info, ok := infos[[2]string{s.traceID, s.spanID}]; ok {
			names[i], durations[i] = info.name, float64(info.duration)/1e6
			if info.service != "" {
				services[i] = info.service
			}
		}
		if total > 0 {
			shares[i] = float64(s.value) / float64(total)
		}
	}
	query := profileQuery(r.ProfileType.ID, r.Matchers, []string{spanValueVariable}, "")
	frame := data.NewFrame("spans",
		data.NewField("traceID", nil, traceIDs),
		data.NewField("spanID", nil, spanIDs).SetConfig(&data.FieldConfig{Links: target.links(LinkSpanFlameGraph, query, true)}),
		data.NewField("serviceName", nil, services),
		data.NewField("operationName", nil, names),
		data.NewField("duration", nil, durations).SetConfig(&data.FieldConfig{Unit: "ms"}),
		data.NewField("value", nil, values).SetConfig(&data.FieldConfig{Unit: flame.Unit(r.ProfileType.SampleUnit)}),
		data.NewField("share", nil, shares).SetConfig(&data.FieldConfig{Unit: "percentunit"}),
	)
	return frame.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeTable, Custom: map[string]any{"flamehouse": "spans"}})
}
