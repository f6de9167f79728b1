package pyroscopeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"connectrpc.com/connect"
	profilev1 "github.com/grafana/pyroscope/api/gen/proto/go/google/v1"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/flamehouse/flamehouse/pkg/query"
)

// querier implements querier.v1.QuerierService. Heatmaps, profile stats
// and query analysis are not implemented (Unimplemented).
type querier struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	s *Server
}

// defaultRange is the range of a request without start (Pyroscope reads
// its ingesters only then: recent data).
const defaultRange = time.Hour

// defaultStep is the step of a series request without one.
const defaultStep = 15 * time.Second

// timeRange reads a request's start and end (Unix milliseconds); a
// missing end is now, a missing start an hour before the end.
func (s *Server) timeRange(start, end int64) (from, to time.Time) {
	to = s.now()
	if end != 0 {
		to = time.UnixMilli(end)
	}
	from = to.Add(-defaultRange)
	if start != 0 {
		from = time.UnixMilli(start)
	}
	return from, to
}

// parse validates a query in the datasource's model over a range, with the
// API's options: its default max nodes, no span window padding (Grafana
// pads the range of Pyroscope links itself) and diffs unscaled (Pyroscope
// compares the sides as they are).
func (s *Server) parse(q query.JSON, start, end int64, step time.Duration) (*query.Request, error) {
	raw, err := json.Marshal(q)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	from, to := s.timeRange(start, end)
	r, err := query.ParseRequest(raw, from, to, step, query.Options{
		DefaultMaxNodes: s.cfg.DefaultMaxNodes, MinStep: time.Second, DiffUnscaled: true, Now: s.now,
	})
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	return r, nil
}

// selection is what a flame graph request selects.
type selection struct {
	profileType, selector string
	start, end            int64
	maxNodes              *int64
	spans, traces         []string
	stackTraces           *typesv1.StackTraceSelector
	profileIDs            []string
}

func mergeSelection(m *querierv1.SelectMergeStacktracesRequest) selection {
	return selection{
		profileType: m.GetProfileTypeID(), selector: m.GetLabelSelector(), start: m.GetStart(), end: m.GetEnd(), maxNodes: m.MaxNodes,
		spans: m.GetSpanSelector(), traces: m.GetTraceIdSelector(), stackTraces: m.GetStackTraceSelector(), profileIDs: m.GetProfileIdSelector(),
	}
}

// unsupported refuses what the tables cannot select by: call-site and Go
// PGO stack trace selectors, profile ids (Flamehouse keeps no profile
// ids), and more than one trace id.
func unsupported(sts *typesv1.StackTraceSelector, profileIDs, traces []string) error {
	switch {
	case sts != nil && (len(sts.GetCallSite()) > 0 || sts.GetGoPgo() != nil):
		return connect.NewError(connect.CodeUnimplemented, errors.New("stack_trace_selector (call sites, Go PGO) is not supported by Flamehouse"))
	case len(profileIDs) > 0:
		return connect.NewError(connect.CodeUnimplemented, errors.New("profile_id_selector is not supported: Flamehouse keeps no profile ids"))
	case len(traces) > 1:
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("trace_id_selector has %d trace ids; Flamehouse selects by one", len(traces)))
	}
	return nil
}

// query is the datasource query of a selection.
func (sel selection) query(queryType string) query.JSON {
	q := query.JSON{QueryType: queryType, ProfileTypeID: sel.profileType, LabelSelector: sel.selector, SpanSelector: sel.spans, MaxNodes: sel.maxNodes}
	if len(sel.traces) == 1 {
		q.TraceID = sel.traces[0]
	}
	return q
}

// flame answers a selection's flame graph frame, read for the conversions.
func (s *Server) flame(ctx context.Context, method string, sel selection) (*nestedSet, *query.Request, error) {
	if err := unsupported(sel.stackTraces, sel.profileIDs, sel.traces); err != nil {
		return nil, nil, err
	}
	r, err := s.parse(sel.query(query.TypeProfile), sel.start, sel.end, 0)
	if err != nil {
		return nil, nil, err
	}
	return s.runFlame(ctx, method, r)
}

// runFlame runs a flame graph or diff request.
func (s *Server) runFlame(ctx context.Context, method string, r *query.Request) (*nestedSet, *query.Request, error) {
	ctx, e := s.engine(ctx, method)
	frames, err := e.Run(ctx, r)
	if err == nil && len(frames) != 1 {
		err = fmt.Errorf("the engine answered %d frames for a flame graph", len(frames))
	}
	if err != nil {
		return nil, nil, s.answerErr(ctx, method, err)
	}
	ns, err := readNestedSet(frames[0])
	if err != nil {
		return nil, nil, s.answerErr(ctx, method, err)
	}
	return ns, r, nil
}

