package query

import (
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

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
	values []int64
	total  int64
}

func newSeriesAccumulator(r *Request) *seriesAccumulator {
	return &seriesAccumulator{r: r, groups: map[string]*groupSeries{}}
}

func (a *seriesAccumulator) add(labels []string, t, v int64) {
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
	g.total += v
}

// frames renders the top Limit groups by total, each as a time series
// frame of rates whose value field links to the group's flame graph.
func (a *seriesAccumulator) frames(target linkTarget) data.Frames {
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
	unit, scale := rateUnit(a.r.ProfileType.SampleUnit)
	step := a.r.Step.Seconds()
	out := make(data.Frames, 0, len(groups))
	for _, g := range groups {
		times := make([]time.Time, len(g.times))
		values := make([]float64, len(g.values))
		for i := range g.times {
			times[i] = time.Unix(g.times[i], 0).UTC()
			values[i] = float64(g.values[i]) * scale / step
		}
		value := data.NewField(a.r.ProfileType.ID, g.labels, values).SetConfig(&data.FieldConfig{
			Unit: unit, Links: target.links(LinkSeriesFlameGraph, a.groupQuery(g), true),
		})
		f := data.NewFrame("series", data.NewField("time", nil, times), value)
		f.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeGraph, Type: data.FrameTypeTimeSeriesMulti})
		out = append(out, f)
	}
	if len(out) == 0 {
		f := data.NewFrame("series", data.NewField("time", nil, []time.Time{}),
			data.NewField(a.r.ProfileType.ID, nil, []float64{}).SetConfig(&data.FieldConfig{Unit: unit}))
		f.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeGraph, Type: data.FrameTypeTimeSeriesMulti})
		out = append(out, f)
	}
	return out
}

// groupQuery is the flame graph query of a group: the request's profile
// type, matchers, spans and trace, an equality matcher per group-by label
// with the group's value ("" selects samples without the label, as
// grouping put them there), and the clicked point's interval.
func (a *seriesAccumulator) groupQuery(g *groupSeries) map[string]any {
	ms := slices.Clone(a.r.Matchers)
	for i, l := range a.r.GroupBy {
		ms = append(ms, selector.Matcher{Name: l, Op: selector.Equal, Value: g.groups[i]})
	}
	q := profileQuery(a.r.ProfileType.ID, ms, a.r.SpanIDs, a.r.TraceID)
	q["intervalStart"] = pointTimeVariable
	q["intervalSeconds"] = int64(a.r.Step / time.Second)
	return q
}

// pointTimeVariable is Grafana's variable for the time of the point a
// link is clicked on (Unix milliseconds).
const pointTimeVariable = "${__value.time}"

// rateUnit is the Grafana unit of a per-second rate of a sample unit and
// the factor to it: CPU nanoseconds per second as cores, bytes per second,
// counts per second.
func rateUnit(sampleUnit string) (string, float64) {
	switch sampleUnit {
	case "nanoseconds":
		return "suffix: cores", 1e-9
	case "bytes":
		return "binBps", 1
	case "count":
		return "ops", 1
	}
	return "short", 1
}
