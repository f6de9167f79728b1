package pyroscopeapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/query/selector"
)

// The labels Pyroscope derives from a series' profile type and service,
// which its selectors and lookups know: the profile type id and its parts.
const (
	labelProfileType = "__profile_type__"
	labelName        = "__name__"
	labelType        = "__type__"
	labelUnit        = "__unit__"
	labelPeriodType  = "__period_type__"
	labelPeriodUnit  = "__period_unit__"
	labelServiceName = "__service_name__"
	serviceName      = "service_name"
)

// profileLabels are the profile type's labels by name.
var profileLabels = map[string]func(query.ProfileType) string{
	labelProfileType: func(p query.ProfileType) string { return p.ID },
	labelName:        func(p query.ProfileType) string { return p.Name },
	labelType:        func(p query.ProfileType) string { return p.SampleType },
	labelUnit:        func(p query.ProfileType) string { return p.SampleUnit },
	labelPeriodType:  func(p query.ProfileType) string { return p.PeriodType },
	labelPeriodUnit:  func(p query.ProfileType) string { return p.PeriodUnit },
}

// lookup is a label lookup's scope: the time range, the matchers on the
// tables' labels, and the profile types the profile type matchers leave
// (nil: all).
type lookup struct {
	scope query.Scope
	types []string
}

// lookups reads the matchers of a lookup request: each selector is one
// lookup (Pyroscope's matchers are alternatives), its profile type
// matchers resolved to the types in the range they select. __service_name__
// is read as service_name.
func (s *Server) lookups(ctx context.Context, e *query.Engine, matchers []string, start, end int64) ([]lookup, error) {
	from, to := s.timeRange(start, end)
	if !to.After(from) {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("the time range is empty: end is not after start"))
	}
	if len(matchers) == 0 {
		matchers = []string{"{}"}
	}
	var all []query.ProfileTypeInfo
	out := make([]lookup, 0, len(matchers))
	for _, text := range matchers {
		ms, err := selector.Parse(text)
		if err != nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("matchers: %w", err))
		}
		l := lookup{scope: query.Scope{From: from, To: to}}
		var typeMatchers []selector.Matcher
		for _, m := range ms {
			switch {
			case profileLabels[m.Name] != nil:
				typeMatchers = append(typeMatchers, m)
			case m.Name == labelServiceName:
				m.Name = serviceName
				l.scope.Matchers = append(l.scope.Matchers, m)
			default:
				l.scope.Matchers = append(l.scope.Matchers, m)
			}
		}
		if len(typeMatchers) > 0 {
			if all == nil {
				if all, err = e.ProfileTypes(ctx, query.Scope{From: from, To: to}); err != nil {
					return nil, err
				}
			}
			l.types = []string{}
			for _, info := range all {
				if pt, err := query.ParseProfileType(info.ID); err == nil && matchesType(typeMatchers, pt) {
					l.types = append(l.types, info.ID)
				}
			}
		}
		out = append(out, l)
	}
	return out, nil
}

func matchesType(ms []selector.Matcher, pt query.ProfileType) bool {
	for i := range ms {
		if !ms[i].Matches(profileLabels[ms[i].Name](pt)) {
			return false
		}
	}
	return true
}

// scopes is the lookup's scope once per profile type it leaves, or once
// for every profile type when no matcher narrows them.
func (l lookup) scopes() []query.Scope {
	if l.types == nil {
		return []query.Scope{l.scope}
	}
	out := make([]query.Scope, len(l.types))
	for i, t := range l.types {
		out[i] = l.scope
		out[i].ProfileType = t
	}
	return out
}

