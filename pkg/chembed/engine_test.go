package chembed_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/chembed"
)

const closeHelperEnv = "CHEMBED_CLOSE_HELPER"

// TestEngineClosesEachConnectionOnce runs in a child process, because
// libchdb serves one data directory per process and closing the engine is
// final there.
func TestEngineClosesEachConnectionOnce(t *testing.T) {
	if os.Getenv(closeHelperEnv) == "1" {
		closeHelper(t)
		return
	}
	if testing.Short() {
		t.Skip("starts a second engine in a child process; skipped under -short")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEngineClosesEachConnectionOnce$", "-test.v")
	cmd.Env = append(os.Environ(), closeHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "--- PASS: TestEngineClosesEachConnectionOnce")
}

func closeHelper(t *testing.T) {
	cfg := chembed.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Connections = 3
	e, err := chembed.Open(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	_, err = chembed.Open(cfg, slog.New(slog.DiscardHandler))
	require.Error(t, err, "a second engine in one process is refused")

	ctx := context.Background()
	running := make(chan error, 1)
	go func() { running <- e.Exec(ctx, "SELECT sleep(1)") }()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	e.Close() // waits for the running statement to return its connection
	require.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond, "Close waited for the statement in flight")
	require.NoError(t, <-running)
	e.Close()
	require.Equal(t, int64(3), chembed.ClosedConnections(), "each connection closed exactly once")
	require.Error(t, e.Exec(ctx, "SELECT 1"), "a closed engine refuses statements")
}
