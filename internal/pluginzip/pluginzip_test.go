package pluginzip

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const builtManifest = `{"id":"acme-demo-datasource","backend":true,"executable":"gpx_demo","info":{"version":"1.2.3"}}`

// fakeDist writes a built plugin directory with every required file.
func fakeDist(t *testing.T, manifest string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"plugin.json": manifest, "module.js": "js", "README.md": "r", "CHANGELOG.md": "c", "LICENSE": "l",
		"img/logo.svg": "<svg/>",
	}
	for _, p := range Platforms {
		files[p.Executable("gpx_demo")] = "bin " + p.OS + p.Arch
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	}
	return dir
}

func TestWriteLaysOutTheReleaseAsGrafanaExpects(t *testing.T) {
	dist := fakeDist(t, builtManifest)
	out := t.TempDir()
	stamp := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	zipPath, err := Write(dist, out, stamp)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(out, "acme-demo-datasource-1.2.3.zip"), zipPath)
	require.NoError(t, Check(zipPath))

	zr, err := zip.OpenReader(zipPath)
	require.NoError(t, err)
	defer func() { require.NoError(t, zr.Close()) }()
	names := map[string]os.FileMode{}
	for _, f := range zr.File {
		names[f.Name] = f.Mode().Perm()
		require.True(t, f.Modified.Equal(stamp), f.Name)
	}
	require.Len(t, names, 6+6)
	require.Equal(t, os.FileMode(0o755), names["acme-demo-datasource/gpx_demo_windows_arm64.exe"])
	require.Equal(t, os.FileMode(0o755), names["acme-demo-datasource/gpx_demo_linux_amd64"])
	require.Equal(t, os.FileMode(0o644), names["acme-demo-datasource/img/logo.svg"])

	// The same files give the same zip.
	first, err := os.ReadFile(zipPath)
	require.NoError(t, err)
	_, err = Write(dist, out, stamp)
	require.NoError(t, err)
	second, err := os.ReadFile(zipPath)
	require.NoError(t, err)
	require.Equal(t, first, second)
}

func TestWriteRefusesAnIncompleteBuild(t *testing.T) {
	for name, tc := range map[string]struct {
		manifest string
		remove   string
		want     string
	}{
		"no darwin arm64 backend": {builtManifest, "gpx_demo_darwin_arm64", "lacks gpx_demo_darwin_arm64"},
		"no frontend":             {builtManifest, "module.js", "lacks module.js"},
		"no license":              {builtManifest, "LICENSE", "lacks LICENSE"},
		"version not filled in": {
			strings.Replace(builtManifest, "1.2.3", "%VERSION%", 1), "", "no built version",
		},
		"no id": {strings.Replace(builtManifest, `"id":"acme-demo-datasource",`, "", 1), "", "no id"},
	} {
		t.Run(name, func(t *testing.T) {
			dist := fakeDist(t, tc.manifest)
			if tc.remove != "" {
				require.NoError(t, os.Remove(filepath.Join(dist, tc.remove)))
			}
			_, err := Write(dist, t.TempDir(), time.Unix(0, 0))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestCheckFindsWhatGrafanaWouldReject(t *testing.T) {
	write := func(t *testing.T, entries map[string]os.FileMode) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), "x.zip")
		f, err := os.Create(p)
		require.NoError(t, err)
		zw := zip.NewWriter(f)
		for name, mode := range entries {
			h := &zip.FileHeader{Name: name, Method: zip.Store}
			h.SetMode(mode)
			w, err := zw.CreateHeader(h)
			require.NoError(t, err)
			body := "x"
			if strings.HasSuffix(name, "plugin.json") {
				body = builtManifest
			}
			_, err = w.Write([]byte(body))
			require.NoError(t, err)
		}
		require.NoError(t, zw.Close())
		require.NoError(t, f.Close())
		sum, err := fileSHA256(p)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p+".sha256", []byte(sum+"  x.zip\n"), 0o600))
		return p
	}
	complete := func(top string, exeMode os.FileMode) map[string]os.FileMode {
		m := map[string]os.FileMode{}
		for _, f := range required {
			m[top+"/"+f] = 0o644
		}
		for _, p := range Platforms {
			m[top+"/"+p.Executable("gpx_demo")] = exeMode
		}
		return m
	}

	require.NoError(t, Check(write(t, complete("acme-demo-datasource", 0o755))))

	err := Check(write(t, complete("dist", 0o755)))
	require.ErrorContains(t, err, `want only "acme-demo-datasource"`)

	err = Check(write(t, complete("acme-demo-datasource", 0o644)))
	require.ErrorContains(t, err, "gpx_demo_linux_amd64 has mode -rw-r--r--, want 0755")

	entries := complete("acme-demo-datasource", 0o755)
	delete(entries, "acme-demo-datasource/gpx_demo_windows_amd64.exe")
	require.ErrorContains(t, Check(write(t, entries)), "missing acme-demo-datasource/gpx_demo_windows_amd64.exe")

	p := write(t, complete("acme-demo-datasource", 0o755))
	require.NoError(t, os.WriteFile(p+".sha256", []byte("00  x.zip\n"), 0o600))
	require.ErrorContains(t, Check(p), "checksum file says 00")
}