// pprofOf converts a flame graph to pprof with the request's profile type
// and range.
func pprofOf(ns *nestedSet, r *query.Request) *profilev1.Profile {
	pt := r.ProfileType
	return pprofProfile(ns, profileMeta{
		sampleType: pt.SampleType, sampleUnit: pt.SampleUnit, periodType: pt.PeriodType, periodUnit: pt.PeriodUnit,
		startNanos: r.From.UnixNano(), durationNanos: r.To.Sub(r.From).Nanoseconds(),
	})
}

// SelectMergeStacktraces answers a flame graph (or with PROFILE_FORMAT_PPROF
// a pprof profile) of the selection.
func (q *querier) SelectMergeStacktraces(ctx context.Context, req *connect.Request[querierv1.SelectMergeStacktracesRequest]) (
	*connect.Response[querierv1.SelectMergeStacktracesResponse], error,
) {
	m := req.Msg
	if a := m.GetAsync(); a != nil && (a.GetRequestId() != "" || a.GetType() == querierv1.AsyncQueryType_ASYNC_QUERY_TYPE_FORCE) {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("async queries are not supported"))
	}
	switch m.GetFormat() {
	case querierv1.ProfileFormat_PROFILE_FORMAT_UNSPECIFIED, querierv1.ProfileFormat_PROFILE_FORMAT_FLAMEGRAPH, querierv1.ProfileFormat_PROFILE_FORMAT_PPROF:
	default:
		return nil, connect.NewError(connect.CodeUnimplemented, fmt.Errorf("format %s is not supported: use FLAMEGRAPH or PPROF", m.GetFormat()))
	}
	ns, r, err := q.s.flame(ctx, "SelectMergeStacktraces", mergeSelection(m))
	if err != nil {
		return nil, err
	}
	if m.GetFormat() == querierv1.ProfileFormat_PROFILE_FORMAT_PPROF {
		return connect.NewResponse(&querierv1.SelectMergeStacktracesResponse{Pprof: &querierv1.PprofProfile{Profile: pprofOf(ns, r)}}), nil
	}
	return connect.NewResponse(&querierv1.SelectMergeStacktracesResponse{Flamegraph: flameGraph(ns)}), nil
}

// SelectMergeSpanProfile answers the flame graph of the samples of the
// selected spans (of every span without a span selector, as Pyroscope).
func (q *querier) SelectMergeSpanProfile(ctx context.Context, req *connect.Request[querierv1.SelectMergeSpanProfileRequest]) (
	*connect.Response[querierv1.SelectMergeSpanProfileResponse], error,
) {
	m := req.Msg
	if f := m.GetFormat(); f != querierv1.ProfileFormat_PROFILE_FORMAT_UNSPECIFIED && f != querierv1.ProfileFormat_PROFILE_FORMAT_FLAMEGRAPH {
		return nil, connect.NewError(connect.CodeUnimplemented, fmt.Errorf("format %s is not supported: use FLAMEGRAPH", f))
	}
	ns, _, err := q.s.flame(ctx, "SelectMergeSpanProfile", selection{
		profileType: m.GetProfileTypeID(), selector: m.GetLabelSelector(), start: m.GetStart(), end: m.GetEnd(), maxNodes: m.MaxNodes,
		spans: m.GetSpanSelector(),
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&querierv1.SelectMergeSpanProfileResponse{Flamegraph: flameGraph(ns)}), nil
}

// SelectMergeProfile answers the selection as a pprof profile: frames
// merged by function, truncated to max_nodes like the flame graph.
func (q *querier) SelectMergeProfile(ctx context.Context, req *connect.Request[querierv1.SelectMergeProfileRequest]) (
	*connect.Response[profilev1.Profile], error,
) {
	m := req.Msg
	ns, r, err := q.s.flame(ctx, "SelectMergeProfile", selection{
		profileType: m.GetProfileTypeID(), selector: m.GetLabelSelector(), start: m.GetStart(), end: m.GetEnd(), maxNodes: m.MaxNodes,
		traces: m.GetTraceIdSelector(), stackTraces: m.GetStackTraceSelector(), profileIDs: m.GetProfileIdSelector(),
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(pprofOf(ns, r)), nil
}

// Diff answers a diff flame graph of two selections of one profile type:
// left the baseline, right the comparison, each over its own range,
// compared as they are.
func (q *querier) Diff(ctx context.Context, req *connect.Request[querierv1.DiffRequest]) (*connect.Response[querierv1.DiffResponse], error) {
	left, right := req.Msg.GetLeft(), req.Msg.GetRight()
	if left == nil || right == nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("a diff needs both left and right"))
	}
	ns, err := q.s.diff(ctx, "Diff", mergeSelection(left), mergeSelection(right))
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&querierv1.DiffResponse{Flamegraph: flameGraphDiff(ns)}), nil
}

