package harness

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOutputKeepsItsTail(t *testing.T) {
	var o Output
	chunk := strings.Repeat("x", 1<<20-1) + "\n"
	for range 2*outputLimit/len(chunk) + 3 {
		_, err := o.Write([]byte(chunk))
		require.NoError(t, err)
	}
	_, err := o.Write([]byte("the end"))
	require.NoError(t, err)
	require.LessOrEqual(t, len(o.String()), 2*outputLimit)
	require.True(t, strings.HasSuffix(o.String(), "\nthe end"))
	require.Equal(t, "the end", o.Tail(7))
}

func TestLockDirExcludes(t *testing.T) {
	dir := t.TempDir()
	unlock, err := LockDir(dir)
	require.NoError(t, err)
	locked := make(chan struct{})
	go func() {
		second, err := LockDir(dir)
		if err == nil {
			second()
		}
		close(locked)
	}()
	select {
	case <-locked:
		t.Fatal("a second lock was taken while the first was held")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	<-locked
}

func TestFreeAddrAndExitStatus(t *testing.T) {
	addr, err := FreeAddr()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(addr, "127.0.0.1:"))
	require.Equal(t, "exit status 0", ExitStatus(nil))
	require.Equal(t, "signal: killed", ExitStatus(errors.New("signal: killed")))
}
