// Package ingest is Flamehouse's OTLP profiles ingest service: the
// receiver (package receiver) takes OTLP/gRPC and OTLP/HTTP exports,
// package convert validates and normalises them into rows, and package
// writer batches the rows into ClickHouse, acknowledging each request only
// after its rows are committed. Ingester runs them together as one dskit
// service: stopping it stops the listeners, lets requests in flight finish
// and drains the writer.
package ingest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/dskit/services"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flamehouse/flamehouse/pkg/ingest/pipeline"
	"github.com/flamehouse/flamehouse/pkg/ingest/receiver"
	"github.com/flamehouse/flamehouse/pkg/ingest/writer"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/selftrace"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// Config configures the ingest service.
type Config struct {
	// Enabled runs the OTLP endpoints. Default true.
	Enabled bool `yaml:"enabled"`
	// Receiver is the OTLP endpoints (listeners, TLS, auth, limits).
	Receiver receiver.Config `yaml:"receiver"`
	// Writer is batching and retries of writes to ClickHouse.
	Writer writer.Config `yaml:"writer"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Enabled: true, Receiver: receiver.DefaultConfig(), Writer: writer.DefaultConfig()}
}

// RegisterFlags binds the config to flags with the given prefix.
func (c *Config) RegisterFlags(f *flag.FlagSet, prefix string) {
	f.BoolVar(&c.Enabled, prefix+"enabled", c.Enabled, "run the OTLP profiles endpoints")
	c.Receiver.RegisterFlags(f, prefix)
	c.Writer.RegisterFlags(f, prefix+"writer.")
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	var err error
	if e := c.Receiver.Validate(); e != nil {
		err = errors.Join(err, e)
	}
	if e := c.Writer.Validate(); e != nil {
		err = errors.Join(err, e)
	}
	return err
}

// Ingester is the ingest service.
type Ingester struct {
	services.Service
	receiver *receiver.Receiver
	writer   *writer.Writer
	log      *slog.Logger
}

// New binds the listeners and starts the writer; start the returned
// service to serve requests. native, when not nil, carries the sample
// inserts (see writer.New). selftrace.WithTracerProvider traces export
// requests and the writes that carry them.
func New(cfg Config, tables schema.Config, conn clickhouse.Conn, native writer.NativeInserter, log *slog.Logger, reg *prometheus.Registry,
	opts ...selftrace.Option,
) (*Ingester, error) {
	return NewWithSink(cfg, tables, conn, native, nil, log, reg, opts...)
}

// NewWithSink is New with a sink that hears, after each committed batch,
// the executables of its unsymbolized frames (pipeline.NotifyUnsymbolized;
// the debuginfod fetcher); nil for none.
func NewWithSink(cfg Config, tables schema.Config, conn clickhouse.Conn, native writer.NativeInserter, sink pipeline.UnsymbolizedSink,
	log *slog.Logger, reg *prometheus.Registry, opts ...selftrace.Option,
) (*Ingester, error) {
	w, err := writer.New(cfg.Writer, tables, conn, native, log, reg, opts...)
	if err != nil {
		return nil, err
	}
	var pw pipeline.Writer = w
	if sink != nil {
		pw = pipeline.NotifyUnsymbolized(w, sink)
	}
	ready := func(ctx context.Context) error { return conn.Ping(ctx) }
	r, err := receiver.New(cfg.Receiver, pw, ready, log, reg, opts...)
	if err != nil {
		_ = w.Close(context.Background())
		return nil, err
	}
	in := &Ingester{receiver: r, writer: w, log: log}
	in.Service = services.NewBasicService(in.starting, in.running, in.stopping)
	return in, nil
}

func (in *Ingester) starting(context.Context) error {
	in.receiver.Start()
	return nil
}

func (in *Ingester) running(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-in.receiver.Err():
		if err != nil {
			return fmt.Errorf("OTLP listeners failed: %w", err)
		}
		return nil
	}
}

// stopping stops the listeners (requests in flight finish, each waiting
// for its rows), then drains the writer.
func (in *Ingester) stopping(error) error {
	in.receiver.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := in.writer.Close(ctx); err != nil {
		return fmt.Errorf("drain writer: %w", err)
	}
	in.log.Info("ingest stopped; every accepted batch is written")
	return nil
}

// drainTimeout bounds the writer drain at shutdown.
const drainTimeout = 60 * time.Second

// GRPCAddress is the bound OTLP/gRPC address.
func (in *Ingester) GRPCAddress() string { return in.receiver.GRPCAddress() }

// HTTPAddress is the bound OTLP/HTTP address.
func (in *Ingester) HTTPAddress() string { return in.receiver.HTTPAddress() }

// HandleSymbols serves the symbols upload endpoint on the HTTP listener
// (receiver.Receiver.HandleSymbols); call it before starting the service.
func (in *Ingester) HandleSymbols(store *symbols.Store, opts receiver.SymbolsOptions) {
	in.receiver.HandleSymbols(store, opts)
}