// diff runs a diff of two selections (the engine's diff query, unscaled).
func (s *Server) diff(ctx context.Context, method string, left, right selection) (*nestedSet, error) {
	for _, sel := range []selection{left, right} {
		if err := unsupported(sel.stackTraces, sel.profileIDs, sel.traces); err != nil {
			return nil, err
		}
	}
	if left.profileType != right.profileType {
		return nil, connect.NewError(connect.CodeInvalidArgument,
			fmt.Errorf("left and right compare one profile type: %q is not %q", left.profileType, right.profileType))
	}
	lfrom, lto := s.timeRange(left.start, left.end)
	side := &query.SideJSON{LabelSelector: left.selector, From: timeText(lfrom), To: timeText(lto)}
	if side.LabelSelector == "" {
		side.LabelSelector = "{}" // every series, not the right side's selector
	}
	q := right.query(query.TypeDiff)
	q.Left = side
	if q.MaxNodes == nil {
		q.MaxNodes = left.maxNodes
	}
	r, err := s.parse(q, right.start, right.end, 0)
	if err != nil {
		return nil, err
	}
	ns, _, err := s.runFlame(ctx, method, r)
	return ns, err
}

func timeText(t time.Time) query.TimeText {
	return query.TimeText(strconv.FormatInt(t.UnixMilli(), 10))
}

// SelectSeries answers the selection's time series per group: each
// point the step's sum in the profile type's unit (Grafana divides by the
// step to show rates), for gauge profile types (memory in use, goroutines)
// the average of each series' snapshots in the step, added up over the
// series, whatever the aggregation asked.
func (q *querier) SelectSeries(ctx context.Context, req *connect.Request[querierv1.SelectSeriesRequest]) (
	*connect.Response[querierv1.SelectSeriesResponse], error,
) {
	m := req.Msg
	series, err := q.s.series(ctx, "SelectSeries", seriesSelection{
		profileType: m.GetProfileTypeID(), selector: m.GetLabelSelector(), start: m.GetStart(), end: m.GetEnd(),
		groupBy: m.GetGroupBy(), step: m.GetStep(), limit: m.Limit, aggregation: m.Aggregation, stackTraces: m.GetStackTraceSelector(),
	})
	if err != nil {
		return nil, err
	}
	out := make([]*typesv1.Series, 0, len(series))
	for _, g := range series {
		ts := &typesv1.Series{Labels: make([]*typesv1.LabelPair, len(g.Labels)), Points: make([]*typesv1.Point, len(g.Times))}
		for i, l := range g.Labels {
			ts.Labels[i] = &typesv1.LabelPair{Name: l.Name, Value: l.Value}
		}
		for i, t := range g.Times {
			ts.Points[i] = &typesv1.Point{Value: g.Values[i], Timestamp: t.UnixMilli()}
		}
		out = append(out, ts)
	}
	return connect.NewResponse(&querierv1.SelectSeriesResponse{Series: out}), nil
}

// seriesSelection is what a series request selects.
type seriesSelection struct {
	profileType, selector string
	start, end            int64
	groupBy               []string
	step                  float64 // seconds
	limit                 *int64
	aggregation           *typesv1.TimeSeriesAggregationType
	stackTraces           *typesv1.StackTraceSelector
}

// series runs a time-series request through the engine.
func (s *Server) series(ctx context.Context, method string, sel seriesSelection) ([]query.SeriesGroup, error) {
	if err := unsupported(sel.stackTraces, nil, nil); err != nil {
		return nil, err
	}
	if math.IsNaN(sel.step) || sel.step < 0 || sel.step > 366*24*3600 {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("step %v must be between 0 and a year in seconds", sel.step))
	}
	step := time.Duration(sel.step * float64(time.Second))
	if step == 0 {
		step = defaultStep
	}
	r, err := s.parse(query.JSON{
		QueryType: query.TypeMetrics, ProfileTypeID: sel.profileType, LabelSelector: sel.selector, GroupBy: sel.groupBy, Limit: sel.limit,
	}, sel.start, sel.end, step)
	if err != nil {
		return nil, err
	}
	if sel.aggregation != nil && *sel.aggregation == typesv1.TimeSeriesAggregationType_TIME_SERIES_AGGREGATION_TYPE_AVERAGE && !r.ProfileType.Gauge() {
		return nil, connect.NewError(connect.CodeUnimplemented,
			fmt.Errorf("aggregation AVERAGE is not supported for %s: its points are sums per step", r.ProfileType.ID))
	}
	ctx, e := s.engine(ctx, method)
	groups, err := e.SeriesPoints(ctx, r)
	if err != nil {
		return nil, s.answerErr(ctx, method, err)
	}
	return groups, nil
}
