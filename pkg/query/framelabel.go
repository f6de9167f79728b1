package query

import (
	"strconv"
	"strings"
)

// frameRow is one row of framesSQL: a stored frame's naming columns.
type frameRow struct {
	id                                  uint64
	function, system, mappingFile, file string
	line                                uint32
	native                              nativeFrame
	frameType                           string
}

// scanDest are the row's scan destinations, in framesSQL's column order.
func (r *frameRow) scanDest() []any {
	return []any{
		&r.id, &r.function, &r.system, &r.mappingFile, &r.file, &r.line, &r.native.address,
		&r.native.buildID, &r.native.mappingStart, &r.native.mappingOffset, &r.frameType,
	}
}

// symbolized reports whether the frame names a function or a file
// (unsymbolizedSQL is its negation in ClickHouse).
func (r *frameRow) symbolized() bool {
	return r.function != "" || r.system != "" || r.file != ""
}

// resolvable is what resolves an unsymbolized frame from the symbol store:
// its build id, address and mapping placement; ok is false for a frame
// that is symbolized or has no build id.
func (r *frameRow) resolvable() (nativeFrame, bool) {
	if r.symbolized() || r.native.buildID == "" {
		return nativeFrame{}, false
	}
	return r.native, true
}

// label names the frame at function granularity, or at line granularity
// as pprof -lines does: "function file:line" (or "file:line" without a
// function) when the frame has a file and a line, else as at function
// granularity.
func (r *frameRow) label(lines bool) string {
	if lines && r.file != "" && r.line > 0 {
		fn := r.function
		if fn == "" {
			fn = r.system
		}
		return lineLabel(fn, r.file, r.line)
	}
	return frameLabel(r.function, r.system, r.mappingFile, r.file, r.native.address)
}

// frameLabel names a frame as pprof -top does, and exactly as
// frameLabelSQL does in ClickHouse (function filters compare with it): the
// function name, else its system name, else, for unsymbolized code, the
// mapped file's base name in brackets ("[libc.so.6]"), else the file, else
// the address (addressLabel).
func frameLabel(function, system, mappingFile, file string, address uint64) string {
	switch {
	case function != "":
		return function
	case system != "":
		return system
	case mappingFile != "":
		return "[" + baseName(mappingFile) + "]"
	case file != "":
		return file
	}
	return "0x" + strconv.FormatUint(address, 16)
}

// baseName is ClickHouse's basename(): what follows the last slash or
// backslash.
func baseName(path string) string {
	return path[strings.LastIndexAny(path, `/\`)+1:]
}
