package flame

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestZZTiming(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	set := randomStacks(42, 50000, 8000, 10, 50)
	for range 4 {
		runtime.GC()
		t0 := cpuNow()
		tree := NewTree(set.names)
		for i, s := range set.stacks {
			tree.Add(s, set.values[i])
		}
		t1 := cpuNow()
		order := tree.sortedStacks()
		t2 := cpuNow()
		tree.sort()
		_ = order
		t3 := cpuNow()
		tree.shownNodes(keepAll)
		t4 := cpuNow()
		cut := tree.threshold(16384)
		t5 := cpuNow()
		f := tree.Frame(16384, "ns")
		t6 := cpuNow()
		t.Logf("add %v sort %v prepare(incl sort) %v showall %v threshold %v frame(all) %v rows %d cut %d", t1-t0, t2-t1, t3-t2, t4-t3, t5-t4, t6-t5, f.Rows(), cut)
	}
}
