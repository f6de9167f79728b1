package symbols

import (
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// pclntabSection returns a Go binary's .gopclntab (PIE and external
// linking put it in .data.rel.ro.gopclntab), nil when there is none.
func (x *extractor) pclntabSection() *elf.Section {
	for _, name := range []string{".gopclntab", ".data.rel.ro.gopclntab"} {
		if s := x.f.Section(name); s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0 {
			return s
		}
	}
	return nil
}

// goTable reads a Go binary's function and line table with debug/gosym;
// nil when the file has none or it cannot be read (with a warning).
func (x *extractor) goTable() *gosym.Table {
	sec := x.pclntabSection()
	if sec == nil {
		return nil
	}
	data, err := sec.Data()
	if err != nil {
		x.warn("Go pclntab skipped: %v", err)
		return nil
	}
	var symtab []byte
	if s := x.f.Section(".gosymtab"); s != nil && s.Type != elf.SHT_NOBITS {
		symtab, _ = s.Data()
	}
	text := x.goTextStart()
	tab, err := gosym.NewTable(symtab, gosym.NewLineTable(data, text))
	if err != nil {
		x.warn("Go pclntab skipped: %v", err)
		return nil
	}
	// Another goroutine reads the table through a copy of its own (a
	// gosym.Table caches strings without a lock).
	x.newGoTable = func() (*gosym.Table, error) { return gosym.NewTable(symtab, gosym.NewLineTable(data, text)) }
	return tab
}

// goFuncRanges returns one range per Go function, named as the Go tools
// name it, without file or line: cheap, for naming the physical function.
func (x *extractor) goFuncRanges(tab *gosym.Table) ([]Range, error) {
	out := make([]Range, 0, len(tab.Funcs))
	for i := range tab.Funcs {
		fn := &tab.Funcs[i]
		if fn.End <= fn.Entry || !x.inCode(fn.Entry, fn.End) {
			continue
		}
		frames := x.frames.alloc(1)
		frames[0] = Frame{Function: x.names.function(fn.Name)}
		out = append(out, Range{Start: fn.Entry, End: fn.End, Frames: frames})
		if err := x.checkRanges(len(out)); err != nil {
			return nil, err
		}
	}
	return normalize(out), nil
}

// goLineRanges returns the functions' ranges with lines: one level per
// range, the function and the innermost line, as go tool addr2line
// reports them (debug/gosym exposes no inline tree; DWARF, when present,
// gives the inline stacks). Only the addresses no range of skip covers
// are read (skip sorted and non-overlapping; nil reads all). debug/gosym
// answers address by address, each from the function's start, which is
// slow on large binaries: the functions are shared out among goroutines,
// each with its own copy of the table.
func (x *extractor) goLineRanges(tab *gosym.Table, skip []Range) ([]Range, error) {
	n := (len(tab.Funcs) + goLineChunk - 1) / goLineChunk
	results := make([][]lineRun, n)
	workers := min(runtime.GOMAXPROCS(0), maxGoLineWorkers, n)
	if workers <= 1 || x.newGoTable == nil {
		for c := range n {
			results[c] = x.lineRuns(tab, skip, c)
		}
	} else if err := x.lineRunsConcurrently(tab, skip, workers, results); err != nil {
		return nil, err
	}
	var out []Range
	for _, runs := range results {
		for _, r := range runs {
			frames := x.frames.alloc(1)
			frames[0] = Frame{Function: x.names.function(tab.Funcs[r.fn].Name), File: x.names.intern(r.file), Line: clampLine(r.line)}
			out = append(out, Range{Start: r.start, End: r.end, Frames: frames})
			if err := x.checkRanges(len(out)); err != nil {
				return nil, err
			}
		}
	}
	return normalize(out), nil
}

// goLineChunk is how many functions make a chunk: chunks are read in any
// order and put together in order.
const goLineChunk = 256

// lineRuns reads the line runs of chunk c of the table's functions, those
// in code and outside skip.
func (x *extractor) lineRuns(t *gosym.Table, skip []Range, c int) []lineRun {
	var runs []lineRun
	for i := c * goLineChunk; i < min((c+1)*goLineChunk, len(t.Funcs)); i++ {
		fn := &t.Funcs[i]
		if fn.End <= fn.Entry || !x.inCode(fn.Entry, fn.End) {
			continue
		}
		for _, g := range gaps(skip, fn.Entry, fn.End) {
			for pc := g[0]; pc < g[1]; pc++ {
				file, line, _ := t.PCToLine(pc)
				if k := len(runs) - 1; k >= 0 && runs[k].end == pc && runs[k].fn == i && runs[k].line == line && runs[k].file == file {
					runs[k].end = pc + 1
					continue
				}
				runs = append(runs, lineRun{start: pc, end: pc + 1, fn: i, file: file, line: line})
			}
		}
	}
	return runs
}

// lineRunsConcurrently reads every chunk into results with workers
// goroutines, each but the first with its own copy of the table; a reader
// that panics on the binary makes it malformed.
func (x *extractor) lineRunsConcurrently(tab *gosym.Table, skip []Range, workers int, results [][]lineRun) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					errs[w] = fmt.Errorf("%w: the Go pclntab reader failed on it: %v", ErrMalformed, p)
				}
			}()
			t := tab
			if w > 0 {
				var err error
				if t, err = x.newGoTable(); err != nil {
					errs[w] = fmt.Errorf("%w: %v", ErrMalformed, err) //nolint:errorlint // one %w: the kind
					return
				}
			}
			for c := int(next.Add(1) - 1); c < len(results); c = int(next.Add(1) - 1) {
				results[c] = x.lineRuns(t, skip, c)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// maxGoLineWorkers bounds the goroutines reading one Go binary's lines.
const maxGoLineWorkers = 8

// lineRun is a run of addresses of one function with one file and line.
type lineRun struct {
	start, end uint64
	fn         int
	file       string
	line       int
}

// gaps returns the parts of [lo, hi) that no range of rs (sorted, not
// overlapping) covers.
func gaps(rs []Range, lo, hi uint64) [][2]uint64 {
	i, _ := slices.BinarySearchFunc(rs, lo, func(r Range, v uint64) int {
		if r.End <= v {
			return -1
		}
		return 1
	})
	var out [][2]uint64
	pos := lo
	for ; i < len(rs) && rs[i].Start < hi && pos < hi; i++ {
		if rs[i].Start > pos {
			out = append(out, [2]uint64{pos, rs[i].Start})
		}
		pos = max(pos, rs[i].End)
	}
	if pos < hi {
		out = append(out, [2]uint64{pos, hi})
	}
	return out
}

// goTextStart is the address the pclntab's offsets count from: the
// runtime.text symbol, else the start of .text.
func (x *extractor) goTextStart() uint64 {
	if syms, err := x.f.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "runtime.text" {
				return s.Value
			}
		}
	}
	if s := x.f.Section(".text"); s != nil {
		return s.Addr
	}
	return 0
}
