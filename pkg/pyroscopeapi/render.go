package pyroscopeapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/flamehouse/flamehouse/pkg/query"
)

// flamebearerProfile is the JSON of /pyroscope/render and render-diff:
// Pyroscope's flamebearer profile (levels as in the flame graph message;
// the diff's levels have seven numbers per node).
type flamebearerProfile struct {
	Version     int            `json:"version"`
	Flamebearer flamebearer    `json:"flamebearer"`
	Metadata    renderMetadata `json:"metadata"`
	Timeline    *timeline      `json:"timeline"`
	Groups      any            `json:"groups"`
	Heatmap     any            `json:"heatmap"`
	LeftTicks   *int64         `json:"leftTicks,omitempty"`
	RightTicks  *int64         `json:"rightTicks,omitempty"`
}

type flamebearer struct {
	Names    []string  `json:"names"`
	Levels   [][]int64 `json:"levels"`
	NumTicks int64     `json:"numTicks"`
	MaxSelf  int64     `json:"maxSelf"`
}

// renderMetadata says how to read the values: format single or double
// (a diff), the units and ticks per unit as Pyroscope's UI formats them.
type renderMetadata struct {
	Format     string `json:"format"`
	SpyName    string `json:"spyName"`
	SampleRate uint32 `json:"sampleRate"`
	Units      string `json:"units"`
	Name       string `json:"name"`
}

// timeline is the selection's total per step from StartTime (Unix
// seconds), DurationDelta seconds apart.
type timeline struct {
	StartTime     int64            `json:"startTime"`
	Samples       []float64        `json:"samples"`
	DurationDelta int64            `json:"durationDelta"`
	Watermarks    map[string]int64 `json:"watermarks"`
}

// timelinePoints is the most points a render timeline has; its step is at
// least minTimelineStep.
const (
	timelinePoints  = 1500
	minTimelineStep = 15 * time.Second
)

// render answers GET /pyroscope/render?query=<profile type>{selector}&from=&until=&max-nodes=:
// the selection's flame graph and timeline.
func (s *Server) render(ctx context.Context, r *http.Request) (any, error) {
	p := r.URL.Query()
	if err := jsonFormat(p); err != nil {
		return nil, err
	}
	profileType, sel, err := splitQuery(p.Get("query"))
	if err != nil {
		return nil, err
	}
	maxNodes, err := maxNodesParam(p)
	if err != nil {
		return nil, err
	}
	start, end, err := s.renderRange(p.Get("from"), p.Get("until"))
	if err != nil {
		return nil, err
	}
	ns, req, err := s.flame(ctx, "render", selection{profileType: profileType, selector: sel, start: start, end: end, maxNodes: maxNodes})
	if err != nil {
		return nil, err
	}
	fg := flameGraph(ns)
	out := &flamebearerProfile{
		Version: 1, Flamebearer: flamebearer{Names: fg.Names, NumTicks: fg.Total, MaxSelf: fg.MaxSelf},
		Metadata: metadata(req.ProfileType, "single"),
	}
	for _, l := range fg.Levels {
		out.Flamebearer.Levels = append(out.Flamebearer.Levels, l.Values)
	}
	step := max(minTimelineStep, (req.To.Sub(req.From) / timelinePoints).Truncate(time.Second))
	groups, err := s.series(ctx, "render", seriesSelection{profileType: profileType, selector: sel, start: start, end: end, step: step.Seconds()})
	if err != nil {
		return nil, err
	}
	out.Timeline = newTimeline(req.From, req.To, step, groups)
	return out, nil
}

