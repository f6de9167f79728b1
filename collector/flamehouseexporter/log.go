package flamehouseexporter

import (
	"context"
	"log/slog"
	"slices"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapHandler lets Flamehouse's packages, which log with log/slog, log
// through the Collector's zap logger.
type zapHandler struct {
	log    *zap.Logger
	fields []zap.Field
	prefix string // groups, as "group."
}

// newSlog returns a slog.Logger that writes to l.
func newSlog(l *zap.Logger) *slog.Logger { return slog.New(&zapHandler{log: l}) }

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}

func (h *zapHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.Core().Enabled(zapLevel(l))
}

func (h *zapHandler) Handle(_ context.Context, r slog.Record) error {
	ce := h.log.Check(zapLevel(r.Level), r.Message)
	if ce == nil {
		return nil
	}
	fields := slices.Clip(h.fields)
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, h.field(a))
		return true
	})
	ce.Write(fields...)
	return nil
}

func (h *zapHandler) field(a slog.Attr) zap.Field {
	return zap.Any(h.prefix+a.Key, a.Value.Resolve().Any())
}

func (h *zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	next := *h
	next.fields = slices.Clone(h.fields)
	for _, a := range attrs {
		next.fields = append(next.fields, h.field(a))
	}
	return &next
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	next := *h
	next.prefix = h.prefix + name + "."
	return &next
}
