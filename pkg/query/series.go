package query

import (
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
	"github.com/flamehouse/flamehouse/pkg/query/selector"
)

// seriesAccumulator collects bucket sums per group.
type seriesAccumulator struct {
	r      *Request
	groups map[string]*groupSeries
	order  []*groupSeries
}

type groupSeries struct {
	labels data.Labels
	// groups are the group-by labels' values, in the request's order.
	groups []string
	times  []int64
	values []float64
	// parts are a ratio's denominators by point (a function's ratio).
	parts []float64
	total float64
}

func newSeriesAccumulator(r *Request) *seriesAccumulator {
	return &seriesAccumulator{r: r, groups: map[string]*groupSeries{}}
}

// add adds a point of a group: its value v, and for the ratio of a
// function filter its denominator d, the group's value without the filter.
func (a *seriesAccumulator) add(labels []string, t int64, v, d float64) {
	key := strings.Join(labels, "\x00")
	g := a.groups[key]
	if g == nil {
		g = &groupSeries{labels: data.Labels{}, groups: labels}
		for i, l := range a.r.GroupBy {
			g.labels[labelName(l)] = labels[i]
		}
		a.groups[key] = g
		a.order = append(a.order, g)
	}
	g.times = append(g.times, t)
	g.values = append(g.values, v)
	if a.r.Ratio && a.r.Function != "" {
		g.parts = append(g.parts, d)
	}
	g.total += v
}

// ratios divides each group's points by their denominators: with a
// function, the group's value without the filter; without, all groups'
// value at that time. Points without a denominator are dropped.
func (*seriesAccumulator) ratios(g *groupSeries, totals map[int64]float64) (times []int64, values []float64) {
	for i, t := range g.times {
		d := totals[t]
		if g.parts != nil {
			d = g.parts[i]
		}
		if d != 0 {
			times, values = append(times, t), append(values, g.values[i]/d)
		}
	}
	return times, values
}

// top is the Limit groups with the largest totals, largest first (ties by
// labels).
func (a *seriesAccumulator) top() []*groupSeries {
	groups := slices.Clone(a.order)
	slices.SortStableFunc(groups, func(x, y *groupSeries) int {
		switch {
		case x.total > y.total:
			return -1
		case x.total < y.total:
			return 1
		}
		return strings.Compare(x.labels.String(), y.labels.String())
	})
	if len(groups) > a.r.Limit {
		groups = groups[:a.r.Limit]
	}
	return groups
}

// SeriesGroup is one group of a time-series answer as numbers.
type SeriesGroup struct {
	// Labels are the group's values of the request's GroupBy labels, in
	// its order, named as selectors spell them ("" for an absent label).
	Labels []LabelValue
	// Times are the buckets' starts, Values their values: a bucket's sum
	// in the profile type's unit (the amount over the step; the frames
	// divide it by the step to show rates), or for a gauge profile type
	// the amount the frames show (each series' average over its snapshots
	// in the bucket, added up over the series).
	Times  []time.Time
	Values []float64
}

// LabelValue is a label and its value.
type LabelValue struct {
	Name, Value string
}

// points renders the top Limit groups as numbers (see SeriesGroup).
func (a *seriesAccumulator) points() []SeriesGroup {
	groups := a.top()
	out := make([]SeriesGroup, 0, len(groups))
	for _, g := range groups {
		sg := SeriesGroup{Labels: make([]LabelValue, len(g.groups)), Times: make([]time.Time, len(g.times)), Values: slices.Clone(g.values)}
		for i, v := range g.groups {
			sg.Labels[i] = LabelValue{Name: labelName(a.r.GroupBy[i]), Value: v}
		}
		for i, t := range g.times {
			sg.Times[i] = time.Unix(t, 0).UTC()
		}
		out = append(out, sg)
	}
	return out
}

// frames renders the top Limit groups by total, each as a time series
// frame (rates, or amounts for a gauge profile type) whose value field
// links to the group's flame graph.
func (a *seriesAccumulator) frames(target linkTarget) data.Frames {
	groups := a.top()
	unit, scale := seriesUnit(a.r.ProfileType)
	perSecond := 1.0 // a gauge's amount
	if !a.r.ProfileType.Gauge() {
		perSecond = a.r.Step.Seconds() // a bucket's sum per second
	}
	var totals map[int64]float64
	if a.r.Ratio {
		unit, scale, perSecond = "percentunit", 1, 1
		if a.r.Function == "" {
			totals = map[int64]float64{}
			for _, g := range a.order {
				for i, t := range g.times {
					totals[t] += g.values[i]
				}
			}
		}
	}
	out := make(data.Frames, 0, len(groups))
	for _, g := range groups {
		points, values := g.times, g.values
		if a.r.Ratio {
			points, values = a.ratios(g, totals)
		}
		times := make([]time.Time, len(points))
		scaled := make([]float64, len(values))
		for i := range points {
			times[i] = time.Unix(points[i], 0).UTC()
			scaled[i] = values[i] * scale / perSecond
		}
		value := data.NewField(a.r.ProfileType.ID, g.labels, scaled).SetConfig(&data.FieldConfig{
			DisplayNameFromDS: a.displayName(g), Unit: unit, Links: target.links(LinkSeriesFlameGraph, a.groupQuery(g), true),
		})
		out = append(out, seriesFrame(data.NewField("time", nil, times), value))
	}
	switch {
	case len(out) == 0 && a.r.Alert:
		// The data plane's empty answer: one frame of the type, without
		// fields, which the alert evaluation reads as no data.
		out = append(out, data.NewFrame("series").SetMeta(&data.FrameMeta{
			Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1},
		}))
	case len(out) == 0:
		out = append(out, seriesFrame(data.NewField("time", nil, []time.Time{}),
			data.NewField(a.r.ProfileType.ID, nil, []float64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: a.selectionName(), Unit: unit})))
	}
	return out
}

