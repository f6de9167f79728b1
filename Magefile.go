//go:build mage
// +build mage

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/magefile/mage/mg"
	"github.com/magefile/mage/sh"

	// mage:import
	build "github.com/grafana/grafana-plugin-sdk-go/build"

	"github.com/flamehouse/flamehouse/internal/otelcoltest"
	"github.com/flamehouse/flamehouse/internal/pluginzip"
)

// Default configures the default target.
var Default = build.BuildAll

// releaseDir is where Package writes the zip and its checksum.
const releaseDir = "release"

// Package builds the release zip that Grafana's tooling expects: the
// frontend (npm run build) and the backend for Linux, macOS and Windows on
// amd64 and arm64 into a fresh dist/, zipped under the plugin id as
// release/flamehouse-profiles-datasource-<version>.zip with a .sha256 file
// beside it. Install it with
//
//	grafana cli --pluginUrl release/<zip> plugins install flamehouse-profiles-datasource
//
// SOURCE_DATE_EPOCH (Unix seconds) stamps the zip's entries, so that the
// same build gives the same zip; without it they carry the build time.
func Package() error {
	if err := os.RemoveAll("dist"); err != nil {
		return err
	}
	if err := sh.RunV("npm", "run", "build"); err != nil {
		return err
	}
	b := build.Build{}
	var targets []any
	for _, p := range pluginzip.Platforms {
		targets = append(targets, mg.F(b.Custom, p.OS, p.Arch))
	}
	mg.Deps(targets...)
	stamp := time.Now().UTC()
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		secs, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
		}
		stamp = time.Unix(secs, 0).UTC()
	}
	zipPath, err := pluginzip.Write("dist", releaseDir, stamp)
	if err != nil {
		return err
	}
	if err := pluginzip.Check(zipPath); err != nil {
		return err
	}
	fmt.Println("release:", zipPath, "and", zipPath+".sha256")
	return nil
}

// Bench runs the peer benchmark: the same generated workloads loaded into
// Flamehouse's tables (through its ingest and through the Flamehouse
// Collector), through a real Collector into the contrib ClickHouse
// exporter's otel_profiles table, and into Grafana Pyroscope from
// ../shared/pyroscope, compared for bytes on disk, ingest throughput,
// memory, flame graph latency and answers (docs/performance.md).
// FLAMEHOUSE_PEER_RATE, FLAMEHOUSE_PEER_HOURS, FLAMEHOUSE_PEER_DENSE_SECONDS,
// FLAMEHOUSE_PEER_CLUSTER_SECONDS, FLAMEHOUSE_PEER_AGENT_MINUTES,
// FLAMEHOUSE_PEER_LIVE_MINUTES (the real eBPF profiler's recording),
// FLAMEHOUSE_PEER_SENDERS and FLAMEHOUSE_PEER_RUNS change the workloads;
// FLAMEHOUSE_PEER_PHASES picks phases.
func Bench() error {
	return sh.RunV("go", "test", "./internal/integration/peer", "-run", "^$", "-bench", "BenchmarkPeer", "-benchtime", "1x", "-timeout", "6h", "-v")
}

// Collector builds the Flamehouse OpenTelemetry Collector distribution
// (collector/builder-config.yaml: OTLP receiver, batch and memory_limiter
// processors, the flamehouse exporter for profiles, the contrib clickhouse
// exporter for traces, logs and metrics, the file_storage extension) with
// the Collector Builder from the Go module proxy, into
// bin/otelcol-flamehouse. Run it with collector/otelcol-flamehouse.yaml:
//
//	bin/otelcol-flamehouse --config collector/otelcol-flamehouse.yaml --feature-gates=+service.profilesSupport
func Collector() error {
	// The builder resolves the configuration's paths from its working
	// directory and writes sources and binary to collector/_build.
	if err := sh.RunV("go", "-C", "collector", "run", otelcoltest.Builder, "--config", "builder-config.yaml"); err != nil {
		return err
	}
	if err := os.MkdirAll("bin", 0o750); err != nil {
		return err
	}
	out := filepath.Join("bin", otelcoltest.DistributionName)
	if err := os.Rename(filepath.Join("collector", "_build", otelcoltest.DistributionName), out); err != nil {
		return err
	}
	fmt.Println("collector:", out)
	return nil
}
