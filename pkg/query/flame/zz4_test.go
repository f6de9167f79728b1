package flame

import "testing"

func BenchmarkZZFrame(b *testing.B) {
	set := randomStacks(42, 50000, 8000, 10, 50)
	tree := set.tree()
	tree.sort()
	for b.Loop() {
		tree.Frame(16384, "ns")
	}
}
