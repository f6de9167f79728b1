// Package chembed runs the ClickHouse engine in-process (libchdb, the
// embedded ClickHouse from the npm package @chdb/lib-linux-x64-gnu) and serves
// it over ClickHouse's HTTP interface, so that unmodified ClickHouse clients
// (clickhouse-go/v2 with Protocol: clickhouse.HTTP, curl, the Grafana
// ClickHouse plugin in HTTP mode) can use it as a single-node ClickHouse.
//
// The package has three layers:
//
//   - Library and Conn bind the libchdb C API with purego (no cgo needed) and
//     work around its quirks: leaked partial output after an error, signal
//     handlers that replace Go's, and binary INSERT data that cannot be passed
//     inline.
//   - The guard (package sqlguard) inspects every client statement before it
//     reaches the engine. The engine runs in ClickHouse "local" mode, which
//     has no access control, so the guard rejects multi-statements and every
//     way to touch the host: file(), url(), remote(), INTO OUTFILE, FROM
//     INFILE, host-backed table and database engines, SYSTEM, BACKUP and
//     RESTORE.
//   - Server speaks the HTTP protocol: authentication, protocol parameters
//     versus settings, per-request session reset, the hello handshake that
//     clickhouse-go sends on connect, INSERT bodies spooled to disk, streamed
//     SELECT results with ClickHouse's in-band exception frame, a bounded pool
//     of engine connections and graceful shutdown.
//
// libchdb supports one data directory per process, so an Engine is a
// process-wide singleton: open it once, close it once.
package chembed
