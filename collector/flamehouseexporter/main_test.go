package flamehouseexporter

import (
	"testing"

	"github.com/flamehouse/flamehouse/internal/chtest"
)

// runWithEngine runs the package's tests through chtest.Main, which shuts
// the embedded ClickHouse engine down once they are done and exits with
// their status. mdatagen's generated TestMain calls it as its setup
// (metadata.yaml, tests.goleak.setup), so its own m.Run is never reached:
// an engine still running when a race-detector binary exits can crash the
// detector's finalisation (SIGSEGV in racefini).
func runWithEngine(m *testing.M) { chtest.Main(m) }
