// Package query answers the datasource's queries from the Flamehouse
// tables: flame graphs, top-functions tables and time series, a trace's
// spans with their profile marks, and the spans that cost the most.
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
)

// Limits on what a query may ask for.
const (
	DefaultMaxNodes = 16384
	MaxMaxNodes     = 1 << 20
	maxSpanIDs      = 1000
	maxGroupBy      = 8
	maxSeries       = 10000
	defaultSeries   = 100
	defaultTopRows  = 1000
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
	IntervalStart   string `json:"intervalStart"`
	IntervalSeconds int64  `json:"intervalSeconds"`
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

	// rangeFrom and rangeTo are the time range as sent, before padding:
	// the range of the links the frames carry.
	rangeFrom, rangeTo time.Time
	// traceSpans, when set, keeps only samples whose span is one of the
	// trace's stored spans (see Engine.scopeTrace).
	traceSpans *traceScope
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
}

// ParseRequest decodes and validates one query. Every problem is reported
// at once.
func ParseRequest(raw []byte, from, to time.Time, interval time.Duration, opts Options) (*Request, error) {
	var q JSON
	if err := json.Unmarshal(raw, &q); err != nil {
		return nil, fmt.Errorf("the query is not valid JSON: %w", err)
	}
	r := &Request{From: from, To: to, Padding: opts.SpanPadding, rangeFrom: from, rangeTo: to}
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
	if !to.After(from) {
		add(fmt.Errorf("the time range is empty: %s is not after %s", to.Format(time.RFC3339), from.Format(time.RFC3339)))
	} else {
		add(r.setInterval(q.IntervalStart, q.IntervalSeconds))
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
	switch t {
	case "":
		r.Type = TypeProfile
	case TypeProfile, TypeMetrics, TypeBoth, TypeTable, TypeTraces, TypeSpans:
		r.Type = t
	default:
		return fmt.Errorf("queryType %q is not one of profile, metrics, both, table, traces, spans", t)
	}
	return nil
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
	if len(labels) > maxGroupBy {
		return fmt.Errorf("groupBy has %d labels; at most %d are allowed", len(labels), maxGroupBy)
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
		if r.Type == TypeTable {
			r.Limit = defaultTopRows
		}
	case *limit < 0 || *limit > maxSeries:
		errs = append(errs, fmt.Errorf("limit %d must be between 1 and %d", *limit, maxSeries))
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
