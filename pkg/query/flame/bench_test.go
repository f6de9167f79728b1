package flame

import "testing"

// BenchmarkTree builds the tree of 50k stacks of depth 10-50 over 8k
// labels of skewed popularity (about 1.5M frame steps) and renders it
// truncated to 16384 nodes.
func BenchmarkTree(b *testing.B) {
	set := randomStacks(42, 50000, 8000, 10, 50)
	var nodes int
	for b.Loop() {
		tree := set.tree()
		tree.Frame(16384, "ns")
		nodes = tree.Nodes()
	}
	b.ReportMetric(float64(nodes), "nodes")
}

// BenchmarkFunctions accumulates the top-functions table of the same stacks.
func BenchmarkFunctions(b *testing.B) {
	set := randomStacks(42, 50000, 8000, 10, 50)
	for b.Loop() {
		set.functions().Top(1000)
	}
}
