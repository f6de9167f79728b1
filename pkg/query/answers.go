package query

import (
	"context"
	"fmt"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/flamehouse/flamehouse/pkg/query/selector"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// cachedAnswer answers a request of a closed range from the plugin's cache
// of answers, or runs it and keeps its frames. In CachePlugin mode the
// plugin keeps both the reads' rows (shared by the queries that make the
// same read: a flame graph and a table of one selection and range) and the
// answers' frames, so that a repeated query costs neither ClickHouse nor
// the tree; ClickHouse's query cache, when in use, caches the reads only.
// Frames are shared between answers: each caller gets its own copies of
// the frame structs (the plugin sets their RefID), whose fields it must not
// change.
func (e *Engine) cachedAnswer(ctx context.Context, r *Request, run func() (data.Frames, error)) (data.Frames, error) {
	key := e.answerKey(ctx, r)
	if key == "" {
		return run()
	}
	store := e.Cache.plugin()
	if frames, ok := store.getValue(key, e.Cache.now()).(data.Frames); ok {
		return copyFrames(frames), nil
	}
	frames, err := run()
	if err != nil {
		return nil, err
	}
	store.putValue(key, frames, framesSize(frames), e.Cache.now().Add(e.Cache.ttl()))
	return copyFrames(frames), nil
}

// answerKey identifies a request's answer, or is "" when the answer is not
// kept: outside the plugin's cache mode, for ranges still moving, and for
// span, trace and spans queries (whose ranges the traces table decides).
func (e *Engine) answerKey(ctx context.Context, r *Request) string {
	c := e.Cache
	if c == nil || !c.closed(r.To) || (r.Left != nil && !c.closed(r.Left.To)) || len(r.SpanIDs) > 0 || r.TraceID != "" {
		return ""
	}
	switch r.Type {
	case TypeProfile, TypeTable, TypeMetrics, TypeBoth, TypeDiff:
	default:
		return ""
	}
	if c.ModeInUse(ctx, e.Conn) != CachePlugin {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "answer\n%q %q %q %q %q\n%q %q\n", e.Tenant, e.Schema, e.Tables.Qualified(schema.Samples), e.OTelTable,
		e.Tables.TablePrefix, e.DatasourceUID, e.DatasourceName)
	writeRequestKey(&b, r)
	if r.Left != nil {
		b.WriteString("left\n")
		writeRequestKey(&b, r.Left)
	}
	if r.Type != TypeMetrics {
		gen, err := e.symbolsGeneration(ctx)
		if err != nil {
			return ""
		}
		fmt.Fprintf(&b, "symbols %s\n", gen)
	}
	return b.String()
}

// symbolsGeneration names the state of the tenant's symbol store: the
// latest upload's time and the number of executables ("" without the
// symbol tables). Answers that name frames are kept under it, so that an
// upload is seen by the next query, not after the cache's TTL.
func (e *Engine) symbolsGeneration(ctx context.Context) (string, error) {
	pr, err := e.probe(ctx)
	if err != nil || !pr.symbols {
		return "", err
	}
	var p params
	var latest int64
	var n uint64
	q := "SELECT toInt64(toUnixTimestamp64Milli(max(UpdatedAt))), count() FROM " + e.Tables.Qualified(schema.Executables) +
		" WHERE TenantId = " + p.str(e.Tenant)
	if err := e.Conn.QueryRow(ctx, q, p.args...).Scan(&latest, &n); err != nil {
		return "", fmt.Errorf("look up the symbol store: %w", err)
	}
	return fmt.Sprintf("%d %d", latest, n), nil
}

// writeRequestKey writes what decides a request's answer.
func writeRequestKey(b *strings.Builder, r *Request) {
	fmt.Fprintf(b, "%s %q %q %q %d %d\n", r.Type, r.ProfileType.ID, selector.Format(r.Matchers), strings.Join(r.GroupBy, "\x00"),
		r.Limit, r.MaxNodes)
	fmt.Fprintf(b, "%d %d %d %d %d\n", r.From.UnixNano(), r.To.UnixNano(), r.rangeFrom.UnixNano(), r.rangeTo.UnixNano(), r.Step)
	fmt.Fprintf(b, "%q %t %t %t\n", r.Function, r.FunctionSelf, r.Ratio, r.Alert)
	fmt.Fprintf(b, "%t %q %q %d %d %t\n", r.Lines, r.BuildID, r.MappingFile, r.HideFrames, r.CollapseFrames, r.DiffUnscaled)
	fmt.Fprintf(b, "%q %q\n", r.FocusPath, r.SeriesID)
}

// copyFrames returns new frame structs sharing the fields and meta.
func copyFrames(frames data.Frames) data.Frames {
	out := make(data.Frames, len(frames))
	for i, f := range frames {
		c := *f
		out[i] = &c
	}
	return out
}

// framesSize estimates the memory of frames: 8 bytes a value, strings and
// enum texts by their length.
func framesSize(frames data.Frames) int64 {
	size := int64(0)
	for _, f := range frames {
		size += 256
		for _, field := range f.Fields {
			size += 64 + 8*int64(field.Len())
			if field.Type() == data.FieldTypeString {
				for i := range field.Len() {
					if v, ok := field.At(i).(string); ok {
						size += int64(len(v))
					}
				}
			}
			if field.Config != nil && field.Config.TypeConfig != nil && field.Config.TypeConfig.Enum != nil {
				for _, t := range field.Config.TypeConfig.Enum.Text {
					size += 16 + int64(len(t))
				}
			}
		}
	}
	return size
}
