package ebpfagent

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Verdict is a line of a profcheck record (testdata/profcheck.golden of
// internal/integration/ebpfagent): what the OpenTelemetry profcheck tool
// said of a payload, what Flamehouse's validator says, and why they differ
// where they do. Lines read
//
//	NAME profcheck=pass|fail flamehouse=pass|fail [note]
//
// with # comments and blank lines between them.
type Verdict struct {
	Profcheck, Flamehouse, Note string
}

// ReadVerdicts reads a profcheck record by payload name.
func ReadVerdicts(path string) (map[string]Verdict, error) {
	f, err := os.Open(path) //nolint:gosec // G304: the record the caller names
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	out := map[string]Verdict{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, " ", 4)
		pc, okP := strings.CutPrefix(fields[min(1, len(fields)-1)], "profcheck=")
		fh, okF := strings.CutPrefix(fields[min(2, len(fields)-1)], "flamehouse=")
		if len(fields) < 3 || !okP || !okF {
			return nil, fmt.Errorf("%s:%d: want NAME profcheck=VERDICT flamehouse=VERDICT [note], got %q", path, n, line)
		}
		v := Verdict{Profcheck: pc, Flamehouse: fh}
		if len(fields) == 4 {
			v.Note = fields[3]
		}
		out[fields[0]] = v
	}
	return out, sc.Err()
}
