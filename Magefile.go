//go:build mage
// +build mage

package main

import (
	"github.com/magefile/mage/sh"

	// mage:import
	build "github.com/grafana/grafana-plugin-sdk-go/build"
)

// Default configures the default target.
var Default = build.BuildAll

// Bench runs the peer benchmark: the same generated workload loaded into
// Flamehouse's tables and, through a real Collector, into the contrib
// ClickHouse exporter's otel_profiles table, compared for bytes on disk,
// ingest throughput and query latency (docs/otel-exporter-schema.md).
// FLAMEHOUSE_PEER_RATE, FLAMEHOUSE_PEER_HOURS, FLAMEHOUSE_PEER_DENSE_SECONDS,
// FLAMEHOUSE_PEER_SENDERS and
// FLAMEHOUSE_PEER_RUNS change the workload.
func Bench() error {
	return sh.RunV("go", "test", "./pkg/plugin", "-run", "^$", "-bench", "BenchmarkPeer", "-benchtime", "1x", "-timeout", "60m", "-v")
}
