// Package pyroscopeapi serves Grafana Pyroscope's query API from the
// Flamehouse tables, so that Grafana's built-in Pyroscope datasource, its
// Tempo "Trace to profiles" link and the Profiles Drilldown app work on
// Flamehouse's data without a plugin: querier.v1.QuerierService over
// connect, gRPC and gRPC-Web (the types of the Apache-2.0 module
// github.com/grafana/pyroscope/api), and the JSON /pyroscope/render and
// /pyroscope/render-diff endpoints.
//
// It is an adapter only: every answer comes from pkg/query, the engine the
// Grafana datasource uses. A request's fields become the datasource's
// query model (query.JSON, validated by query.ParseRequest, whose errors
// are answered as InvalidArgument), and the engine's answers are re-encoded
// as Pyroscope's wire types: the nested-set flame graph frame as
// flamebearer levels or a pprof profile, the diff frame as a diff flame
// graph, time series as points. Authentication and tenants are the
// ingest's (receiver.Config.Authenticate), plus Pyroscope's tenant header
// X-Scope-OrgID. See docs/pyroscope-api.md.
package pyroscopeapi
