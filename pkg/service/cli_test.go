package service

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/schema"
)

// These tests start the real embedded engine, one at a time: libchdb runs
// one engine per process, and each test closes its own before the next.

func TestRunCommandServesTheSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine; skipped under -short")
	}
	dataDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- runCommand(ctx, []string{
			"-embedded.data-dir", dataDir, "-embedded.listen-address", "127.0.0.1:0", "-log.level", "warn",
			"-ingest.grpc-listen-address", "127.0.0.1:0", "-ingest.http-listen-address", "127.0.0.1:0",
			"-pyroscope-api.listen-address", "127.0.0.1:0", "-selfprofile.interval", "1s",
		}, pw)
		_ = pw.Close()
	}()

	// The command prints how to connect; follow its own instructions.
	endpoint := regexp.MustCompile(`ClickHouse HTTP interface: (http://\S+)`)
	var base string
	scanner := bufio.NewScanner(pr)
	var printed strings.Builder
	for scanner.Scan() {
		printed.WriteString(scanner.Text() + "\n")
		if m := endpoint.FindStringSubmatch(scanner.Text()); m != nil {
			base = m[1]
		}
		if strings.HasPrefix(scanner.Text(), "Stop with") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	require.NotEmpty(t, base, "printed:\n%s", printed.String())
	require.Contains(t, printed.String(), fmt.Sprintf("Schema:   database otel, version %d", schema.LatestVersion()))

	resp, err := http.Get(base + "/?query=" + url.QueryEscape("SELECT name FROM system.tables WHERE database = 'otel' AND name LIKE 'otel_profile_%' ORDER BY name"))
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	for _, table := range []string{"otel_profile_samples", "otel_profile_stacks", "otel_profile_frames", "otel_profile_series", "otel_profile_samples_1h"} {
		require.Contains(t, string(body), table+"\n")
	}
	require.Contains(t, printed.String(), "OTLP profiles: gRPC 127.0.0.1:")
	require.Regexp(t, `Symbols:  PUT http://127\.0\.0\.1:\d+/v1/symbols/<build id>`, printed.String())

	// The main job profiles itself through its own OTLP endpoint: real
	// flame graph data shows up without any other sender.
	query := base + "/?query=" + url.QueryEscape("SELECT uniqExact(ProfileType) FROM otel.otel_profile_samples WHERE ServiceName = 'flamehouse'")
	require.Eventually(t, func() bool {
		resp, err := http.Get(query)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b)) >= "2" // CPU time and heap types
	}, 45*time.Second, 500*time.Millisecond, "self-profiling data arrives")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "clean shutdown")
	case <-time.After(60 * time.Second):
		t.Fatal("run did not stop after cancel")
	}
}

func TestMigrateCommandIsRepeatable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine; skipped under -short")
	}
	args := []string{"migrate", "-embedded.data-dir", t.TempDir(), "-embedded.listen-address", "127.0.0.1:0", "-log.level", "warn"}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, Main(args, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), fmt.Sprintf("schema version %d; applied: 0001_initial, 0002_rollup_dedup, 0003_symbols", schema.LatestVersion()))
	out.Reset()
	require.Equal(t, 0, Main(append(args, "-schema.retention.samples", "24h"), &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "applied: none; retention changed: otel_profile_samples")
}

func TestCommandLineErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 2, Main([]string{"frobnicate"}, &out, &errOut))
	require.Contains(t, errOut.String(), "unknown command")
	errOut.Reset()
	require.Equal(t, 2, Main([]string{"run", "-no-such-flag"}, &out, &errOut))
	errOut.Reset()
	require.Equal(t, 1, Main([]string{"run", "-embedded.listen-address", "0.0.0.0:8123"}, &out, &errOut))
	require.Contains(t, errOut.String(), "password is required")
	require.Equal(t, 0, Main([]string{"help"}, &out, &errOut))
}

func TestDDLAndConfigCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, Main([]string{"ddl", "-schema.cluster", "prod"}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "CREATE TABLE IF NOT EXISTS `otel`.`otel_profile_samples_local` ON CLUSTER 'prod'")
	out.Reset()
	require.Equal(t, 0, Main([]string{"config", "-embedded.password", "hunter2"}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "password: '[redacted]'")
	require.NotContains(t, out.String(), "hunter2")
	require.Contains(t, out.String(), "samples: 168h0m0s")
	require.Contains(t, out.String(), "selfprofile:\n    enabled: true\n    interval: 15s\n    service_name: flamehouse\n    traces: true\n    traces_table: otel_traces\n    traces_otlp_endpoint: \"\"\n")
}
