// Package pyroscopeapi holds the parity test of Flamehouse's
// Pyroscope-compatible query API (pkg/pyroscopeapi) against the real Grafana
// Pyroscope (its _test files): the same generated profiles go into both over
// OTLP, the same API calls go to both, and the answers are compared.
// Pyroscope is AGPL: it runs as a separate process from the shared test
// harness (../shared/pyroscope), never as a dependency.
package pyroscopeapi
