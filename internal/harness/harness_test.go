package harness

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

func TestUnpackXZOncePerContent(t *testing.T) {
	if _, err := exec.LookPath("xz"); err != nil {
		t.Skip("xz is not installed (scripts/setup.sh installs xz-utils)")
	}
	src := t.TempDir()
	archive := func(content string) string {
		plain := filepath.Join(src, "tool")
		require.NoError(t, os.WriteFile(plain, []byte(content), 0o600))
		require.NoError(t, exec.CommandContext(context.Background(), "xz", "-kf", plain).Run())
		return plain + ".xz"
	}
	cache := filepath.Join(t.TempDir(), "cache")
	first, err := UnpackXZ(archive("#!/bin/sh\necho one\n"), cache, "tool")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(filepath.Base(first), "tool-"))
	got, err := os.ReadFile(first)
	require.NoError(t, err)
	require.Equal(t, "#!/bin/sh\necho one\n", string(got))
	fi, err := os.Stat(first)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&0o100, "executable")

	// The same content again: the unpacked file as it is.
	require.NoError(t, os.WriteFile(first, []byte("kept"), 0o700))
	again, err := UnpackXZ(archive("#!/bin/sh\necho one\n"), cache, "tool")
	require.NoError(t, err)
	require.Equal(t, first, again)
	got, err = os.ReadFile(again)
	require.NoError(t, err)
	require.Equal(t, "kept", string(got), "not unpacked twice")

	// Other content: another file beside it.
	other, err := UnpackXZ(archive("#!/bin/sh\necho two\n"), cache, "tool")
	require.NoError(t, err)
	require.NotEqual(t, first, other)
	got, err = os.ReadFile(other)
	require.NoError(t, err)
	require.Equal(t, "#!/bin/sh\necho two\n", string(got))

	_, err = UnpackXZ(filepath.Join(src, "missing.xz"), cache, "tool")
	require.Error(t, err)
	bad := filepath.Join(src, "bad.xz")
	require.NoError(t, os.WriteFile(bad, []byte("not xz"), 0o600))
	_, err = UnpackXZ(bad, cache, "tool")
	require.ErrorContains(t, err, "xz -dc")
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	require.Len(t, entries, 2, "a failed unpack leaves nothing behind")
}
