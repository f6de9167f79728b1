// Package pluginzip writes and checks the release zip of the Grafana plugin:
// the layout Grafana's tooling expects (`grafana cli --pluginUrl <zip>
// plugins install <id>`, the plugin validator, the catalog), with the plugin
// id as the single top folder holding plugin.json, the frontend bundle, the
// backend executables of every platform, README, CHANGELOG and LICENSE, and
// a SHA-256 checksum file beside the zip.
package pluginzip

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Platform is a GOOS/GOARCH pair a backend executable is built for.
type Platform struct{ OS, Arch string }

// Platforms are the backends a release carries: Linux, macOS and Windows on
// x86-64 and ARM64.
var Platforms = []Platform{
	{"linux", "amd64"},
	{"linux", "arm64"},
	{"darwin", "amd64"},
	{"darwin", "arm64"},
	{"windows", "amd64"},
	{"windows", "arm64"},
}

// Executable is the file name Grafana looks for: <executable>_<os>_<arch>,
// with .exe on Windows.
func (p Platform) Executable(base string) string {
	name := base + "_" + p.OS + "_" + p.Arch
	if p.OS == "windows" {
		name += ".exe"
	}
	return name
}

// Manifest is what a release needs from plugin.json.
type Manifest struct {
	ID         string `json:"id"`
	Executable string `json:"executable"`
	Backend    bool   `json:"backend"`
	Info       struct {
		Version string `json:"version"`
	} `json:"info"`
}

// ReadManifest reads and checks a built plugin.json: an id, and a version
// that the build filled in (not the %VERSION% placeholder).
func ReadManifest(raw []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("parse plugin.json: %w", err)
	}
	var err error
	if m.ID == "" {
		err = errors.Join(err, errors.New("plugin.json has no id"))
	}
	if m.Info.Version == "" || strings.Contains(m.Info.Version, "%") {
		err = errors.Join(err, fmt.Errorf("plugin.json has no built version (info.version %q): build the frontend first", m.Info.Version))
	}
	if m.Backend && m.Executable == "" {
		err = errors.Join(err, errors.New("plugin.json says backend but names no executable"))
	}
	return m, err
}

// required are the files every release holds besides the executables.
var required = []string{"plugin.json", "module.js", "README.md", "CHANGELOG.md", "LICENSE"}

// expected lists the files a release of this manifest must hold.
func expected(m Manifest) []string {
	out := slices.Clone(required)
	if m.Backend {
		for _, p := range Platforms {
			out = append(out, p.Executable(m.Executable))
		}
	}
	return out
}

// Name is the zip's file name: <id>-<version>.zip.
func Name(m Manifest) string { return m.ID + "-" + m.Info.Version + ".zip" }

// Write zips the built plugin directory dist into outDir/<id>-<version>.zip
// under the top folder <id>, after checking that it holds every required
// file, and writes <zip>.sha256 in the format of sha256sum. Executables keep
// mode 0755. Entries are sorted and stamped with modTime, so the same files
// give the same zip. It returns the zip's path.
func Write(dist, outDir string, modTime time.Time) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dist, "plugin.json")) //nolint:gosec // G304: the build's own output directory
	if err != nil {
		return "", fmt.Errorf("read the built plugin: %w", err)
	}
	m, err := ReadManifest(raw)
	if err != nil {
		return "", err
	}
	files, err := listFiles(dist)
	if err != nil {
		return "", err
	}
	if missing := missingFiles(m, files); len(missing) > 0 {
		return "", fmt.Errorf("%s lacks %s: build the frontend and every backend first (go tool mage package)", dist, strings.Join(missing, ", "))
	}
	if err := os.MkdirAll(outDir, 0o750); err != nil {
		return "", fmt.Errorf("create %s: %w", outDir, err)
	}
	zipPath := filepath.Join(outDir, Name(m))
	if err := writeZip(zipPath, dist, m.ID, files, modTime); err != nil {
		return "", err
	}
	sum, err := fileSHA256(zipPath)
	if err != nil {
		return "", err
	}
	line := sum + "  " + filepath.Base(zipPath) + "\n"
	if err := os.WriteFile(zipPath+".sha256", []byte(line), 0o644); err != nil { //nolint:gosec // G306: a public checksum
		return "", fmt.Errorf("write checksum: %w", err)
	}
	return zipPath, nil
}

// listFiles lists the regular files under dir as slash paths, sorted.
func listFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	slices.Sort(files)
	return files, nil
}

