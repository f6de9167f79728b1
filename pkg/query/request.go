// Package query answers the datasource's queries from the Flamehouse
// tables: flame graphs, top-functions tables and time series, a trace's
// spans with their profile marks, the spans that cost the most, and the
// executables of a selection with their symbol status. Unsymbolized native
// frames are named at query time from the symbol store (resolve.go).
// Queries follow Grafana Pyroscope's query model (queryType, profileTypeId,
// labelSelector, spanSelector, groupBy, limit, maxNodes) plus traceId, so
// that links built for Pyroscope work unchanged. SQL is built from
// parameters only: user text travels as typed query parameters, never
// inside the SQL.
package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flamehouse/flamehouse/pkg/profiletype"
	"github.com/flamehouse/flamehouse/pkg/query/selector"
)

// Query types.
const (
	TypeProfile = "profile" // a flame graph
	TypeMetrics = "metrics" // time series
	TypeBoth    = "both"    // a flame graph and time series
	TypeTable   = "table"   // top functions
	TypeTraces  = "traces"  // a trace's spans (from the exporter's otel_traces), marked where they have samples
	TypeSpans   = "spans"   // the spans with the most profile value
	TypeDiff    = "diff"    // a diff flame graph: the selection over the range against a baseline
	// TypeExecutables lists the executables (mapped files) of the
	// selection's stacks with their share of samples and symbol status.
	TypeExecutables = "executables"
	// TypeProfiles lists the single profiles of the selection as they came
	// in, each linked to its own flame graph and pprof file.
	TypeProfiles = "profiles"
)

// Granularities of flame graph and table labels (JSON granularity).
const (
	GranularityFunction = "function" // one node per function (pprof's default)
	GranularityLine     = "line"     // one node per function and source line: "function file:line"
)

// Values of a function filter (JSON functionValue).
const (
	FunctionTotal = "total" // the stacks that contain the function
	FunctionSelf  = "self"  // the stacks whose leaf is the function
)

// Limits on what a query may ask for. The exported ones are the query
// editor's too (src/generated/backend.ts, written by go generate
// ./internal/tsgen).
const (
	// DefaultMaxNodes caps a flame graph's nodes when neither the query nor
	// the datasource sets maxNodes.
	DefaultMaxNodes = 16384
	// MaxMaxNodes is the largest maxNodes.
	MaxMaxNodes = 1 << 20
	// MaxGroupBy is the most groupBy labels.
	MaxGroupBy = 8
	// MaxLimit is the largest limit (series, table rows, spans).
	MaxLimit       = 10000
	maxSpanIDs     = 1000
	defaultSeries  = 100
	defaultTopRows = 1000
)

// JSON is a query as Grafana sends it (Pyroscope's model plus traceId).
type JSON struct {
	QueryType     string   `json:"queryType"`
	ProfileTypeID string   `json:"profileTypeId"`
	LabelSelector string   `json:"labelSelector"`
	SpanSelector  []string `json:"spanSelector"`
	TraceID       string   `json:"traceId"`
	GroupBy       []string `json:"groupBy"`
	Limit         *int64   `json:"limit"`
	MaxNodes      *int64   `json:"maxNodes"`
	// IntervalStart (Unix milliseconds, as Grafana's ${__value.time}
	// spells a point's time) and IntervalSeconds narrow the range to one
	// time-series point's interval: a series' flame graph link sets them.
	IntervalStart   string    `json:"intervalStart"`
	IntervalSeconds CountText `json:"intervalSeconds"`
	// SeriesID keeps the samples of one series (a decimal SeriesId, as the
	// profiles query lists it): a single profile's flame graph.
	SeriesID string `json:"seriesId"`
	// Function keeps the stacks through one function (a flame graph label,
	// e.g. regexp.Compile): its total, or with FunctionValue "self" the
	// stacks whose leaf it is.
	Function      string `json:"function"`
	FunctionValue string `json:"functionValue"`
	// Ratio makes time series shares: of the group's total without the
	// function filter, or without a function of all groups' total.
	Ratio bool `json:"ratio"`
	// Left is the baseline of a diff query; the query itself is the right
	// side (the comparison) over the query's range.
	Left *SideJSON `json:"left"`
	// Granularity names flame graph and table nodes by function (default)
	// or by function and line.
	Granularity string `json:"granularity"`
	// BuildID and MappingFile keep the stacks through one executable: a
	// frame of that build id and/or mapped file (exact, as the Executables
	// query lists them). Either may be empty, not both when one is set.
	BuildID     string `json:"buildId"`
	MappingFile string `json:"mappingFile"`
	// HideFrames and CollapseFrames shape flame graphs and tables by frame
	// kind ("kernel", "native": see framekinds.go): a hidden kind's frames
	// are dropped (their samples go to the caller), each run of a
	// collapsed kind's frames becomes one node.
	HideFrames     []string `json:"hideFrames"`
	CollapseFrames []string `json:"collapseFrames"`
	// FocusPath opens a node of a flame graph in place: the labels of the
	// nodes from the root's children down to it (a last "other" stands
	// for its parent, whose folded children it holds). The node's subtree
	// is rendered with a node budget of its own (maxNodes), the rest of
	// the graph as without it.
	FocusPath []string `json:"focusPath"`
}

