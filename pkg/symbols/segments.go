package symbols

// UsableSegments reports whether PT_LOAD segments can place a mapping's
// addresses (the address rule, VA): there are some, and none has a zero
// file size, as the code segments of a separate debug file have
// (objcopy --only-keep-debug, and the debug files distributions and
// debuginfod serve). Put combines such a file with the executable of the
// same build id, whose segments are usable.
func UsableSegments(segs []Segment) bool {
	if len(segs) == 0 {
		return false
	}
	for _, sg := range segs {
		if sg.Filesz == 0 {
			return false
		}
	}
	return true
}
