// An empty stand-in for the monolithic google.golang.org/genproto module,
// for the Collector build only (builder-config.yaml replaces it with this
// directory). Flamehouse's main module still requires the 2021 monolith,
// whose googleapis/api and googleapis/rpc packages the Collector's modules
// take from the split modules google.golang.org/genproto/googleapis/api and
// .../rpc: with both in one build those imports are ambiguous. Nothing the
// distribution compiles imports the monolith, so an empty module resolves
// every such import to the split modules.
module google.golang.org/genproto

go 1.21
