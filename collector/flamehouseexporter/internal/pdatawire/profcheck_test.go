package pdatawire

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
	"github.com/flamehouse/flamehouse/pkg/ingest/otlpwire"
)

// agentCorpus is the main module's profcheck corpus: real eBPF profiler
// requests and profcheck's recorded verdicts (docs/ebpf-profiler.md).
const agentCorpus = "../../../../internal/integration/ebpfagent/testdata"

// TestWireWayOfAgentRequests: what the exporter's wire way hands the
// pipeline for the real agent's requests — pdata's own encoding
// (Encode), which appends the resource and scope attribute strings to the
// string table — is a request profcheck passes (recorded as
// exporter/<name> in profcheck.golden), and the validator accepts it, as
// it is and with Encode's adjustment. FLAMEHOUSE_PROFCHECK_OUT=<dir>
// writes the encodings for profcheck.
func TestWireWayOfAgentRequests(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(agentCorpus, "agent", "*.pb.gz"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	golden := profcheckVerdicts(t)
	var names []string
	for _, f := range files {
		name := "exporter/" + strings.TrimSuffix(filepath.Base(f), ".pb.gz")
		raw, err := os.ReadFile(f) //nolint:gosec // the corpus
		require.NoError(t, err)
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		require.NoError(t, err)
		wire, err := io.ReadAll(zr)
		require.NoError(t, err)
		pd, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(wire)
		require.NoError(t, err, name)
		encoded, adjust := Encode(pd)
		if dir := os.Getenv("FLAMEHOUSE_PROFCHECK_OUT"); dir != "" {
			path := filepath.Join(dir, name+".pb")
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o750))
			require.NoError(t, os.WriteFile(path, encoded, 0o600))
		}
		for _, opts := range []convert.Options{convert.DefaultOptions(""), withAdjust(adjust)} {
			res, err := convert.Protobuf(encoded, opts)
			require.NoError(t, err, name)
			require.Empty(t, res.Rejected, name)
			require.Positive(t, res.Accepted(), name)
			res.Release()
		}
		names = append(names, name)
	}
	for _, name := range names {
		require.Equal(t, "pass", golden[name], "%s: profcheck's recorded verdict", name)
	}
}

func withAdjust(adjust func(*otlpwire.Request)) convert.Options {
	opts := convert.DefaultOptions("")
	opts.AdjustDecoded = adjust
	return opts
}

// profcheckVerdicts reads profcheck's verdicts from profcheck.golden.
func profcheckVerdicts(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(agentCorpus, "profcheck.golden"))
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && !strings.HasPrefix(fields[0], "#") {
			out[fields[0]] = strings.TrimPrefix(fields[1], "profcheck=")
		}
	}
	require.NoError(t, sc.Err())
	return out
}
