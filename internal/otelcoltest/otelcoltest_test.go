package otelcoltest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestConfigRender(t *testing.T) {
	cfg := Config{
		Exporters: map[string]any{"clickhouse": map[string]any{"endpoint": "http://127.0.0.1:8123"}},
		Pipelines: map[string]Pipeline{
			"traces":      {Exporters: []string{"clickhouse"}},
			"profiles/ch": {Receivers: []string{"otlp/other"}, Exporters: []string{"clickhouse"}},
		},
		FeatureGates: []string{"-some.gate"},
	}
	out, err := cfg.Render("127.0.0.1:1001", "127.0.0.1:1002")
	require.NoError(t, err)
	var doc struct {
		Receivers map[string]struct {
			Protocols map[string]struct {
				Endpoint string `yaml:"endpoint"`
			} `yaml:"protocols"`
		} `yaml:"receivers"`
		Processors map[string]any `yaml:"processors"`
		Exporters  map[string]any `yaml:"exporters"`
		Service    struct {
			Telemetry map[string]map[string]string `yaml:"telemetry"`
			Pipelines map[string]Pipeline          `yaml:"pipelines"`
		} `yaml:"service"`
	}
	require.NoError(t, yaml.Unmarshal(out, &doc), "%s", out)
	require.Equal(t, "127.0.0.1:1001", doc.Receivers[ReceiverName].Protocols["grpc"].Endpoint)
	require.Equal(t, "127.0.0.1:1002", doc.Receivers[ReceiverName].Protocols["http"].Endpoint)
	require.Nil(t, doc.Processors, "no processors section without processors")
	require.Equal(t, cfg.Exporters["clickhouse"], doc.Exporters["clickhouse"])
	require.Equal(t, "none", doc.Service.Telemetry["metrics"]["level"])
	require.Equal(t, "info", doc.Service.Telemetry["logs"]["level"])
	require.Equal(t, map[string]Pipeline{
		"traces":      {Receivers: []string{ReceiverName}, Exporters: []string{"clickhouse"}},
		"profiles/ch": {Receivers: []string{"otlp/other"}, Exporters: []string{"clickhouse"}},
	}, doc.Service.Pipelines)

	require.Equal(t, []string{"-some.gate", "+service.profilesSupport"}, cfg.featureGates(), "a profiles pipeline needs the gate")
	delete(cfg.Pipelines, "profiles/ch")
	require.Equal(t, []string{"-some.gate"}, cfg.featureGates())
}

// TestBuildCachesBySourceHash builds a tiny module: the second build finds
// the binary in the cache, and a changed source builds a new one and
// removes the old.
func TestBuildCachesBySourceHash(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(CacheEnv, cache)
	// Another module whose name starts like this one's: never pruned.
	other := filepath.Join(cache, "hello-world-0123456789abcdef")
	require.NoError(t, os.WriteFile(other, []byte("#!/bin/sh\n"), 0o700))
	dir := filepath.Join(t.TempDir(), "hello")
	require.NoError(t, os.Mkdir(dir, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/hello\n\ngo 1.26\n"), 0o600))
	writeMain := func(msg string) {
		src := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"" + msg + "\") }\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600))
	}
	writeMain("one")

	first, cached, err := build(dir)
	require.NoError(t, err)
	require.False(t, cached)
	require.FileExists(t, first)
	again, cached, err := build(dir)
	require.NoError(t, err)
	require.True(t, cached, "same sources: the cached binary")
	require.Equal(t, first, again)

	// Changed sources: a new build. Two builders at once (test binaries run
	// in parallel) take turns, and the second finds the first one's binary.
	writeMain("two")
	type result struct {
		bin    string
		cached bool
		err    error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			bin, cached, err := build(dir)
			results <- result{bin, cached, err}
		}()
	}
	r1, r2 := <-results, <-results
	require.NoError(t, r1.err)
	require.NoError(t, r2.err)
	require.Equal(t, r1.bin, r2.bin)
	require.NotEqual(t, r1.cached, r2.cached, "exactly one of two concurrent builders builds")
	second := r1.bin
	require.NotEqual(t, first, second)
	require.FileExists(t, first, "the old sources' binary, used a moment ago, stays: another checkout may be about to run it")
	out, err := exec.Command(second).Output()
	require.NoError(t, err)
	require.Equal(t, "two\n", string(out))

	// Once unused for longer than staleBuild, a build of new sources
	// removes it; a binary in use (the second) stays.
	aged := time.Now().Add(-staleBuild - time.Hour)
	require.NoError(t, os.Chtimes(first, aged, aged))
	require.NoError(t, os.Chtimes(other, aged, aged))
	writeMain("three")
	third, cached, err := build(dir)
	require.NoError(t, err)
	require.False(t, cached)
	require.NoFileExists(t, first, "the binary of sources unused for a day is removed")
	require.FileExists(t, second, "a binary used within the day stays")
	require.FileExists(t, third)
	require.FileExists(t, other, "another module's binary stays")

	require.Equal(t, third, BuildDir(t, dir), "BuildDir uses the same cache")
}
