package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
	"github.com/flamehouse/flamehouse/pkg/query/selector"
)

// side is one side of a diff: its stacks and their frames' names.
type side struct {
	stacks []stackValue
	names  *frameNames
}

// diff answers a diff query: the baseline (r.Left) and the comparison (r
// itself, as a profile request) are summed per stack concurrently, each
// through a layout of its own, and merged into one diff tree. The left
// side's values are scaled by the ratio of the ranges' lengths (right /
// left), rounded per stack, so that both sides are amounts over the right
// side's length: ranges of different lengths compare fairly, and with
// equal lengths the values are exact.
func (e *Engine) diff(ctx context.Context, r *Request) (*data.Frame, error) {
	right := *r
	right.Type, right.Left, right.GroupBy = TypeProfile, nil, nil
	var sides [2]side
	var errs [2]error
	var wg sync.WaitGroup
	for i, req := range []*Request{r.Left, &right} {
		wg.Go(func() {
			sides[i].stacks, sides[i].names, errs[i] = e.layout().stacks(ctx, req)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s side: %w", [2]string{"left", "right"}[i], err)
		}
	}
	scale := diffScale(r)
	names := flame.NewNames(0)
	tree := flame.NewDiffTree(names)
	if e.Schema == SchemaOTel {
		addSides(tree, names, sides, scale, shapeOf(r))
	} else {
		addMerged(tree, names, sides, scale, shapeOf(r))
	}
	frame := tree.Frame(r.MaxNodes, flame.Unit(r.ProfileType.SampleUnit))
	frame.Meta.Custom = diffMeta(r, scale)
	if scale != 1 {
		frame.Meta.Notices = append(frame.Meta.Notices, data.Notice{
			Severity: data.NoticeSeverityInfo,
			Text: fmt.Sprintf("The baseline (%s) is scaled by %.4g to the comparison's range (%s): both sides show amounts over %s.",
				r.Left.rangeTo.Sub(r.Left.rangeFrom), scale, r.rangeTo.Sub(r.rangeFrom), r.rangeTo.Sub(r.rangeFrom)),
		})
	}
	return frame, nil
}

// addSides adds each side's stacks, resolved with that side's labels (ids
// local to one answer: the exporter's table).
func addSides(tree *flame.DiffTree, names *flame.Names, sides [2]side, scale float64, shape pathShape) {
	path := make([]int32, 0, 64)
	for i, s := range sides {
		p := newPather(names, shape, s.names)
		for _, st := range s.stacks {
			var keep bool
			if path, keep = p.idPath(path, st.frames); !keep {
				continue
			}
			if i == 0 {
				tree.Add(path, scaleValue(st.value, scale), 0)
			} else {
				tree.Add(path, 0, st.value)
			}
		}
	}
}

// addMerged adds each stack once with both sides' values: on Flamehouse's
// tables stack and frame ids mean the same on both sides, so a stack seen
// on both is resolved and replayed once.
func addMerged(tree *flame.DiffTree, names *flame.Names, sides [2]side, scale float64, shape pathShape) {
	type entry struct {
		frames      []uint64
		left, right int64
	}
	entries := make([]entry, 0, len(sides[0].stacks)+len(sides[1].stacks)/4)
	index := make(map[uint64]int, len(sides[0].stacks))
	for _, st := range sides[0].stacks {
		index[st.id] = len(entries)
		entries = append(entries, entry{frames: st.frames, left: scaleValue(st.value, scale)})
	}
	for _, st := range sides[1].stacks {
		if i, ok := index[st.id]; ok {
			entries[i].right += st.value
			continue
		}
		entries = append(entries, entry{frames: st.frames, right: st.value})
	}
	p := newPather(names, shape, sides[0].names, sides[1].names)
	path := make([]int32, 0, 64)
	for _, en := range entries {
		var keep bool
		if path, keep = p.idPath(path, en.frames); keep {
			tree.Add(path, en.left, en.right)
		}
	}
}

// diffScale is the factor of the left side's values: the right range's
// length over the left's (1 when the request keeps them unscaled).
func diffScale(r *Request) float64 {
	left, right := r.Left.rangeTo.Sub(r.Left.rangeFrom), r.rangeTo.Sub(r.rangeFrom)
	if left <= 0 || left == right || r.DiffUnscaled {
		return 1
	}
	return float64(right) / float64(left)
}

func scaleValue(v int64, scale float64) int64 {
	if scale == 1 {
		return v
	}
	return int64(math.Round(float64(v) * scale))
}

// DiffSide describes a side of a diff answer (the frame's Meta.Custom).
type DiffSide struct {
	LabelSelector string    `json:"labelSelector"`
	From          time.Time `json:"from"`
	To            time.Time `json:"to"`
}

// DiffInfo is a diff frame's Meta.Custom: both sides and the left side's
// scale.
type DiffInfo struct {
	Left  DiffSide `json:"left"`
	Right DiffSide `json:"right"`
	// LeftScale multiplies the left side's values (see Engine.diff).
	LeftScale float64 `json:"leftScale"`
}

func diffMeta(r *Request, scale float64) map[string]any {
	return map[string]any{"flamehouse": "diff", "diff": DiffInfo{
		Left:      DiffSide{LabelSelector: selector.Format(r.Left.Matchers), From: r.Left.rangeFrom.UTC(), To: r.Left.rangeTo.UTC()},
		Right:     DiffSide{LabelSelector: selector.Format(r.Matchers), From: r.rangeFrom.UTC(), To: r.rangeTo.UTC()},
		LeftScale: scale,
	}}
}

// ErrNotForAlerts is returned for queries of a type alert rules cannot
// evaluate (they read numbers).
var ErrNotForAlerts = errors.New("not a numeric query")

// notForAlerts explains which query types alert rules can use.
func notForAlerts(qt *queryType) error {
	return fmt.Errorf("%w: queryType %q answers %s, which alert rules cannot evaluate; use queryType %q (time series, "+
		"with groupBy, function and ratio) or %q (one number per function)", ErrNotForAlerts, qt.name, qt.answers, TypeMetrics, TypeTable)
}

// alertTableFrame renders the top functions for an alert rule: one number
// per function (the function's self value), each row an alert instance
// labelled function=<name>, in the data plane's numeric long format.
func alertTableFrame(fns []flame.Function, unit string) *data.Frame {
	labels := make([]string, len(fns))
	values := make([]float64, len(fns))
	for i, f := range fns {
		labels[i], values[i] = f.Label, float64(f.Self)
	}
	frame := data.NewFrame("functions",
		data.NewField("function", nil, labels),
		data.NewField("self", nil, values).SetConfig(&data.FieldConfig{Unit: unit}),
	)
	return frame.SetMeta(&data.FrameMeta{Type: data.FrameTypeNumericLong, TypeVersion: data.FrameTypeVersion{0, 1}})
}
