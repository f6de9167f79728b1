package query

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/flamehouse/flamehouse/pkg/query/flame"
)

// Frame kinds in flame graphs and tables. Frames carry the
// profile.frame.type the sender gave them (the eBPF profiler: native,
// kernel, go, cpython, jvm, …; stored in the frames table's FrameType).
// Two kinds are not the program's own code, and answers mark them in the
// label, the one place Grafana's flame graph and top table show (its
// flame graph colours by a package name parsed from the label or by value,
// and reads no other field):
//
//   - kernel frames: "do_syscall_64 [kernel]";
//   - native frames of a stack that also runs interpreted or VM code
//     (Python, Java, Ruby, PHP, Perl, Node.js, .NET, Erlang, LuaJIT): the
//     interpreter's own code between and below the user's functions,
//     "_PyEval_EvalFrameDefault [native]". Native frames of other stacks
//     (C, C++, Rust, Go programs) are the program's code: never marked.
//
// Labels that name no function ("[libpython3.11.so.1.0]", the mapped
// file of an unnamed frame) say what they are already and stay as they
// are. A query may hide a kind (its frames are dropped: their samples go
// to the nearest frame toward the root that stays, the root when none
// does, so totals stay exact) or collapse it (each run of consecutive
// frames of the kind becomes one node, "[kernel]" or "[native]").

// Frame kinds a query can name (JSON hideFrames, collapseFrames).
const (
	FramesKernel = "kernel"
	FramesNative = "native"
)

// frameKind is what a frame is to the answer.
type frameKind uint8

const (
	// kindCode is the program's own code (and frames of no type).
	kindCode frameKind = iota
	// kindKernel is a kernel frame.
	kindKernel
	// kindNative is a native frame: the program's code, unless its
	// stack has interpreted frames.
	kindNative
	// kindInterpreted is a frame of an interpreter or VM's code.
	kindInterpreted
)

// interpretedTypes are the frame types of interpreted or VM code (the
// OpenTelemetry semantic conventions' values and the eBPF profiler's).
var interpretedTypes = map[string]bool{
	"cpython": true, "jvm": true, "php": true, "ruby": true, "perl": true, "v8js": true, "dotnet": true, "beam": true, "luajit": true,
}

// kindOfType is the kind of a frame of a profile.frame.type.
func kindOfType(frameType string) frameKind {
	switch {
	case frameType == FramesKernel:
		return kindKernel
	case frameType == FramesNative:
		return kindNative
	case interpretedTypes[frameType]:
		return kindInterpreted
	}
	return kindCode
}

// kindNames are the names of the kinds a query can hide or collapse.
var kindNames = [...]string{kindKernel: FramesKernel, kindNative: FramesNative}

// FrameKinds is a set of frame kinds (FramesKernel, FramesNative).
type FrameKinds uint8

func (k FrameKinds) has(kind frameKind) bool { return k&(1<<kind) != 0 }

// Names lists the set's kinds.
func (k FrameKinds) Names() []string {
	var out []string
	for kind, name := range kindNames {
		if name != "" && k.has(frameKind(kind)) {
			out = append(out, name)
		}
	}
	return out
}

// parseFrameKinds reads a list of kind names (JSON key key).
func parseFrameKinds(key string, values []string) (FrameKinds, error) {
	var k FrameKinds
	var errs []error
	for _, v := range values {
		v = strings.TrimSpace(v)
		i := slices.Index(kindNames[:], v)
		if v == "" || i < 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a frame kind (%s or %s)", key, truncate(v), FramesKernel, FramesNative))
			continue
		}
		k |= 1 << i
	}
	return k, errors.Join(errs...)
}

// markLabel is the label of a frame of a marked kind: "name [kernel]".
// Labels that name no function ("[libc.so.6]") stay as they are.
func markLabel(label string, kind frameKind) string {
	if isBracketed(label) || label == "" {
		return label
	}
	return label + " [" + kindNames[kind] + "]"
}

// collapsedLabel is the label of a collapsed run of a kind: "[kernel]".
func collapsedLabel(kind frameKind) string { return "[" + kindNames[kind] + "]" }

func isBracketed(label string) bool {
	return strings.HasPrefix(label, "[") && strings.HasSuffix(label, "]")
}