// SideJSON is the left side of a diff query: its label selector (empty:
// the query's) and time range: the query's shifted back by Offset (a
// Grafana duration, e.g. 0, 1h, 7d), or From and To (Unix milliseconds,
// an RFC 3339 time or a relative time such as now-2d). Without either, the
// query's range when the left side has its own selector, else the
// previous period of the same length.
type SideJSON struct {
	LabelSelector string   `json:"labelSelector"`
	Offset        string   `json:"offset"`
	From          TimeText `json:"from"`
	To            TimeText `json:"to"`
}

// TimeText is a time as JSON gives it: a number (Unix milliseconds) or a
// string.
type TimeText string

// UnmarshalJSON accepts a string or a number.
func (t *TimeText) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = TimeText(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("a time is a string or a number of milliseconds, not %s", truncate(string(b)))
	}
	*t = TimeText(n.String())
	return nil
}

// CountText is a whole number as JSON gives it: a number, or a string of
// one (an interpolated link variable such as ${__data.fields.x}).
type CountText int64

// UnmarshalJSON accepts a number or a string of one.
func (c *CountText) UnmarshalJSON(b []byte) error {
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		v, err := n.Int64()
		*c = CountText(v)
		return err
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a count is a number or a string of one, not %s", truncate(string(b)))
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", truncate(s))
	}
	*c = CountText(v)
	return nil
}

// Request is a validated query over a time range.
type Request struct {
	Type        string
	ProfileType ProfileType
	Matchers    []selector.Matcher
	SpanIDs     []string // lower-case hex, 16 characters
	TraceID     string   // lower-case hex, 32 characters, or ""
	GroupBy     []string
	Limit       int
	MaxNodes    int
	From, To    time.Time
	// Step is the time-series interval.
	Step time.Duration
	// Padding is the datasource's span window padding, which widens span
	// and trace reads.
	Padding time.Duration

	// Function and FunctionSelf filter the stacks by a function (see
	// JSON.Function); Ratio makes time series shares (JSON.Ratio).
	Function     string
	FunctionSelf bool
	Ratio        bool
	// Lines names flame graph and table nodes by function and source line
	// (JSON.Granularity "line").
	Lines bool
	// BuildID and MappingFile keep the stacks through an executable (see
	// JSON.BuildID); both "" without that filter.
	BuildID, MappingFile string
	// HideFrames and CollapseFrames are the frame kinds flame graphs and
	// tables drop or collapse (JSON.HideFrames).
	HideFrames, CollapseFrames FrameKinds
	// FocusPath is the flame graph node opened in place (JSON.FocusPath),
	// its last "other" dropped; nil for none.
	FocusPath []string
	// SeriesID keeps one series' samples (JSON.SeriesID, decimal); "" for
	// every series.
	SeriesID string
	// Left is a diff query's baseline: a profile request over its own
	// selection and range; the diff request is the comparison.
	Left *Request
	// Alert is set for queries of Grafana's alert evaluation, which reads
	// numbers only: time series, or one number per row.
	Alert bool
	// DiffUnscaled keeps a diff's baseline values as they are (see
	// Options.DiffUnscaled).
	DiffUnscaled bool

	// rangeFrom and rangeTo are the time range as sent, before padding:
	// the range of the links the frames carry.
	rangeFrom, rangeTo time.Time
	// traceSpans, when set, keeps only samples whose span is one of the
	// trace's stored spans (see Engine.scopeTrace).
	traceSpans *traceScope
	// details asks the stacks' reads for the frames' details (file, line,
	// mapping, address): a pprof export (Engine.Pprof).
	details bool
}

