package symbols_test

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/flamehouse/flamehouse/internal/nativebin"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// FuzzExtract feeds the upload parser's entry point arbitrary bytes, seeded
// with small real files (a C program with DWARF and inlined code, its
// stripped copy, a Go binary's start): it must never panic, must fail only
// with its named errors, and what it accepts must hold the ranges'
// invariant.
func FuzzExtract(f *testing.F) {
	f.Add([]byte("\x7fELF"))
	f.Add([]byte("not an ELF file"))
	if _, err := os.Stat("/usr/bin/gcc"); err == nil {
		bin := nativebin.Build(f, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared, Flags: []string{"-g", "-O1"}})
		for _, path := range []string{bin.Path, nativebin.Stripped(f, bin).Path, nativebin.DebugOnly(f, bin).Path} {
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
			f.Add(data[:len(data)/2])
		}
	}
	named := []error{
		symbols.ErrTooLarge, symbols.ErrNotELF, symbols.ErrMalformed, symbols.ErrNoBuildID,
		symbols.ErrBuildIDMismatch, symbols.ErrNoSymbols, symbols.ErrTooManyRanges,
	}
	opts := symbols.Options{Limits: symbols.Limits{MaxFileBytes: 4 << 20, MaxRanges: 100_000}}
	f.Fuzz(func(t *testing.T, data []byte) {
		exe, err := symbols.ExtractWith(bytes.NewReader(data), int64(len(data)), opts)
		if err != nil {
			for _, e := range named {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("an error that is none of the named ones: %v", err)
		}
		if exe.BuildID == "" {
			t.Fatal("accepted without a build id")
		}
		for i, r := range exe.Ranges {
			if r.Start >= r.End || len(r.Frames) == 0 || (i > 0 && exe.Ranges[i-1].End > r.Start) {
				t.Fatalf("range %d breaks the invariant: %+v", i, r)
			}
		}
	})
}