// markedFunction reads a function filter that names a marked frame
// ("do_syscall_64 [kernel]": the label as stored and its kind) or a
// collapsed run ("[kernel]": the kind, whole). ok is false for other
// labels.
func markedFunction(fn string) (label string, kind frameKind, whole, ok bool) {
	for k, name := range kindNames {
		if name == "" {
			continue
		}
		kind = frameKind(k)
		if fn == collapsedLabel(kind) {
			return "", kind, true, true
		}
		if base, found := strings.CutSuffix(fn, " ["+name+"]"); found && base != "" && !isBracketed(base) {
			return base, kind, false, true
		}
	}
	return "", kindCode, false, false
}

// frameTypeOfKind is the stored profile.frame.type of a kind's frames.
func frameTypeOfKind(kind frameKind) string { return kindNames[kind] }

// kindView turns stacks' frames into label paths with their kinds applied:
// native frames of stacks with interpreted frames marked, hidden kinds
// dropped, collapsed kinds folded into one node per run. (Kernel frames
// are marked when their labels are interned: nameIDs.add.) Stacks come as
// dense frame numbers (the flame graph) or frame ids (the diff).
type kindView struct {
	names          *flame.Names
	ids            *nameIDs
	hide, collapse FrameKinds
	collapsed      [len(kindNames)]int32
	// interpreted: the answer has interpreted frames, so a stack's native
	// frames are marked when it has some too.
	interpreted bool
	// marked are the entries (as nameIDs holds them) of native frames'
	// marked labels, by their plain entry.
	marked map[int32]int32
	// kinds are the frames' kinds by id (for stacks of frame ids).
	kinds map[uint64]frameKind
	// markedDense are the marked entries by dense frame number (for
	// stacks of dense numbers, after denseKinds), notMarked until needed.
	markedDense []int32
}

// newKindView returns the view of an answer's frames with their kinds
// (by frame id: only frames that are not kindCode), or nil when the kinds
// change nothing: no interpreted frames with native ones to mark, no frame
// of a hidden or collapsed kind.
func newKindView(names *flame.Names, ids *nameIDs, kinds map[uint64]frameKind, hide, collapse FrameKinds) *kindView {
	var present FrameKinds
	for _, k := range kinds {
		present |= 1 << k
	}
	interpreted := present.has(kindInterpreted) && present.has(kindNative)
	if !interpreted && present&(hide|collapse) == 0 {
		return nil
	}
	v := &kindView{names: names, ids: ids, hide: hide, collapse: collapse, interpreted: interpreted, kinds: kinds}
	for k := range kindNames {
		if kindNames[k] != "" {
			v.collapsed[k] = names.ID(collapsedLabel(frameKind(k)))
		}
	}
	return v
}

// denseKinds are the kinds of d's frame numbers; it also prepares the
// marked entries of native frames by dense number (markedDense).
func (v *kindView) denseKinds(d *denseFrames) []frameKind {
	out := make([]frameKind, len(d.ids))
	v.markedDense = make([]int32, len(d.ids))
	for i, id := range d.ids {
		out[i] = v.kinds[id]
		v.markedDense[i] = notMarked
	}
	return out
}

// notMarked is a markedDense entry not computed yet.
const notMarked = math.MinInt32

// appendDense appends the label ids of a stack of dense frame numbers:
// appendFrame's work, with the common cases (a frame of the program's
// code, a marked native frame) inline and the marked entries by number.
func (v *kindView) appendDense(path []int32, frames []int32, nameOf []int32, kindOf []frameKind) []int32 {
	mixed := false
	if v.interpreted {
		for _, k := range frames {
			if kindOf[k] == kindInterpreted {
				mixed = true
				break
			}
		}
	}
	last := kindCode
	for _, k := range frames {
		kind := kindOf[k]
		e := nameOf[k]
		switch {
		case kind == kindCode || kind == kindInterpreted || (kind == kindNative && !mixed):
			last = kindCode
		case kind == kindNative && !v.hide.has(kindNative) && !v.collapse.has(kindNative):
			if e = v.markedDense[k]; e == notMarked {
				e = v.markedNative(nameOf[k])
				v.markedDense[k] = e
			}
			last = kindCode
		default:
			path, last = v.appendFrame(path, e, kind, mixed, last)
			continue
		}
		if e >= 0 {
			path = append(path, e)
		} else {
			path = append(path, v.ids.multi[-e-1]...)
		}
	}
	return path
}