// ProfileType is a parsed profile type id,
// name:sampleType:sampleUnit:periodType:periodUnit.
type ProfileType struct {
	ID, Name, SampleType, SampleUnit, PeriodType, PeriodUnit string
}

// Gauge reports whether the type's values are snapshots, amounts at the
// profile's time (profiletype.IsGauge): memory in use, goroutines. Its
// time series average each series' snapshots instead of adding them up.
func (pt ProfileType) Gauge() bool { return profiletype.IsGauge(pt.SampleType) }

// ParseProfileType splits a profile type id.
func ParseProfileType(id string) (ProfileType, error) {
	parts := strings.Split(id, ":")
	if len(parts) != 5 || parts[0] == "" || parts[1] == "" {
		return ProfileType{}, fmt.Errorf("profile type %q is not of the form name:sampleType:sampleUnit:periodType:periodUnit", id)
	}
	return ProfileType{ID: id, Name: parts[0], SampleType: parts[1], SampleUnit: parts[2], PeriodType: parts[3], PeriodUnit: parts[4]}, nil
}

var (
	spanIDPattern  = regexp.MustCompile(`^[0-9a-fA-F]{16}$`)
	traceIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)
)

// Options are the datasource-wide defaults a query falls back on.
type Options struct {
	// DefaultProfileType is used when a query names none.
	DefaultProfileType string
	// DefaultMaxNodes is used when a query sets no maxNodes.
	DefaultMaxNodes int
	// SpanPadding widens the time range of span and trace queries.
	SpanPadding time.Duration
	// MinStep is the shortest time-series interval.
	MinStep time.Duration
	// Alert marks queries of Grafana's alert evaluation (Request.Alert).
	Alert bool
	// DiffUnscaled compares a diff's sides as they are: the baseline is not
	// scaled to the comparison's range length (Pyroscope's diff).
	DiffUnscaled bool
	// Now is the time relative times (now-1h) are read at; nil: the clock.
	Now func() time.Time
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// ParseRequest decodes and validates one query. Every problem is reported
// at once.
func ParseRequest(raw []byte, from, to time.Time, interval time.Duration, opts Options) (*Request, error) {
	var q JSON
	if err := json.Unmarshal(raw, &q); err != nil {
		return nil, fmt.Errorf("the query is not valid JSON: %w", err)
	}
	r := &Request{From: from, To: to, Padding: opts.SpanPadding, rangeFrom: from, rangeTo: to, Alert: opts.Alert, DiffUnscaled: opts.DiffUnscaled}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(r.setType(q.QueryType))
	add(r.setProfileType(q.ProfileTypeID, opts.DefaultProfileType))
	if r.Type == TypeTraces && strings.TrimSpace(q.TraceID) == "" {
		add(errors.New("traceId is missing: a traces query reads one trace (32 hex digits)"))
	}
	add(r.setMatchers(q.LabelSelector))
	add(r.setSpans(q.SpanSelector, q.TraceID))
	add(r.setGroupBy(q.GroupBy))
	add(r.setLimits(q.Limit, q.MaxNodes, opts.DefaultMaxNodes))
	add(r.setFunction(q.Function, q.FunctionValue, q.Ratio))
	add(r.setGranularity(q.Granularity))
	add(r.setExecutable(q.BuildID, q.MappingFile))
	add(r.setFrameKinds(q.HideFrames, q.CollapseFrames))
	add(r.setFocusPath(q.FocusPath))
	add(r.setSeries(q.SeriesID))
	add(r.checkProfilesQuery(&q))
	if r.Type == TypeDiff {
		add(r.setLeft(q.Left, opts.now()))
	} else if q.Left != nil {
		add(fmt.Errorf("left is the baseline of a diff query; queryType %q has none", r.Type))
	}
	if !to.After(from) {
		add(fmt.Errorf("the time range is empty: %s is not after %s", to.Format(time.RFC3339), from.Format(time.RFC3339)))
	} else {
		add(r.setInterval(q.IntervalStart, int64(q.IntervalSeconds)))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(r.SpanIDs) > 0 || r.TraceID != "" {
		r.From, r.To = r.From.Add(-opts.SpanPadding), r.To.Add(opts.SpanPadding)
	}
	r.Step = stepFor(interval, opts.MinStep, r.To.Sub(r.From))
	return r, nil
}

// maxIntervalSeconds bounds intervalSeconds (a year).
const maxIntervalSeconds = 366 * 24 * 3600

// setInterval narrows the range to [start, start+seconds) within it.
func (r *Request) setInterval(start string, seconds int64) error {
	start = strings.TrimSpace(start)
	if start == "" {
		return nil
	}
	ms, err := strconv.ParseInt(start, 10, 64)
	if err != nil {
		return fmt.Errorf("intervalStart %q is not a time in Unix milliseconds", truncate(start))
	}
	if seconds <= 0 || seconds > maxIntervalSeconds {
		return fmt.Errorf("intervalSeconds %d must be between 1 and %d", seconds, maxIntervalSeconds)
	}
	from := time.UnixMilli(ms)
	to := from.Add(time.Duration(seconds) * time.Second)
	if !to.After(r.From) || !from.Before(r.To) {
		return fmt.Errorf("the interval [%s, %s) is outside the time range", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	r.From, r.To = maxTime(r.From, from), minTime(r.To, to)
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func (r *Request) setType(t string) error {
	if t == "" {
		t = queryTypes[0].name
	}
	if queryTypeOf(t) == nil {
		names := make([]string, len(queryTypes))
		for i, qt := range queryTypes {
			names[i] = qt.name
		}
		return fmt.Errorf("queryType %q is not one of %s", t, strings.Join(names, ", "))
	}
	r.Type = t
	return nil
}

// setGranularity sets the label granularity of flame graphs and tables.
func (r *Request) setGranularity(g string) error {
	switch strings.TrimSpace(g) {
	case "", GranularityFunction:
	case GranularityLine:
		r.Lines = true
	default:
		return fmt.Errorf("granularity %q is not %q or %q", truncate(g), GranularityFunction, GranularityLine)
	}
	return nil
}

// buildIDPattern is a build id as senders spell them: GNU build ids and
// the eBPF profiler's file ids in hex, Go build ids in base64url parts
// separated by slashes.
var buildIDPattern = regexp.MustCompile(`^[0-9A-Za-z_=+./-]{1,256}$`)

// maxMappingFileLength bounds an executable filter's mapped file name.
const maxMappingFileLength = 4096

// setExecutable sets the executable filter.
func (r *Request) setExecutable(buildID, file string) error {
	buildID, file = strings.TrimSpace(buildID), strings.TrimSpace(file)
	var errs []error
	if buildID != "" && !buildIDPattern.MatchString(buildID) {
		errs = append(errs, fmt.Errorf("buildId %q is not a build id (hex, or a Go build id)", truncate(buildID)))
	}
	if len(file) > maxMappingFileLength {
		errs = append(errs, fmt.Errorf("mappingFile is %d bytes long; at most %d are allowed", len(file), maxMappingFileLength))
	}
	if (buildID != "" || file != "") && (r.Type == TypeTraces || r.Type == TypeSpans || r.Type == TypeExecutables) {
		errs = append(errs, fmt.Errorf("buildId and mappingFile filter flame graphs, tables and time series, not queryType %q", r.Type))
	}
	r.BuildID, r.MappingFile = buildID, file
	return errors.Join(errs...)
}

// setFrameKinds sets the frame kinds flame graphs and tables hide or
// collapse.
func (r *Request) setFrameKinds(hide, collapse []string) error {
	var errs []error
	var err error
	if r.HideFrames, err = parseFrameKinds("hideFrames", hide); err != nil {
		errs = append(errs, err)
	}
	if r.CollapseFrames, err = parseFrameKinds("collapseFrames", collapse); err != nil {
		errs = append(errs, err)
	}
	if both := r.HideFrames & r.CollapseFrames; both != 0 {
		errs = append(errs, fmt.Errorf("frames of a kind are hidden or collapsed, not both: %s", strings.Join(both.Names(), ", ")))
	}
	if (r.HideFrames|r.CollapseFrames) != 0 && (r.Type == TypeTraces || r.Type == TypeSpans || r.Type == TypeExecutables) {
		errs = append(errs, fmt.Errorf("hideFrames and collapseFrames shape flame graphs and tables, not queryType %q", r.Type))
	}
	return errors.Join(errs...)
}

// Bounds of a focus path: its labels, and the bytes of all of them.
const (
	maxFocusLevels = 1024
	maxFocusBytes  = 64 << 10
)

// setFocusPath sets the flame graph node opened in place.
func (r *Request) setFocusPath(path []string) error {
	if len(path) == 0 {
		return nil
	}
	size := 0
	for _, l := range path {
		size += len(l)
	}
	var errs []error
	switch {
	case r.Type != TypeProfile && r.Type != TypeBoth:
		errs = append(errs, fmt.Errorf("focusPath opens a node of a flame graph: queryType profile or both, not %q", r.Type))
	case len(path) > maxFocusLevels:
		errs = append(errs, fmt.Errorf("focusPath has %d labels; at most %d are allowed", len(path), maxFocusLevels))
	case size > maxFocusBytes:
		errs = append(errs, fmt.Errorf("focusPath is %d bytes long; at most %d are allowed", size, maxFocusBytes))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if path[len(path)-1] == otherLabel {
		path = path[:len(path)-1]
	}
	if len(path) > 0 {
		r.FocusPath = path
	}
	return nil
}

// otherLabel is the label of the rows truncation folds a node's smaller
// children into (flame.Tree.Frame).
const otherLabel = "other"

// setSeries sets the series filter.
func (r *Request) setSeries(id string) error {
	id = strings.TrimSpace(id)
	if id == "" {
		return nil
	}
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return fmt.Errorf("seriesId %q is not a series id (a decimal number, as the profiles query lists it)", truncate(id))
	}
	if r.Type == TypeTraces || r.Type == TypeSpans || r.Type == TypeDiff {
		return fmt.Errorf("seriesId keeps one series' samples in flame graphs, tables, series and profiles, not queryType %q", r.Type)
	}
	r.SeriesID = id
	return nil
}

// checkProfilesQuery refuses what a profiles query cannot apply: a
// profile is listed by its resource (service, resource labels, series),
// not by what its samples hold.
func (r *Request) checkProfilesQuery(q *JSON) error {
	if r.Type != TypeProfiles {
		return nil
	}
	var keys []string
	for key, set := range map[string]bool{
		"spanSelector": len(q.SpanSelector) > 0, "traceId": strings.TrimSpace(q.TraceID) != "", "groupBy": len(q.GroupBy) > 0,
		"function": strings.TrimSpace(q.Function) != "", "buildId": strings.TrimSpace(q.BuildID) != "",
		"mappingFile": strings.TrimSpace(q.MappingFile) != "", "hideFrames": len(q.HideFrames) > 0, "collapseFrames": len(q.CollapseFrames) > 0,
	} {
		if set {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	return fmt.Errorf("a profiles query lists profiles by their resource (labelSelector, seriesId) and time; %s apply to their samples: "+
		"open a profile's flame graph to use them", strings.Join(keys, ", "))
}

// shapesFrames reports whether flame graphs and tables hide or collapse
// frames of some kind.
func (r *Request) shapesFrames() bool { return r.HideFrames|r.CollapseFrames != 0 }

// maxFunctionLength bounds a function filter's name.
const maxFunctionLength = 4096

// setFunction sets the function filter and the ratio option.
func (r *Request) setFunction(fn, value string, ratio bool) error {
	var errs []error
	fn = strings.TrimSpace(fn)
	switch {
	case len(fn) > maxFunctionLength:
		errs = append(errs, fmt.Errorf("function is %d bytes long; at most %d are allowed", len(fn), maxFunctionLength))
	case fn != "" && (r.Type == TypeTraces || r.Type == TypeSpans):
		errs = append(errs, fmt.Errorf("function filters flame graphs, tables and time series, not queryType %q", r.Type))
	}
	switch value {
	case "", FunctionTotal:
	case FunctionSelf:
		r.FunctionSelf = true
	default:
		errs = append(errs, fmt.Errorf("functionValue %q is not %q or %q", truncate(value), FunctionTotal, FunctionSelf))
	}
	if ratio && r.Type != TypeMetrics && r.Type != TypeBoth {
		errs = append(errs, fmt.Errorf("ratio makes time series shares: it applies to queryType metrics (or both), not %q", r.Type))
	}
	r.Function, r.Ratio = fn, ratio
	return errors.Join(errs...)
}

// maxOffset bounds a diff's offset (ten years).
const maxOffset = 10 * 366 * 24 * time.Hour

// setLeft builds a diff query's baseline: its selector (the query's when
// empty) over its own range. Called before the range is checked.
func (r *Request) setLeft(side *SideJSON, now time.Time) error {
	if side == nil {
		side = &SideJSON{}
	}
	var errs []error
	if len(r.SpanIDs) > 0 || r.TraceID != "" {
		errs = append(errs, errors.New("spanSelector and traceId do not apply to diff queries: compare selections and time ranges"))
	}
	left := &Request{
		Type: TypeProfile, ProfileType: r.ProfileType, Matchers: r.Matchers, MaxNodes: r.MaxNodes, Limit: r.Limit,
		Function: r.Function, FunctionSelf: r.FunctionSelf, Lines: r.Lines, BuildID: r.BuildID, MappingFile: r.MappingFile,
		HideFrames: r.HideFrames, CollapseFrames: r.CollapseFrames,
	}
	if strings.TrimSpace(side.LabelSelector) != "" {
		ms, err := selector.Parse(side.LabelSelector)
		if err != nil {
			errs = append(errs, fmt.Errorf("left labelSelector: %w", err))
		}
		left.Matchers = ms
	}
	from, to, err := side.timeRange(r.From, r.To, now, strings.TrimSpace(side.LabelSelector) != "")
	if err != nil {
		errs = append(errs, err)
	} else if !to.After(from) {
		errs = append(errs, fmt.Errorf("the left time range is empty: %s is not after %s", to.Format(time.RFC3339), from.Format(time.RFC3339)))
	}
	left.From, left.To, left.rangeFrom, left.rangeTo = from, to, from, to
	r.Left = left
	return errors.Join(errs...)
}

// timeRange is the left side's range: explicit, or the right side's
// shifted back by the offset. Without either it is the right side's range
// when the left has a selector of its own (selections are compared), else
// the previous period of the same length (times are compared).
func (s *SideJSON) timeRange(rightFrom, rightTo, now time.Time, ownSelector bool) (from, to time.Time, err error) {
	explicit := strings.TrimSpace(string(s.From)) != "" || strings.TrimSpace(string(s.To)) != ""
	offset := strings.TrimSpace(s.Offset)
	switch {
	case explicit && offset != "":
		return from, to, errors.New("left: set either offset or from and to, not both")
	case explicit:
		if strings.TrimSpace(string(s.From)) == "" || strings.TrimSpace(string(s.To)) == "" {
			return from, to, errors.New("left: from and to go together")
		}
		if from, err = ParseTime(string(s.From), now); err != nil {
			return from, to, fmt.Errorf("left from: %w", err)
		}
		if to, err = ParseTime(string(s.To), now); err != nil {
			return from, to, fmt.Errorf("left to: %w", err)
		}
		return from, to, nil
	case offset == "" && ownSelector:
		return rightFrom, rightTo, nil
	case offset == "":
		d := rightTo.Sub(rightFrom)
		return rightFrom.Add(-d), rightTo.Add(-d), nil
	}
	d, err := parseDuration(offset)
	if err != nil || d < 0 || d > maxOffset {
		return from, to, fmt.Errorf("left offset %q is not a duration such as 0, 1h, 1d or 7d (at most 10 years)", truncate(offset))
	}
	return rightFrom.Add(-d), rightTo.Add(-d), nil
}

// setProfileType sets the query's profile type, else the default. A traces
// query may have neither: its spans then carry no profile marks.
func (r *Request) setProfileType(id, def string) error {
	if id == "" {
		id = def
	}
	if id == "" && r.Type == TypeTraces {
		return nil
	}
	if id == "" {
		return errors.New("profileTypeId is missing: choose a profile type")
	}
	pt, err := ParseProfileType(id)
	r.ProfileType = pt
	return err
}

func (r *Request) setMatchers(sel string) error {
	ms, err := selector.Parse(sel)
	r.Matchers = ms
	return err
}

func (r *Request) setSpans(spans []string, traceID string) error {
	var errs []error
	if len(spans) > maxSpanIDs {
		errs = append(errs, fmt.Errorf("spanSelector has %d span ids; at most %d are allowed", len(spans), maxSpanIDs))
		spans = spans[:maxSpanIDs]
	}
	for _, s := range spans {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			continue // an unresolved link variable
		case !spanIDPattern.MatchString(s):
			errs = append(errs, fmt.Errorf("span id %q is not 16 hex digits", truncate(s)))
		default:
			r.SpanIDs = append(r.SpanIDs, strings.ToLower(s))
		}
	}
	if traceID = strings.TrimSpace(traceID); traceID != "" {
		if !traceIDPattern.MatchString(traceID) {
			errs = append(errs, fmt.Errorf("trace id %q is not 32 hex digits", truncate(traceID)))
		} else {
			r.TraceID = strings.ToLower(traceID)
		}
	}
	return errors.Join(errs...)
}

func (r *Request) setGroupBy(labels []string) error {
	if len(labels) > MaxGroupBy {
		return fmt.Errorf("groupBy has %d labels; at most %d are allowed", len(labels), MaxGroupBy)
	}
	for _, l := range labels {
		if l == "" || len(l) > 256 {
			return fmt.Errorf("groupBy label %q must be 1 to 256 characters", truncate(l))
		}
	}
	r.GroupBy = labels
	return nil
}

func (r *Request) setLimits(limit, maxNodes *int64, defMaxNodes int) error {
	var errs []error
	switch {
	case limit == nil || *limit == 0:
		r.Limit = defaultSeries
		if r.Type == TypeTable || r.Type == TypeExecutables {
			r.Limit = defaultTopRows
		}
	case *limit < 0 || *limit > MaxLimit:
		errs = append(errs, fmt.Errorf("limit %d must be between 1 and %d", *limit, MaxLimit))
	default:
		r.Limit = int(*limit)
	}
	if defMaxNodes <= 0 {
		defMaxNodes = DefaultMaxNodes
	}
	switch {
	case maxNodes == nil || *maxNodes == 0:
		r.MaxNodes = defMaxNodes
	case *maxNodes < 0 || *maxNodes > MaxMaxNodes:
		errs = append(errs, fmt.Errorf("maxNodes %d must be between 1 and %d", *maxNodes, MaxMaxNodes))
	default:
		r.MaxNodes = int(*maxNodes)
	}
	return errors.Join(errs...)
}

// stepFor is the time-series interval: Grafana's, at least minStep, at
// least a second, and no more than 11,000 points over the range.
func stepFor(interval, minStep, span time.Duration) time.Duration {
	step := max(interval, minStep, time.Second)
	if minimum := span / 11000; step < minimum {
		step = minimum
	}
	return (step + time.Second - 1).Truncate(time.Second) // whole seconds, rounded up
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// ParseTime reads a time: Unix milliseconds, RFC 3339, or Grafana's
// relative now, now-<duration> and now+<duration>.
func ParseTime(text string, now time.Time) (time.Time, error) {
	text = strings.TrimSpace(text)
	if ms, err := strconv.ParseInt(text, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, text); err == nil {
		return t, nil
	}
	if rest, ok := strings.CutPrefix(text, "now"); ok {
		if rest == "" {
			return now, nil
		}
		if d, err := parseDuration(rest[1:]); err == nil {
			switch rest[0] {
			case '-':
				return now.Add(-d), nil
			case '+':
				return now.Add(d), nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time (Unix milliseconds, RFC 3339, or now-1h)", truncate(text))
}

// durationPattern is a Grafana duration with a unit Go does not know:
// days, weeks, years (365 days).
var durationPattern = regexp.MustCompile(`^(\d+)(d|w|y)$`)

// parseDuration reads a Grafana duration: Go's (90s, 1h30m, 0) or a
// number of days, weeks or years (7d, 2w, 1y).
func parseDuration(text string) (time.Duration, error) {
	if m := durationPattern.FindStringSubmatch(text); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || n > 100000 {
			return 0, fmt.Errorf("duration %q is too long", text)
		}
		unit := map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour}[m[2]]
		return time.Duration(n) * unit, nil
	}
	return time.ParseDuration(text)
}
