package symbols_test

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flamehouse/flamehouse/internal/chtest"
	"github.com/flamehouse/flamehouse/internal/nativebin"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// uploadBenchMBEnv sets the debug file's size in MB for
// BenchmarkUpload100MB (default 4, so that CI's single run stays short;
// the figure is measured with 100).
const uploadBenchMBEnv = "FLAMEHOUSE_BENCH_UPLOAD_MB"

// BenchmarkUpload100MB uploads a large separate debug file, as
// `flamehouse symbols upload` and PUT /v1/symbols do: extraction (ELF,
// DWARF with inlined subroutines, line tables) and the store's batched
// inserts into ClickHouse. The file is a shared library linked from many
// copies of one generated -g -O1 object (objcopy --prefix-symbols gives
// each copy its own names), so its size is cheap to scale; then objcopy
// --only-keep-debug. It reports the file's size, the rows written and the
// seconds of each phase.
func BenchmarkUpload100MB(b *testing.B) {
	nativebin.Require(b, "gcc", "objcopy")
	mb := 4
	if v := os.Getenv(uploadBenchMBEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a positive number of MB", uploadBenchMBEnv, v)
		}
		mb = n
	}
	path := bigDebugFile(b, int64(mb)<<20)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	srv := chtest.Get(b)
	conn := srv.Open(b)
	tables := schema.DefaultConfig()
	tables.Database = fmt.Sprintf("symbench_%d", time.Now().UnixNano())
	b.Cleanup(func() { _ = conn.Exec(b.Context(), "DROP DATABASE IF EXISTS "+tables.Database) })
	m, err := schema.NewMigrator(tables, conn)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Migrate(b.Context()); err != nil {
		b.Fatal(err)
	}
	var native symbols.NativeInserter
	if n := srv.NativeInserter(b); n != nil {
		native = n
	}
	store := symbols.NewStore(tables, conn, native)
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var extractS, storeS float64
	var rows int
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		exe, err := symbols.Extract(f, st.Size())
		if err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		stored, err := store.Put(b.Context(), fmt.Sprintf("bench-%d", i), symbols.SourceUpload, filepath.Base(path), exe)
		if err != nil {
			b.Fatal(err)
		}
		extractS += mid.Sub(start).Seconds()
		storeS += time.Since(mid).Seconds()
		rows = stored.Ranges
	}
	n := float64(b.N)
	b.ReportMetric(float64(st.Size())/(1<<20), "file_MB")
	b.ReportMetric(float64(rows), "rows")
	b.ReportMetric(extractS/n, "extract_s")
	b.ReportMetric(storeS/n, "store_s")
	b.ReportMetric((extractS+storeS)/n, "upload_s")
}

// bigDebugFile builds a separate debug file of about size bytes in a new
// temporary directory and returns its path.
func bigDebugFile(b *testing.B, size int64) string {
	b.Helper()
	dir := b.TempDir()
	var src strings.Builder
	src.WriteString("#include <stdint.h>\n")
	const funcs = 300
	for i := range funcs {
		fmt.Fprintf(&src, `
static inline __attribute__((always_inline)) uint64_t mix%[1]d(uint64_t x) { x ^= x >> %[2]d; return x * 0x9E3779B97F4A7C15ull + %[1]d; }
static inline __attribute__((always_inline)) uint64_t step%[1]d(uint64_t x, int k) { for (int j = 0; j < k; j++) x = mix%[1]d(x + j); return x; }
__attribute__((noinline)) uint64_t fn%[1]d(uint64_t x) {
	struct s%[1]d { uint64_t a, b; int c[4]; } v = { x, x + 1, { 1, 2, 3, 4 } };
	if (x & 1) v.a = step%[1]d(v.a, 3); else v.b = step%[1]d(v.b, 5);
	return v.a ^ v.b ^ (uint64_t)v.c[x & 3] ^ mix%[1]d(x);
}
`, i, i%31+1)
	}
	if err := os.WriteFile(filepath.Join(dir, "gen.c"), []byte(src.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	run := func(name string, args ...string) {
		cmd := exec.CommandContext(b.Context(), name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run("gcc", "-g", "-O1", "-fPIC", "-c", "gen.c", "-o", "gen.o")
	// Each copy adds the object's DWARF (not its relocations, which the
	// link resolves) to the debug file.
	obj, err := elf.Open(filepath.Join(dir, "gen.o"))
	if err != nil {
		b.Fatal(err)
	}
	var perCopy int64
	for _, s := range obj.Sections {
		if strings.HasPrefix(s.Name, ".debug_") || s.Name == ".symtab" || s.Name == ".strtab" {
			perCopy += int64(s.Size)
		}
	}
	_ = obj.Close()
	copies := max(1, int(size/max(perCopy, 1)))
	objs := make([]string, 0, copies)
	for i := range copies {
		obj := fmt.Sprintf("c%d.o", i)
		run("objcopy", fmt.Sprintf("--prefix-symbols=c%d_", i), "gen.o", obj)
		objs = append(objs, obj)
	}
	run("gcc", append([]string{"-shared", "-Wl,--build-id", "-o", "libbig.so"}, objs...)...)
	run("objcopy", "--only-keep-debug", "libbig.so", "libbig.so.debug")
	return filepath.Join(dir, "libbig.so.debug")
}
