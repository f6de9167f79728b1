package layers

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/flamehouse/flamehouse"

// layers lists the main module's packages from the bottom up. A package
// may import packages of lower layers only.
var layers = [][]string{
	// Foundations: no import of the module's own.
	{
		"pkg/secret", "pkg/tenancy", "pkg/profiletype", "pkg/selftrace", "pkg/chembed/sqlguard",
		"pkg/ingest/model", "pkg/ingest/otlpwire", "pkg/query/selector", "pkg/query/flame",
		"internal/otlpbuild", "internal/nativebin", "internal/pproftest", "internal/pluginzip", "internal/layers",
		"internal/harness", "internal/benchmem", "internal/benchenv",
	},
	// The schema, connections to an external ClickHouse, the converter of
	// OTLP profiles into rows.
	{"pkg/schema", "pkg/chclient", "pkg/ingest/convert"},
	// The embedded ClickHouse, OTLP encodings, the writer of the rows, the
	// load generator (its tests convert what it generates), the eBPF
	// profiler's harness.
	{"pkg/chembed", "pkg/otlphttp", "pkg/pprofconv", "pkg/ingest/writer", "internal/profilegen", "internal/ebpfagent"},
	// What reads the tables, the ingest's shared path (decode, convert,
	// write), the tests' ClickHouse and their oracle of query answers.
	{
		"pkg/symbols", "pkg/selftrace/tracetable", "pkg/ingest/pipeline", "internal/chtest", "internal/querytest",
	},
	// The parts of the services.
	{
		"pkg/symbols/debuginfod", "pkg/ingest/receiver", "pkg/query", "pkg/selfprofile", "internal/otelcoltest",
		"internal/pyroscopetest",
	},
	// The ingest service and the Grafana datasource.
	{"pkg/ingest", "pkg/plugin", "pkg/pyroscopeapi", "internal/e2edata"},
	// `flamehouse run` and its commands; the datasource's test support.
	{"pkg/service", "internal/plugintest"},
	// Programs (internal/tsgen writes the frontend's copy of the backend's defaults).
	{"cmd/flamehouse", "pkg", "internal/tsgen"},
	// Integration tests of their own, which run the programs and their
	// peers from outside.
	{
		"internal/integration/ebpfagent", "internal/integration/pyroscopeapi", "internal/integration/query",
		"internal/integration/plugin", "internal/integration/peer",
	},
}

// harnesses are the packages that start real components for tests (the
// embedded ClickHouse, Collectors, the eBPF profiler, Pyroscope, the
// datasource on the tests' ClickHouse) or build their inputs and oracles:
// any package's tests may import them, whatever their layer.
var harnesses = []string{
	"internal/chtest", "internal/otelcoltest", "internal/nativebin", "internal/pproftest", "internal/profilegen",
	"internal/otlpbuild", "internal/ebpfagent", "internal/pyroscopetest", "internal/harness", "internal/benchmem",
	"internal/benchenv", "internal/plugintest", "internal/querytest",
}

// integration is the prefix of the integration tests' packages, whose
// tests may import anything: they run the programs and their peers from
// outside.
const integration = "internal/integration/"

// testsToMove are the test imports that break the rule today, each of
// tests that belong elsewhere (none left: pkg/plugin's tests that started
// the ingest are internal/integration/plugin's and internal/integration/peer's).
// The list only shrinks: an entry no test needs any more fails the test.
var testsToMove = map[string][]string{}

type goPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// TestImportsRunDown: every package of the main module has a layer, and
// imports only packages of lower layers; its tests import only packages of
// lower layers and the harnesses, but for the integration tests' packages,
// which may import anything.
func TestImportsRunDown(t *testing.T) {
	layer := map[string]int{}
	for i, names := range layers {
		for _, name := range names {
			_, dup := layer[name]
			require.False(t, dup, "%s is listed twice", name)
			layer[name] = i
		}
	}
	var listed []string
	toMove := map[string]bool{}
	for _, p := range modulePackages(t) {
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if name == "" {
			name = "."
		}
		from, ok := layer[name]
		if !ok {
			t.Errorf("%s has no layer: add it to layers in internal/layers/layers_test.go", name)
			continue
		}
		listed = append(listed, name)
		for _, to := range ownImports(p.Imports) {
			if l, ok := layer[to]; ok && l >= from {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports run down only", name, from, to, l)
			}
		}
		if !strings.HasPrefix(name, integration) {
			checkTestImports(t, name, p, layer, toMove)
		}
	}
	for name, tos := range testsToMove {
		for _, to := range tos {
			if !toMove[name+" -> "+to] {
				t.Errorf("the tests of %s no longer import %s: remove it from testsToMove", name, to)
			}
		}
	}
	require.NotEmpty(t, listed)
	for name := range layer {
		if !slices.Contains(listed, name) {
			t.Errorf("%s is in layers but is not a package of the module: remove it", name)
		}
	}
}

// modulePackages lists the main module's packages with go list.
func modulePackages(t *testing.T) []goPackage {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "list", "-json", "./cmd/...", "./internal/...", "./pkg/...")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("go list: %v\n%s", err, exit.Stderr)
	}
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []goPackage
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
}

// checkTestImports: the tests of package name (of layer layer[name])
// import lower layers, the harnesses and the package itself, or what
// testsToMove lists, which it marks in toMove.
func checkTestImports(t *testing.T, name string, p goPackage, layer map[string]int, toMove map[string]bool) {
	t.Helper()
	from := layer[name]
	for _, to := range ownImports(append(p.TestImports, p.XTestImports...)) {
		l, ok := layer[to]
		switch {
		case !ok || l < from || to == name || slices.Contains(harnesses, to):
		case slices.Contains(testsToMove[name], to):
			toMove[name+" -> "+to] = true
		default:
			t.Errorf("the tests of %s (layer %d) import %s (layer %d): tests import lower layers and the harnesses; "+
				"a test that needs more belongs under %s", name, from, to, l, integration)
		}
	}
}

// ownImports are the imports of the module's own packages, by their names
// in layers.
func ownImports(imports []string) []string {
	var own []string
	for _, imp := range imports {
		if name, ok := strings.CutPrefix(imp, module+"/"); ok {
			own = append(own, name)
		}
	}
	return own
}
