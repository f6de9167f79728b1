package chembed

import (
	"syscall"
	"unsafe"
)

// sigaction is the kernel's struct sigaction for rt_sigaction(2) on
// linux/amd64 and linux/arm64 (the mask is one 64-bit word).
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const maxSignal = 64

// crashSignals are the signals the Go runtime needs to turn faults into
// panics. libchdb installs its own crash handlers (or resets them to
// SIG_DFL) for these, which makes a nil dereference hang or kill the
// process, so they are handed back to Go after the engine starts, together
// with the shutdown signals the service handles. Other signals the engine
// claims are left to it: SIGRTMIN (system.stack_trace) and SIGPIPE, which
// the engine ignores and Go code handles as EPIPE errors either way.
var crashSignals = []syscall.Signal{
	syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL,
	syscall.SIGABRT, syscall.SIGTRAP, syscall.SIGSYS,
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP,
}

// signalSnapshot holds the handlers of all signals at one moment.
type signalSnapshot [maxSignal + 1]sigaction

func rtSigaction(sig int, act, old *sigaction) syscall.Errno {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	return errno
}

// snapshotSignals records the current handler of every signal.
func snapshotSignals() *signalSnapshot {
	var s signalSnapshot
	for sig := 1; sig <= maxSignal; sig++ {
		_ = rtSigaction(sig, nil, &s[sig]) // invalid signal numbers (32, 33) just stay zero
	}
	return &s
}

// restoreGoSignals reinstalls the recorded handlers of the crash and
// shutdown signals that changed since the snapshot, and reports which.
func (s *signalSnapshot) restoreGoSignals() []syscall.Signal {
	var restored []syscall.Signal
	for _, sig := range crashSignals {
		var now sigaction
		if rtSigaction(int(sig), nil, &now) != 0 || now.handler == s[sig].handler {
			continue
		}
		if rtSigaction(int(sig), &s[sig], nil) == 0 {
			restored = append(restored, sig)
		}
	}
	return restored
}
