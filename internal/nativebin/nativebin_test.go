package nativebin_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/nativebin"
)

func TestBuildKinds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    nativebin.Spec
		funcs   []string
		inlined bool
	}{
		{"c-pie", nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE}, []string{nativebin.FuncWorkOuter, nativebin.FuncLeafMul, nativebin.FuncMain}, true},
		{"c-nopie", nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.NoPIE}, []string{nativebin.FuncWorkOuter}, true},
		{"cxx", nativebin.Spec{Sources: nativebin.ProgramCXX, Kind: nativebin.PIE}, []string{nativebin.SymBoxArea, nativebin.SymScale, nativebin.SymTotal}, true},
		{"shared", nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared}, []string{nativebin.FuncLibEntry, nativebin.FuncLibHelper}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := nativebin.Build(t, tc.spec)
			require.Len(t, bin.BuildID, 40, "a GNU build id is a SHA-1")
			for _, fn := range tc.funcs {
				addrs := bin.Inside(t, fn)
				got := nativebin.Symbolize(t, bin.Path, addrs)
				for i, frames := range got {
					require.NotEmpty(t, frames, "address %#x", addrs[i])
					require.NotEmpty(t, frames[len(frames)-1].Function, "address %#x", addrs[i])
				}
			}
			inl := bin.InlinedAddrs(t)
			if tc.inlined {
				require.NotEmpty(t, inl)
				deep := 0
				for _, frames := range nativebin.Symbolize(t, bin.Path, inl) {
					deep = max(deep, len(frames))
				}
				require.GreaterOrEqual(t, deep, 2, "llvm-symbolizer sees inlined frames")
			}
			require.NotEmpty(t, bin.LineAddrs(t))

			dbg := nativebin.DebugOnly(t, bin)
			require.Equal(t, bin.BuildID, nativebin.ReadBuildID(t, dbg.Path))
			stripped := nativebin.Stripped(t, bin)
			require.Equal(t, bin.BuildID, nativebin.ReadBuildID(t, stripped.Path))
			require.Empty(t, stripped.LineAddrs(t))
			nodebug := nativebin.NoDebug(t, bin)
			require.NotEmpty(t, nativebin.ReadSyms(t, nodebug.Path))
		})
	}
}

func TestNoBuildID(t *testing.T) {
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, NoBuildID: true})
	require.Empty(t, bin.BuildID)
}

func TestCXXDemangled(t *testing.T) {
	bin := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramCXX})
	got := nativebin.Symbolize(t, bin.Path, bin.Inside(t, nativebin.SymBoxArea)[:1])
	require.Equal(t, "shapes::Box<int>::area(int) const", got[0][len(got[0])-1].Function)
	require.Equal(t, "main.cc", filepath.Base(got[0][0].File))
}

func TestGo(t *testing.T) {
	bin := nativebin.BuildGo(t, nativebin.ProgramGo)
	require.NotEmpty(t, bin.BuildID)
	_, err := os.Stat(bin.Path)
	require.NoError(t, err)
	got := nativebin.GoAddr2line(t, bin.Path, bin.Inside(t, nativebin.GoFuncSpin))
	for _, fr := range got {
		require.Equal(t, nativebin.GoFuncSpin, fr.Function)
		require.Equal(t, "main.go", filepath.Base(fr.File))
		require.NotZero(t, fr.Line)
	}
}
