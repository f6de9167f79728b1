package pipeline

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// sink records what NotifyUnsymbolized reports, copying it.
type sink struct {
	mu    sync.Mutex
	calls map[string][]Executable
}

func (s *sink) Unsymbolized(tenant string, exes []Executable) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string][]Executable{}
	}
	for _, e := range exes {
		s.calls[tenant] = append(s.calls[tenant], Executable{BuildID: strings.Clone(e.BuildID), File: strings.Clone(e.File)})
	}
}

func TestNotifyUnsymbolized(t *testing.T) {
	frame := func(fn, file, buildID string, addr uint64) *model.Frame {
		return &model.Frame{FunctionName: fn, MappingFile: file, BuildID: buildID, Address: addr}
	}
	batch := func() *model.Batch {
		b := model.NewBatch()
		b.ServiceSymbols(model.ServiceKey{Tenant: "acme", Service: "checkout"}).Frames = []*model.Frame{
			frame("main", "/app", "AA01", 0x10),                   // symbolized: not reported
			frame("", "/lib/libc.so.6", "bb02", 0x20),             // unsymbolized
			frame("", "/lib/libc.so.6", "bb02", 0x30),             // same build id: once
			frame("", "/lib/libssl.so", "CC03", 0x40),             // upper case: reported lower case
			frame("", "[vdso]", "", 0x50),                         // no build id: nothing to fetch
			{SystemName: "sys", MappingFile: "/x", BuildID: "dd"}, // named by its system name
		}
		b.ServiceSymbols(model.ServiceKey{Tenant: "acme", Service: "cart"}).Frames = []*model.Frame{frame("", "/lib/libc.so.6", "bb02", 0x20)}
		b.ServiceSymbols(model.ServiceKey{Tenant: "other", Service: "cart"}).Frames = []*model.Frame{frame("", "/lib/libc.so.6", "bb02", 0x20)}
		return b
	}
	for _, tc := range []struct {
		name     string
		writeErr error
		want     map[string][]Executable
	}{
		{name: "committed", want: map[string][]Executable{
			"acme":  {{BuildID: "bb02", File: "/lib/libc.so.6"}, {BuildID: "cc03", File: "/lib/libssl.so"}},
			"other": {{BuildID: "bb02", File: "/lib/libc.so.6"}},
		}},
		{name: "not committed", writeErr: errors.New("clickhouse is down")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s sink
			w := NotifyUnsymbolized(&fakeWriter{err: tc.writeErr}, &s)
			err := w.Write(context.Background(), batch())
			require.ErrorIs(t, err, tc.writeErr)
			for _, exes := range s.calls {
				slices.SortFunc(exes, func(a, b Executable) int { return strings.Compare(a.BuildID, b.BuildID) })
			}
			require.Equal(t, tc.want, s.calls)
		})
	}
}
