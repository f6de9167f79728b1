// Package layers holds the architecture test of the repository's main
// module: its packages are ordered in layers, and a package imports only
// packages of lower layers, so that no import runs back up (a storage
// package never needs the ingest, the query never needs the service). A
// package's tests import lower layers too, and the harnesses that start
// real components or build test inputs; tests that need the programs
// themselves live under internal/integration, where anything goes. The
// layers are written down in layers_test.go; a new package takes its place
// there.
package layers