// renderDiff answers GET /pyroscope/render-diff?leftQuery=&leftFrom=&leftUntil=&rightQuery=&rightFrom=&rightUntil=&max-nodes=.
func (s *Server) renderDiff(ctx context.Context, r *http.Request) (any, error) {
	p := r.URL.Query()
	if err := jsonFormat(p); err != nil {
		return nil, err
	}
	maxNodes, err := maxNodesParam(p)
	if err != nil {
		return nil, err
	}
	var sides [2]selection
	for i, side := range []string{"left", "right"} {
		pt, sel, err := splitQuery(p.Get(side + "Query"))
		if err != nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%sQuery: %w", side, err))
		}
		start, end, err := s.renderRange(p.Get(side+"From"), p.Get(side+"Until"))
		if err != nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s: %w", side, err))
		}
		sides[i] = selection{profileType: pt, selector: sel, start: start, end: end, maxNodes: maxNodes}
	}
	ns, err := s.diff(ctx, "render-diff", sides[0], sides[1])
	if err != nil {
		return nil, err
	}
	pt, err := query.ParseProfileType(sides[1].profileType)
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	fg := flameGraphDiff(ns)
	out := &flamebearerProfile{
		Version: 1, Flamebearer: flamebearer{Names: fg.Names, NumTicks: fg.Total, MaxSelf: fg.MaxSelf},
		Metadata: metadata(pt, "double"), LeftTicks: &fg.LeftTicks, RightTicks: &fg.RightTicks,
	}
	for _, l := range fg.Levels {
		out.Flamebearer.Levels = append(out.Flamebearer.Levels, l.Values)
	}
	return out, nil
}

func jsonFormat(p url.Values) error {
	if f := p.Get("format"); f != "" && f != "json" {
		return connect.NewError(connect.CodeUnimplemented, fmt.Errorf("format %q is not supported: use json", f))
	}
	return nil
}

// splitQuery splits a render query, <profile type id>{selector}.
func splitQuery(q string) (profileType, selector string, err error) {
	q = strings.TrimSpace(q)
	i := strings.IndexByte(q, '{')
	if i < 0 {
		profileType, selector = q, "{}"
	} else {
		profileType, selector = q[:i], q[i:]
	}
	if profileType == "" {
		return "", "", connect.NewError(connect.CodeInvalidArgument,
			fmt.Errorf("query %q names no profile type: write <profile type id>{selector}", truncate(q)))
	}
	return profileType, selector, nil
}

func maxNodesParam(p url.Values) (*int64, error) {
	v := p.Get("max-nodes")
	if v == "" {
		v = p.Get("maxNodes")
	}
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("max-nodes %q is not a number", truncate(v)))
	}
	return &n, nil
}

// renderRange reads from and until (default now-1h and now) as Unix
// milliseconds.
func (s *Server) renderRange(from, until string) (start, end int64, err error) {
	now := s.now()
	f, err := renderTime(from, now.Add(-defaultRange), now)
	if err != nil {
		return 0, 0, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("from: %w", err))
	}
	u, err := renderTime(until, now, now)
	if err != nil {
		return 0, 0, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("until: %w", err))
	}
	return f.UnixMilli(), u.UnixMilli(), nil
}

// renderTime reads a render time: a Unix time in seconds, milliseconds,
// microseconds or nanoseconds (told apart by size, as Pyroscope does), RFC
// 3339, or now, now-1h, now-7d.
func renderTime(v string, def, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return def, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		switch {
		case n >= 1e17:
			return time.Unix(0, n), nil
		case n >= 1e14:
			return time.UnixMicro(n), nil
		case n >= 1e11:
			return time.UnixMilli(n), nil
		}
		return time.Unix(n, 0), nil
	}
	return query.ParseTime(v, now)
}

// metadata is how Pyroscope's UI reads a profile type's values: CPU
// nanoseconds as samples at 1e9 per second, bytes as bytes, counts by
// what they count.
func metadata(pt query.ProfileType, format string) renderMetadata {
	m := renderMetadata{Format: format, Name: pt.SampleType, SampleRate: 100}
	switch {
	case pt.SampleUnit == "nanoseconds":
		m.Units, m.SampleRate = "samples", 1_000_000_000
	case pt.SampleUnit == "bytes":
		m.Units = "bytes"
	case strings.Contains(pt.SampleType, "goroutine"):
		m.Units = "goroutines"
	case strings.Contains(pt.SampleType, "objects"):
		m.Units = "objects"
	}
	return m
}

// newTimeline lays the (ungrouped) series out from the step before from to
// until, zero where there is no point.
func newTimeline(from, to time.Time, step time.Duration, groups []query.SeriesGroup) *timeline {
	sec := int64(step / time.Second)
	start := from.Unix() / sec * sec
	n := max((to.Unix()-start+sec-1)/sec, 0)
	tl := &timeline{StartTime: start, DurationDelta: sec, Samples: make([]float64, n)}
	for _, g := range groups {
		for i, t := range g.Times {
			if k := (t.Unix() - start) / sec; k >= 0 && k < n {
				tl.Samples[k] += g.Values[i]
			}
		}
	}
	return tl
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
