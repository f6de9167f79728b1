package otelcoltest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The Flamehouse Collector distribution: collector/builder-config.yaml,
// built by the Collector Builder.
const (
	// Builder is the Collector Builder, run with `go run` from the module
	// proxy at the version of the Collector modules it builds.
	Builder = "go.opentelemetry.io/collector/cmd/builder@v0.161.0"
	// DistributionName is the distribution's binary name (dist.name).
	DistributionName = "otelcol-flamehouse"
	// builderConfig is the builder configuration under collector/.
	builderConfig = "builder-config.yaml"
	// mainModule is the module path of this repository.
	mainModule = "github.com/flamehouse/flamehouse"
)

// CollectorDir is the repository's collector/ directory: the builder
// configuration, the flamehouse exporter's module.
func CollectorDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "collector")
}

// BuildDistribution returns the path of the Flamehouse Collector
// distribution built from collector/builder-config.yaml, as `go tool mage
// collector` builds it: the builder generates the sources, resolves the
// modules through the module proxy and compiles. The first call in a test
// binary builds it or finds it in the cache; the cache key covers the
// builder configuration, the exporter module's files (tests aside), the
// main module's go.mod and go.sum and the sources of every main-module
// package the exporter compiles in, and the Go version.
func BuildDistribution(tb testing.TB) string {
	tb.Helper()
	return buildOnce(tb, DistributionName, "distribution "+DistributionName, BuildDistributionBinary)
}

// BuildDistributionBinary is BuildDistribution outside a test: the
// binary's path and whether it came from the cache.
func BuildDistributionBinary() (bin string, cached bool, err error) {
	dir, err := filepath.Abs(CollectorDir())
	if err != nil {
		return "", false, err
	}
	sum, err := distributionHash(dir)
	if err != nil {
		return "", false, fmt.Errorf("hash the distribution's sources: %w", err)
	}
	return cachedBuild(DistributionName, sum, func(ctx context.Context, out string) error {
		return runBuilder(ctx, dir, out)
	})
}

// runBuilder runs the Collector Builder on a copy of the builder
// configuration whose output goes to a temporary directory, with the
// relative replace paths made absolute, and moves the binary to out.
func runBuilder(ctx context.Context, dir, out string) error {
	raw, err := os.ReadFile(filepath.Join(dir, builderConfig)) //nolint:gosec // G304: the repository's builder configuration
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("%s: %w", builderConfig, err)
	}
	dist, ok := cfg["dist"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s: no dist section", builderConfig)
	}
	outputPath, _ := dist["output_path"].(string)
	work := filepath.Join(filepath.Dir(out), "dist")
	dist["output_path"] = work
	dist["use_absolute_replace_paths"] = true
	replaces, _ := cfg["replaces"].([]any)
	for i, r := range replaces {
		line, _ := r.(string)
		from, to, found := strings.Cut(line, "=>")
		to = strings.TrimSpace(to)
		if found && (strings.HasPrefix(to, "./") || strings.HasPrefix(to, "../")) {
			replaces[i] = strings.TrimSpace(from) + " => " + filepath.Join(dir, outputPath, to)
		}
	}
	patched, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	cfgFile := filepath.Join(filepath.Dir(out), builderConfig)
	if err := os.WriteFile(cfgFile, patched, 0o600); err != nil {
		return err
	}
	// The builder resolves the components' local paths from its working
	// directory, as `go tool mage collector` runs it.
	cmd := exec.CommandContext(ctx, "go", "run", Builder, "--config", cfgFile) //nolint:gosec // G204: the pinned builder on our own configuration
	cmd.Dir = dir
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", Builder, err, output)
	}
	return os.Rename(filepath.Join(work, DistributionName), out)
}

// distributionHash hashes what the distribution's binary is made of, apart
// from the modules the proxy serves (pinned by the builder configuration
// and go.sum files).
func distributionHash(dir string) (string, error) {
	goVersion, err := goVersion()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%s\n%s/%s\n%s\n", goVersion, runtime.GOOS, runtime.GOARCH, Builder)
	add := func(path string) error {
		data, err := os.ReadFile(path) //nolint:gosec // G304: the repository's own files
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(filepath.Dir(dir), path)
		_, _ = fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(data))
		_, _ = h.Write(data)
		return nil
	}
	files := []string{filepath.Join(dir, builderConfig)}
	root := filepath.Dir(dir)
	files = append(files, filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"))
	// Every module directory the configuration names by path (the exporter,
	// the genproto stand-in), tests and test data aside.
	for _, sub := range []string{"flamehouseexporter", "genproto-split"} {
		err := filepath.WalkDir(filepath.Join(dir, sub), func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && d.Name() == "testdata":
				return filepath.SkipDir
			case d.Type().IsRegular() && !strings.HasSuffix(d.Name(), "_test.go"):
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	mainFiles, err := mainModuleFiles(filepath.Join(dir, "flamehouseexporter"))
	if err != nil {
		return "", err
	}
	files = append(files, mainFiles...)
	slices.Sort(files)
	for _, f := range slices.Compact(files) {
		if err := add(f); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// mainModuleFiles lists the source and embedded files of every package of
// the main module that the exporter module compiles in.
func mainModuleFiles(exporterDir string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	format := `{{if .Module}}{{if eq .Module.Path "` + mainModule + `"}}{{.Dir}}` +
		`{{range .GoFiles}}|{{.}}{{end}}{{range .CgoFiles}}|{{.}}{{end}}{{range .EmbedFiles}}|{{.}}{{end}}{{"\n"}}{{end}}{{end}}`
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-f", format, "./...")
	cmd.Dir = exporterDir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps in %s: %w", exporterDir, err)
	}
	var files []string
	for line := range strings.Lines(string(out)) {
		parts := strings.Split(strings.TrimSpace(line), "|")
		if len(parts) < 2 {
			continue
		}
		for _, f := range parts[1:] {
			files = append(files, filepath.Join(parts[0], f))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("go list found no package of %s in the exporter's build", mainModule)
	}
	return files, nil
}