// each runs fn on each of the lookup's scopes and adds the answers to
// into.
func (l lookup) each(fn func(query.Scope) ([]string, error), into map[string]bool) error {
	for _, sc := range l.scopes() {
		got, err := fn(sc)
		if err != nil {
			return err
		}
		for _, v := range got {
			into[v] = true
		}
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ProfileTypes lists the profile types with data in the range.
func (q *querier) ProfileTypes(ctx context.Context, req *connect.Request[querierv1.ProfileTypesRequest]) (
	*connect.Response[querierv1.ProfileTypesResponse], error,
) {
	ctx, e := q.s.engine(ctx, "ProfileTypes")
	from, to := q.s.timeRange(req.Msg.GetStart(), req.Msg.GetEnd())
	if !to.After(from) {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("the time range is empty: end is not after start"))
	}
	infos, err := e.ProfileTypes(ctx, query.Scope{From: from, To: to})
	if err != nil {
		return nil, q.s.answerErr(ctx, "ProfileTypes", err)
	}
	out := &querierv1.ProfileTypesResponse{ProfileTypes: []*typesv1.ProfileType{}}
	for _, info := range infos {
		pt, err := query.ParseProfileType(info.ID)
		if err != nil {
			continue // not of Pyroscope's form: no client could select it
		}
		out.ProfileTypes = append(out.ProfileTypes, &typesv1.ProfileType{
			ID: pt.ID, Name: pt.Name, SampleType: pt.SampleType, SampleUnit: pt.SampleUnit, PeriodType: pt.PeriodType, PeriodUnit: pt.PeriodUnit,
		})
	}
	return connect.NewResponse(out), nil
}

// LabelNames lists the label names with data in the range: service_name,
// resource and sample attribute keys with dots as underscores, and the
// profile type's labels (__name__, __profile_type__, …) and
// __service_name__ as Pyroscope has them.
func (q *querier) LabelNames(ctx context.Context, req *connect.Request[typesv1.LabelNamesRequest]) (
	*connect.Response[typesv1.LabelNamesResponse], error,
) {
	ctx, e := q.s.engine(ctx, "LabelNames")
	ls, err := q.s.lookups(ctx, e, req.Msg.GetMatchers(), req.Msg.GetStart(), req.Msg.GetEnd())
	if err != nil {
		return nil, q.s.answerErr(ctx, "LabelNames", err)
	}
	names := map[string]bool{}
	for _, l := range ls {
		if err := l.each(func(sc query.Scope) ([]string, error) {
			types, err := e.ProfileTypes(ctx, sc)
			if err != nil || len(types) == 0 {
				return nil, err
			}
			got, err := e.LabelNames(ctx, sc)
			return append(got, labelServiceName, labelProfileType, labelName, labelType, labelUnit, labelPeriodType, labelPeriodUnit), err
		}, names); err != nil {
			return nil, q.s.answerErr(ctx, "LabelNames", err)
		}
	}
	return connect.NewResponse(&typesv1.LabelNamesResponse{Names: sortedKeys(names)}), nil
}

// LabelValues lists a label's values with data in the range (at most
// 1,000 per lookup).
func (q *querier) LabelValues(ctx context.Context, req *connect.Request[typesv1.LabelValuesRequest]) (
	*connect.Response[typesv1.LabelValuesResponse], error,
) {
	ctx, e := q.s.engine(ctx, "LabelValues")
	name := req.Msg.GetName()
	if name == labelServiceName {
		name = serviceName
	}
	ls, err := q.s.lookups(ctx, e, req.Msg.GetMatchers(), req.Msg.GetStart(), req.Msg.GetEnd())
	if err != nil {
		return nil, q.s.answerErr(ctx, "LabelValues", err)
	}
	values := map[string]bool{}
	for _, l := range ls {
		if err := l.each(func(sc query.Scope) ([]string, error) {
			if part := profileLabels[name]; part != nil {
				types, err := e.ProfileTypes(ctx, sc)
				var out []string
				for _, t := range types {
					if pt, err := query.ParseProfileType(t.ID); err == nil {
						out = append(out, part(pt))
					}
				}
				return out, err
			}
			return e.LabelValues(ctx, sc, name)
		}, values); err != nil {
			return nil, q.s.answerErr(ctx, "LabelValues", err)
		}
	}
	return connect.NewResponse(&typesv1.LabelValuesResponse{Names: sortedKeys(values)}), nil
}

// Series lists the label sets of the series with data in the range: per
// profile type and series its service, resource attributes (dots as
// underscores) and profile type labels; with label_names only those labels
// of each, the sets deduplicated. Sample attributes (which Flamehouse keeps
// per sample, not per series) are not part of a series.
func (q *querier) Series(ctx context.Context, req *connect.Request[querierv1.SeriesRequest]) (*connect.Response[querierv1.SeriesResponse], error) {
	ctx, e := q.s.engine(ctx, "Series")
	ls, err := q.s.lookups(ctx, e, req.Msg.GetMatchers(), req.Msg.GetStart(), req.Msg.GetEnd())
	if err != nil {
		return nil, q.s.answerErr(ctx, "Series", err)
	}
	keep := map[string]bool{}
	for _, n := range req.Msg.GetLabelNames() {
		keep[n] = true
	}
	seen := map[string]bool{}
	out := &querierv1.SeriesResponse{LabelsSet: []*typesv1.Labels{}}
	for _, l := range ls {
		for _, sc := range l.scopes() {
			infos, err := e.SeriesInfos(ctx, sc)
			if err != nil {
				return nil, q.s.answerErr(ctx, "Series", err)
			}
			for _, info := range infos {
				labels := seriesLabels(info, keep)
				key := labelsKey(labels)
				if !seen[key] {
					seen[key] = true
					out.LabelsSet = append(out.LabelsSet, &typesv1.Labels{Labels: labels})
				}
			}
		}
	}
	return connect.NewResponse(out), nil
}

// seriesLabels are a series' labels sorted by name, only those in keep
// when it is not empty.
func seriesLabels(info query.SeriesInfo, keep map[string]bool) []*typesv1.LabelPair {
	all := map[string]string{serviceName: info.ServiceName, labelServiceName: info.ServiceName}
	for k, v := range info.Resource {
		if name := strings.ReplaceAll(k, ".", "_"); v != "" && name != serviceName {
			all[name] = v
		}
	}
	if pt, err := query.ParseProfileType(info.ProfileType); err == nil {
		for name, part := range profileLabels {
			all[name] = part(pt)
		}
	}
	out := make([]*typesv1.LabelPair, 0, len(all))
	for name, v := range all {
		if len(keep) == 0 || keep[name] {
			out = append(out, &typesv1.LabelPair{Name: name, Value: v})
		}
	}
	slices.SortFunc(out, func(a, b *typesv1.LabelPair) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func labelsKey(labels []*typesv1.LabelPair) string {
	var b strings.Builder
	for _, l := range labels {
		b.WriteString(l.Name)
		b.WriteByte(0)
		b.WriteString(l.Value)
		b.WriteByte(0)
	}
	return b.String()
}