// appendIDs appends the label ids of a stack of frame ids; a frame that
// is not stored shows as "unknown".
func (v *kindView) appendIDs(path []int32, frames []uint64) []int32 {
	mixed := v.mixed(frames)
	last := kindCode
	for _, f := range frames {
		e, ok := v.ids.ids[f]
		if !ok {
			e = v.names.ID("unknown")
		}
		path, last = v.appendFrame(path, e, v.kinds[f], mixed, last)
	}
	return path
}

// mixed reports whether a stack of frame ids has interpreted frames next
// to native ones, whose native frames are then marked.
func (v *kindView) mixed(frames []uint64) bool {
	if !v.interpreted {
		return false
	}
	for _, f := range frames {
		if v.kinds[f] == kindInterpreted {
			return true
		}
	}
	return false
}

// frameAction is what a shaped answer makes of one frame of a stack.
type frameAction uint8

const (
	// actionShow shows the frame under its label (a kernel frame's label
	// carries its mark already: nameIDs.add).
	actionShow frameAction = iota
	// actionMarkNative shows the frame under its native-marked label.
	actionMarkNative
	// actionSkip shows nothing: the frame is hidden, or part of a
	// collapsed run that is shown already.
	actionSkip
	// actionCollapse shows the node of a collapsed run of the frame's kind.
	actionCollapse
)

// act decides what becomes of one frame of a kind, in a stack that is
// mixed or not, after a run of the kind last (kindCode: no collapsed run);
// it returns the action, the frame's kind as the answer sees it and the
// kind of the run the frame ends in. Flame graphs, tables, diffs and pprof
// exports shape frames with it.
func (v *kindView) act(kind frameKind, mixed bool, last frameKind) (frameAction, frameKind, frameKind) {
	if kind == kindInterpreted || (kind == kindNative && !mixed) {
		kind = kindCode
	}
	switch {
	case kind == kindCode:
		return actionShow, kind, kindCode
	case v.hide.has(kind):
		return actionSkip, kind, last
	case v.collapse.has(kind):
		if last == kind {
			return actionSkip, kind, last
		}
		return actionCollapse, kind, kind
	case kind == kindNative:
		return actionMarkNative, kind, kindCode
	}
	return actionShow, kind, kindCode // a kernel frame, marked already
}

// appendFrame appends one frame (its nameIDs entry and kind) after a run
// of the kind last (kindCode: no collapsed run), and returns the kind of
// the run it ends in.
func (v *kindView) appendFrame(path []int32, e int32, kind frameKind, mixed bool, last frameKind) ([]int32, frameKind) {
	action, kind, last := v.act(kind, mixed, last)
	switch action {
	case actionSkip:
		return path, last
	case actionCollapse:
		return append(path, v.collapsed[kind]), last
	case actionMarkNative:
		return v.ids.appendEntry(path, v.markedNative(e)), last
	}
	return v.ids.appendEntry(path, e), last
}

// markedNative is the entry of a native frame's marked label(s).
func (v *kindView) markedNative(e int32) int32 {
	if m, ok := v.marked[e]; ok {
		return m
	}
	if v.marked == nil {
		v.marked = map[int32]int32{}
	}
	var m int32
	if e >= 0 {
		m = v.names.ID(markLabel(v.names.Label(e), kindNative))
	} else {
		levels := v.ids.multi[-e-1]
		marked := make([]int32, len(levels))
		for i, l := range levels {
			marked[i] = v.names.ID(markLabel(v.names.Label(l), kindNative))
		}
		m = -int32(len(v.ids.multi)) - 1
		v.ids.multi = append(v.ids.multi, marked)
	}
	v.marked[e] = m
	return m
}

// appendEntry appends the label id(s) of a nameIDs entry.
func (n *nameIDs) appendEntry(path []int32, e int32) []int32 {
	if e < 0 {
		return append(path, n.multi[-e-1]...)
	}
	return append(path, e)
}
