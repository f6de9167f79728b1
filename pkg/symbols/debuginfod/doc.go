// Package debuginfod fills Flamehouse's symbol store from debuginfod
// servers (the HTTP protocol of elfutils' debuginfod, as run by Debian,
// Fedora, Ubuntu and others) and from the ingest's own machine, so that
// distribution libraries symbolize without anybody uploading them.
//
// Its sources are asked in order for each artifact: the host first, when
// HostConfig.Enabled (each debug dir's .build-id/xx/rest.debug for the
// debug file; .build-id/xx/rest, then the frame's mapping path, for the
// executable; stored with source "ingest host"), then the servers. A file from
// any source is used only when its build id is the one asked for, so a
// mapping path a remote sender names can never bring another file's
// symbols.
//
// The ingest path reports, after each committed batch, the build ids of
// frames it could not name (pipeline.UnsymbolizedSink). Fetcher queues each
// build id that is not stored for the tenant, not already queued or being
// fetched and not in its negative cache, into a bounded queue (full: the
// build id is dropped and comes back with the next frames). A dispatcher
// drops the build ids already in profile_executables, one query per tenant
// and batch of up to 256, and hands the rest to a fixed number of workers.
//
// A worker asks each server in turn for <url>/buildid/<hex>/debuginfo,
// and when none has it for <url>/buildid/<hex>/executable, streaming the
// answer into a temporary file (at most max_file_bytes), retrying 5xx
// answers, timeouts and network errors with exponential backoff. The file
// goes through symbols.ExtractWith, which checks that its build id is the
// one asked for, and symbols.Store.Put, with source "debuginfod". A
// separate debug file's code segments cannot place addresses
// (symbols.UsableSegments), so after one the executable is fetched too,
// for its segments (symbols.Options.AllowNoSymbols), and Put combines the
// two. A build id
// that every server answers 404 for, or whose files are unusable (wrong
// build id, too large, not ELF, no symbols), enters the negative cache for
// negative_cache_ttl; one that failed for a transport reason for at most
// FailureTTL. Nothing about a failure is stored in ClickHouse.
//
// Metrics: flamehouse_symbols_host_found_total{artifact},
// flamehouse_symbols_debuginfod_fetched_total,
// _fetched_bytes_total, _failed_total{reason}, _negative_cache_hits_total
// and _queue_length. Logs name servers with their passwords redacted.
package debuginfod
