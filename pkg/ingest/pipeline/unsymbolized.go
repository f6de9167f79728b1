package pipeline

import (
	"context"
	"strings"

	"github.com/flamehouse/flamehouse/pkg/ingest/model"
)

// UnsymbolizedSink hears, after a batch is committed, which executables
// its unsymbolized frames (an address in a mapping with a build id, no
// function, file or line) belong to, so that their symbols can be fetched
// in the background (package debuginfod). It is called on the request's
// path: it must not block, and must copy what it keeps (the strings are
// valid during the call only).
type UnsymbolizedSink interface {
	Unsymbolized(tenant string, exes []model.Executable)
}

// NotifyUnsymbolized wraps a Writer: after each committed Write, sink
// hears the batch's distinct executables with unsymbolized frames, per
// tenant. Nothing is called for a write that failed or for a batch whose
// frames are all symbolized.
func NotifyUnsymbolized(w Writer, sink UnsymbolizedSink) Writer {
	return &notifyingWriter{w: w, sink: sink}
}

type notifyingWriter struct {
	w    Writer
	sink UnsymbolizedSink
}

func (n *notifyingWriter) Write(ctx context.Context, b *model.Batch) error {
	exes := UnsymbolizedExecutables(b) // before the writer drops the frames it already wrote
	if err := n.w.Write(ctx, b); err != nil {
		return err
	}
	for tenant, exes := range exes {
		n.sink.Unsymbolized(tenant, exes)
	}
	return nil
}

// UnsymbolizedExecutables returns, per tenant, the distinct build ids
// (with the first file name seen for each) of a batch's unsymbolized
// frames. The strings alias the batch.
func UnsymbolizedExecutables(b *model.Batch) map[string][]model.Executable {
	var out map[string][]model.Executable
	type key struct{ tenant, buildID string }
	var seen map[key]struct{}
	for svc, sym := range b.Symbols {
		last := ""
		for _, f := range sym.Frames {
			if f.BuildID == "" || f.BuildID == last || f.Symbolized() {
				continue
			}
			last = f.BuildID
			k := key{svc.Tenant, f.BuildID}
			if _, ok := seen[k]; ok {
				continue
			}
			if seen == nil {
				seen, out = map[key]struct{}{}, map[string][]model.Executable{}
			}
			seen[k] = struct{}{}
			out[svc.Tenant] = append(out[svc.Tenant], model.Executable{BuildID: strings.ToLower(f.BuildID), File: f.MappingFile})
		}
	}
	return out
}