// seriesFrame is one time series in the data plane's multi-frame
// time-series format (version 0.1), which alert rules read.
func seriesFrame(times, values *data.Field) *data.Frame {
	f := data.NewFrame("series", times, values)
	return f.SetMeta(&data.FrameMeta{
		PreferredVisualization: data.VisTypeGraph, Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1},
	})
}

// displayName is the name a series shows in legends and tooltips: with
// groupBy, the group's label values joined by ", " (an absent or empty
// label as "(no <label>)"); without, the selection's name.
func (a *seriesAccumulator) displayName(g *groupSeries) string {
	if a.r.Function != "" {
		name := a.r.Function + " (" + a.functionValue() + ")"
		if len(a.r.GroupBy) > 0 {
			name += " · " + a.groupName(g)
		}
		return name
	}
	if len(a.r.GroupBy) == 0 {
		return a.selectionName()
	}
	return a.groupName(g)
}

func (a *seriesAccumulator) functionValue() string {
	if a.r.FunctionSelf {
		return FunctionSelf
	}
	return FunctionTotal
}

// groupName is a group's name.
func (a *seriesAccumulator) groupName(g *groupSeries) string { return groupName(a.r.GroupBy, g.groups) }

// groupName names a group of an answer (a series, a flame graph's group
// node): its label values joined by ", ", an absent or empty label as
// "(no <label>)".
func groupName(groupBy, values []string) string {
	parts := make([]string, len(values))
	for i, v := range values {
		if v == "" {
			v = "(no " + labelName(groupBy[i]) + ")"
		}
		parts[i] = v
	}
	return strings.Join(parts, ", ")
}

// selectionName names what an ungrouped series adds up: the query's label
// selector when it has matchers, else its profile type as the editor's
// picker shows it ("process_cpu / cpu").
func (a *seriesAccumulator) selectionName() string {
	if len(a.r.Matchers) > 0 {
		return selector.Format(a.r.Matchers)
	}
	return a.r.ProfileType.Name + " / " + a.r.ProfileType.SampleType
}

// groupQuery is the flame graph query of a group: the request's profile
// type, matchers, spans and trace, an equality matcher per group-by label
// with the group's value ("" selects samples without the label, as
// grouping put them there), its function filter and frame kinds, and the
// clicked point's interval.
func (a *seriesAccumulator) groupQuery(g *groupSeries) map[string]any {
	ms := slices.Clone(a.r.Matchers)
	for i, l := range a.r.GroupBy {
		ms = append(ms, selector.Matcher{Name: l, Op: selector.Equal, Value: g.groups[i]})
	}
	q := profileQuery(a.r.ProfileType.ID, ms, a.r.SpanIDs, a.r.TraceID)
	if a.r.Function != "" {
		q["function"], q["functionValue"] = a.r.Function, a.functionValue()
	}
	if a.r.HideFrames != 0 {
		q["hideFrames"] = a.r.HideFrames.Names()
	}
	if a.r.CollapseFrames != 0 {
		q["collapseFrames"] = a.r.CollapseFrames.Names()
	}
	q["intervalStart"] = pointTimeVariable
	q["intervalSeconds"] = int64(a.r.Step / time.Second)
	return q
}

// pointTimeVariable is Grafana's variable for the time of the point a
// link is clicked on (Unix milliseconds).
const pointTimeVariable = "${__value.time}"

// seriesUnit is the Grafana unit of a profile type's time series and the
// factor to it. A gauge's series are amounts in its sample unit (bytes,
// short for counts); the others' are per-second rates: CPU nanoseconds per
// second as cores, bytes per second, counts per second.
func seriesUnit(pt ProfileType) (string, float64) {
	if pt.Gauge() {
		return flame.Unit(pt.SampleUnit), 1
	}
	switch pt.SampleUnit {
	case "nanoseconds":
		return "suffix: cores", 1e-9
	case "bytes":
		return "binBps", 1
	case "count":
		return "ops", 1
	}
	return "short", 1
}
