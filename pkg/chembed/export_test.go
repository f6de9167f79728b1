package chembed

// StatusTableNames exposes the error names of the HTTP status table to the
// external test package, which checks them against the engine.
func StatusTableNames() map[int]string {
	m := make(map[int]string, len(statusTable))
	for _, e := range statusTable {
		m[e.code] = e.name
	}
	return m
}

// ClosedConnections reports how many engine connections this process closed.
func ClosedConnections() int64 { return closedConns.Load() }