func missingFiles(m Manifest, files []string) []string {
	var missing []string
	for _, f := range expected(m) {
		if _, found := slices.BinarySearch(files, f); !found {
			missing = append(missing, f)
		}
	}
	return missing
}

func writeZip(zipPath, dist, top string, files []string, modTime time.Time) (err error) {
	out, err := os.Create(zipPath) //nolint:gosec // G304: the release directory
	if err != nil {
		return fmt.Errorf("create %s: %w", zipPath, err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write %s: %w", zipPath, cerr)
		}
	}()
	zw := zip.NewWriter(out)
	for _, f := range files {
		if err := addFile(zw, filepath.Join(dist, filepath.FromSlash(f)), path.Join(top, f), modTime); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("write %s: %w", zipPath, err)
	}
	return nil
}

func addFile(zw *zip.Writer, src, name string, modTime time.Time) error {
	info, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("zip %s: %w", src, err)
	}
	h, err := zip.FileInfoHeader(info)
	if err != nil {
		return fmt.Errorf("zip %s: %w", src, err)
	}
	h.Name, h.Method, h.Modified = name, zip.Deflate, modTime
	mode := fs.FileMode(0o644)
	if info.Mode()&0o111 != 0 || isExecutable(path.Base(name)) {
		mode = 0o755
	}
	h.SetMode(mode)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return fmt.Errorf("zip %s: %w", src, err)
	}
	in, err := os.Open(src) //nolint:gosec // G304: a file of the build output
	if err != nil {
		return fmt.Errorf("zip %s: %w", src, err)
	}
	defer in.Close() //nolint:errcheck // read-only
	if _, err := io.Copy(w, in); err != nil {
		return fmt.Errorf("zip %s: %w", src, err)
	}
	return nil
}

// isExecutable reports whether a file is a backend executable (gpx_...).
func isExecutable(base string) bool { return strings.HasPrefix(base, "gpx_") }

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p) //nolint:gosec // G304: the zip just written
	if err != nil {
		return "", fmt.Errorf("checksum %s: %w", p, err)
	}
	defer f.Close() //nolint:errcheck // read-only
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("checksum %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Check opens a release zip and reports every way it differs from what
// Grafana expects: one top folder named after plugin.json's id, every
// required file and executable in it, executables with mode 0755, and a
// checksum file that matches.
func Check(zipPath string) error {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return fmt.Errorf("open %s: %w", zipPath, err)
	}
	defer zr.Close() //nolint:errcheck // read-only
	tops := map[string]bool{}
	modes := map[string]fs.FileMode{}
	var manifest []byte
	for _, f := range zr.File {
		top, rest, _ := strings.Cut(f.Name, "/")
		tops[top] = true
		if f.FileInfo().IsDir() {
			continue
		}
		modes[rest] = f.Mode()
		if rest == "plugin.json" {
			if manifest, err = readZipFile(f); err != nil {
				return err
			}
		}
	}
	if manifest == nil {
		return fmt.Errorf("%s has no <id>/plugin.json", zipPath)
	}
	m, err := ReadManifest(manifest)
	if err != nil {
		return err
	}
	var problems error
	if len(tops) != 1 || !tops[m.ID] {
		names := make([]string, 0, len(tops))
		for t := range tops {
			names = append(names, t)
		}
		slices.Sort(names)
		problems = errors.Join(problems, fmt.Errorf("top folders %v, want only %q", names, m.ID))
	}
	for _, f := range expected(m) {
		mode, ok := modes[f]
		switch {
		case !ok:
			problems = errors.Join(problems, fmt.Errorf("missing %s/%s", m.ID, f))
		case isExecutable(f) && mode.Perm() != 0o755:
			problems = errors.Join(problems, fmt.Errorf("%s has mode %v, want 0755", f, mode.Perm()))
		}
	}
	return errors.Join(problems, checkSum(zipPath))
}

func readZipFile(f *zip.File) ([]byte, error) {
	r, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name, err)
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, 1<<20))
}

func checkSum(zipPath string) error {
	raw, err := os.ReadFile(zipPath + ".sha256") //nolint:gosec // G304: beside the zip
	if err != nil {
		return fmt.Errorf("read checksum: %w", err)
	}
	want, name, _ := strings.Cut(strings.TrimSpace(string(raw)), "  ")
	got, err := fileSHA256(zipPath)
	if err != nil {
		return err
	}
	if want != got || name != filepath.Base(zipPath) {
		return fmt.Errorf("checksum file says %s %q, the zip is %s %q", want, name, got, filepath.Base(zipPath))
	}
	return nil
}
