package pdatawire

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/flamehouse/flamehouse/internal/ebpfagent"
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
	golden, err := ebpfagent.ReadVerdicts(filepath.Join(agentCorpus, "profcheck.golden"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		name := "exporter/" + strings.TrimSuffix(filepath.Base(f), ".pb.gz")
		raw, err := os.ReadFile(f)
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
		require.Equal(t, ebpfagent.Verdict{Profcheck: "pass", Flamehouse: "pass"}, golden[name], "%s: the recorded verdicts", name)
	}
}

func withAdjust(adjust func(*otlpwire.Request)) convert.Options {
	opts := convert.DefaultOptions("")
	opts.AdjustDecoded = adjust
	return opts
}
