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
		"internal/ebpfagent",
	},
	// The schema, connections to ClickHouse, OTLP encodings.
	{
		"pkg/schema", "pkg/chclient", "pkg/chembed", "pkg/otlphttp", "pkg/pprofconv", "pkg/ingest/convert",
		"internal/profilegen",
	},
	// What reads and writes the tables.
	{
		"pkg/symbols", "pkg/selftrace/tracetable", "pkg/ingest/writer", "pkg/ingest/pipeline", "internal/chtest",
	},
	// The parts of the services.
	{
		"pkg/symbols/debuginfod", "pkg/ingest/receiver", "pkg/query", "pkg/selfprofile", "internal/otelcoltest",
	},
	// The ingest service and the Grafana datasource.
	{"pkg/ingest", "pkg/plugin", "pkg/pyroscopeapi", "internal/e2edata"},
	// `flamehouse run` and its commands.
	{"pkg/service"},
	// Programs (internal/tsgen writes the frontend's copy of the backend's defaults).
	{"cmd/flamehouse", "pkg", "internal/tsgen"},
	// Integration tests of their own, which run the programs and their
	// peers from outside.
	{"internal/integration/ebpfagent", "internal/integration/pyroscopeapi"},
}

type goPackage struct {
	ImportPath string
	Imports    []string
}

// TestImportsRunDown: every package of the main module has a layer, and
// imports only packages of lower layers.
func TestImportsRunDown(t *testing.T) {
	layer := map[string]int{}
	for i, names := range layers {
		for _, name := range names {
			_, dup := layer[name]
			require.False(t, dup, "%s is listed twice", name)
			layer[name] = i
		}
	}
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
	seen := 0
	var listed []string
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if name == "" {
			name = "."
		}
		from, ok := layer[name]
		if !ok {
			t.Errorf("%s has no layer: add it to layers in internal/layers/layers_test.go", name)
			continue
		}
		seen++
		listed = append(listed, name)
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := strings.TrimPrefix(imp, module+"/")
			if l, ok := layer[to]; ok && l >= from {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports run down only", name, from, to, l)
			}
		}
	}
	require.Positive(t, seen)
	for name := range layer {
		if !slices.Contains(listed, name) {
			t.Errorf("%s is in layers but is not a package of the module: remove it", name)
		}
	}
}
