package flamehouseexporter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"github.com/flamehouse/flamehouse/collector/flamehouseexporter/internal/pdatawire"
	"github.com/flamehouse/flamehouse/pkg/chclient"
	"github.com/flamehouse/flamehouse/pkg/ingest/pipeline"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// profilesExporter writes pushes through Flamehouse's ingest pipeline.
type profilesExporter struct {
	cfg       *Config
	logger    *zap.Logger
	telemetry *telemetry
	// tokens: the queue is persistent, so a request may be delivered again
	// after a crash; each request's samples then go under a token of its
	// content (model.Batch.DedupToken).
	tokens bool

	conn     clickhouse.Conn
	native   *chclient.NativeInserter
	writer   *writer.Writer
	pipeline *pipeline.Pipeline
}

func newExporter(cfg *Config, set exporter.Settings) (*profilesExporter, error) {
	t, err := newTelemetry(set.TelemetrySettings, set.ID)
	if err != nil {
		return nil, fmt.Errorf("flamehouse exporter metrics: %w", err)
	}
	return &profilesExporter{cfg: cfg, logger: set.Logger, telemetry: t, tokens: cfg.persistent()}, nil
}

// start connects to ClickHouse, applies the migrations when create_schema
// is on, and starts the writer. Over HTTP the samples go as Native blocks
// encoded by Flamehouse (as the ingest service sends them).
func (e *profilesExporter) start(ctx context.Context, _ component.Host) error {
	chCfg, err := e.cfg.clickhouse()
	if err != nil {
		return err
	}
	tables := e.cfg.tables()
	conn, err := chclient.Open(chCfg)
	if err != nil {
		return err
	}
	e.conn = conn
	if e.cfg.CreateSchema {
		m, err := schema.NewMigrator(tables, conn)
		if err != nil {
			return fmt.Errorf("flamehouse schema: %w", err)
		}
		rep, err := m.Migrate(ctx)
		if err != nil {
			return fmt.Errorf("apply flamehouse migrations to %s at %s: %w", tables.Database, chCfg.Address, err)
		}
		e.logger.Info("Flamehouse schema ready", zap.String("database", tables.Database), zap.Int("version", rep.Version),
			zap.Strings("applied", rep.Applied), zap.Strings("retention_changed", rep.RetentionChanged))
	}
	var native writer.NativeInserter
	if chCfg.Protocol == chclient.ProtocolHTTP {
		if e.native, err = chclient.NewNativeInserter(chCfg); err != nil {
			return err
		}
		native = e.native
	}
	// The writer's Prometheus metrics stay unregistered: the Collector's
	// telemetry carries ours (telemetry.go) and exporterhelper's.
	e.writer, err = writer.New(e.cfg.Writer, tables, conn, native, slog.New(zapslog.NewHandler(e.logger.Core())), nil)
	if err != nil {
		return err
	}
	e.pipeline = pipeline.New(e.writer, pipeline.Options{CPUSamplesAsTime: e.cfg.CPUSamplesAsTime}, e.telemetry)
	return nil
}

// shutdown writes what the writer accepted and closes the connections.
// exporterhelper has drained its queue (or left a persistent queue's items
// in storage) before.
func (e *profilesExporter) shutdown(ctx context.Context) error {
	e.telemetry.Shutdown()
	var err error
	if e.writer != nil {
		err = e.writer.Close(ctx)
	}
	if e.native != nil {
		e.native.Close()
	}
	if e.conn != nil {
		err = errors.Join(err, e.conn.Close())
	}
	return err
}

// push writes one request and returns once its rows are committed. The
// request goes through the pipeline as the ingest service's would: filled
// from pdata into the form the ingest decodes the wire into (pdatawire),
// or, when pdata does not show everything the wire holds or a persistent
// queue needs a token of the request's content, encoded with pprofile's
// protobuf encoding and decoded as the ingest does (pdatawire.Encode).
// Errors: permanent for profiles that fail validation (after the valid
// rest is written) and for the whole request when it cannot be stored at
// all; retryable for everything on ClickHouse's side.
func (e *profilesExporter) push(ctx context.Context, pd pprofile.Profiles) error {
	if e.pipeline == nil {
		return errors.New("flamehouse exporter: not started")
	}
	req := pipeline.Request{Tenant: e.cfg.Tenant}
	if !e.tokens {
		req.Decoded, _ = pdatawire.Request(pd) // nil when it must go the wire way
	}
	if req.Decoded == nil {
		req.Payload, req.AdjustDecoded = pdatawire.Encode(pd)
		if e.tokens {
			req.DedupToken = contentToken(e.cfg.Tenant, req.Payload)
		}
	}
	out, err := e.pipeline.Export(ctx, req)
	if req.Decoded != nil {
		pdatawire.Release(req.Decoded) // converted: the rows refer to pd, not to its tables
	}
	var invalid *pipeline.InvalidError
	switch {
	case errors.As(err, &invalid) && out.Profiles > 0:
		return consumererror.NewPermanent(fmt.Errorf("dropped all %d profiles: %w", out.Profiles, err))
	case errors.As(err, &invalid):
		return consumererror.NewPermanent(fmt.Errorf("dropped the request: %w", err))
	case errors.Is(err, writer.ErrQueueFull):
		return exporterhelper.NewThrottleRetry(err, time.Second)
	case err != nil:
		return err
	}
	if rerr := out.RejectedError(); rerr != nil {
		return consumererror.NewPermanent(rerr)
	}
	return nil
}

// contentToken names a request by its tenant and wire bytes, the same on
// every delivery of the request from a persistent queue.
func contentToken(tenant string, payload []byte) string {
	h := sha256.New()
	_, _ = h.Write([]byte(tenant))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write(payload)
	return "flamehouseexporter-" + hex.EncodeToString(h.Sum(nil)[:16])
}
