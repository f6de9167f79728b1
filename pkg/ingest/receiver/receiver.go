package receiver

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/grafana/dskit/server"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/flamehouse/flamehouse/pkg/ingest/pipeline"
	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// Receiver serves the OTLP endpoints.
type Receiver struct {
	cfg      Config
	pipeline *pipeline.Pipeline
	log      *slog.Logger
	metrics  *metrics
	limiter  *limiter
	server   *server.Server
	ready    func(context.Context) error
	tracer   trace.Tracer
	runErr   chan error
	stopOnce sync.Once
}

// New binds both listeners and prepares the endpoints; Start serves them.
// ready reports whether the service can take data (it backs /ready). With
// selftrace.WithTracerProvider every export request gets a server span
// (see tracing.go).
func New(cfg Config, w Writer, ready func(context.Context) error, log *slog.Logger, reg *prometheus.Registry, opts ...selftrace.Option) (*Receiver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("receiver config: %w", err)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	r := &Receiver{
		cfg: cfg, log: log, metrics: m, limiter: newLimiter(&cfg), ready: ready, runErr: make(chan error, 1),
		tracer: selftrace.Tracer(tracerScope, opts...),
	}
	r.pipeline = pipeline.New(w, pipeline.Options{CPUSamplesAsTime: cfg.CPUSamplesAsTime, MaxConcurrentConversions: cfg.conversions()}, m)
	scfg, err := r.serverConfig(reg)
	if err != nil {
		return nil, err
	}
	r.server, err = server.New(scfg)
	if err != nil {
		return nil, fmt.Errorf("start OTLP listeners: %w", err)
	}
	r.server.GRPC.RegisterService(&profilesServiceDesc, &grpcService{r: r})
	r.server.HTTP.Path(ProfilesPath).HandlerFunc(r.handleHTTP)
	r.server.HTTP.Path("/ready").Methods(http.MethodGet).HandlerFunc(r.handleReady)
	return r, nil
}

// serverConfig builds the dskit server configuration: dskit's own
// defaults, then ours.
func (r *Receiver) serverConfig(reg *prometheus.Registry) (server.Config, error) {
	var scfg server.Config
	scfg.RegisterFlags(flag.NewFlagSet("dskit", flag.ContinueOnError))
	grpcHost, grpcPort, err := splitPort(r.cfg.GRPCListenAddress)
	if err != nil {
		return scfg, err
	}
	httpHost, httpPort, err := splitPort(r.cfg.HTTPListenAddress)
	if err != nil {
		return scfg, err
	}
	scfg.GRPCListenAddress, scfg.GRPCListenPort = grpcHost, grpcPort
	scfg.HTTPListenAddress, scfg.HTTPListenPort = httpHost, httpPort
	scfg.GRPCServerMaxRecvMsgSize = r.cfg.MaxRequestBytes
	scfg.GRPCServerMaxSendMsgSize = 4 << 20
	scfg.GRPCOptions = append(scfg.GRPCOptions, grpc.ForceServerCodecV2(newRawCodec()),
		grpc.RPCDecompressor(requestDecompressor{limit: r.cfg.MaxRequestBytes})) //nolint:staticcheck // SA1019: the one server-scoped decompressor gRPC has; see requestDecompressor
	scfg.MetricsNamespace = "flamehouse"
	scfg.RegisterInstrumentation = true // /metrics and /debug/pprof
	scfg.Registerer, scfg.Gatherer = reg, reg
	scfg.Log = kitLogger{r.log}
	scfg.SignalHandler = noSignals{stop: make(chan struct{})}
	scfg.ServerGracefulShutdownTimeout = r.cfg.ShutdownTimeout
	if t := r.cfg.TLS; t.Enabled() {
		tls := server.TLSConfig{TLSCertPath: t.CertFile, TLSKeyPath: t.KeyFile}
		if t.ClientCAFile != "" {
			tls.ClientCAs, tls.ClientAuth = t.ClientCAFile, "RequireAndVerifyClientCert"
		}
		scfg.HTTPTLSConfig, scfg.GRPCTLSConfig = tls, tls
	}
	return scfg, nil
}

func splitPort(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("listen address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", 0, fmt.Errorf("listen address %q: port: %w", addr, err)
	}
	return host, p, nil
}

// Start serves both listeners in the background.
func (r *Receiver) Start() {
	r.log.Info("OTLP profiles endpoints listening", "grpc", r.GRPCAddress(), "http", "http://"+r.HTTPAddress()+ProfilesPath)
	go func() { r.runErr <- r.server.Run() }()
}

// Err reports a listener failure after Start.
func (r *Receiver) Err() <-chan error { return r.runErr }

// Stop stops accepting requests and waits for those in flight (each waits
// for its rows to be committed), up to the shutdown timeout.
func (r *Receiver) Stop() {
	r.stopOnce.Do(func() {
		r.server.Shutdown()
		r.server.Stop()
	})
}

// GRPCAddress and HTTPAddress are the bound listen addresses.
func (r *Receiver) GRPCAddress() string { return r.server.GRPCListenAddr().String() }

// HTTPAddress is the bound OTLP/HTTP address.
func (r *Receiver) HTTPAddress() string { return r.server.HTTPListenAddr().String() }

func (r *Receiver) handleReady(w http.ResponseWriter, req *http.Request) {
	if r.ready != nil {
		if err := r.ready(req.Context()); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	_, _ = io.WriteString(w, "ready\n")
}

// noSignals leaves signal handling to the service.
type noSignals struct{ stop chan struct{} }

func (n noSignals) Loop() { <-n.stop }

func (n noSignals) Stop() {
	select {
	case <-n.stop:
	default:
		close(n.stop)
	}
}

// kitLogger adapts slog to the go-kit logger dskit expects.
type kitLogger struct{ l *slog.Logger }

func (k kitLogger) Log(keyvals ...any) error {
	level, msg := slog.LevelInfo, ""
	attrs := make([]any, 0, len(keyvals))
	for i := 0; i+1 < len(keyvals); i += 2 {
		key := fmt.Sprint(keyvals[i])
		switch key {
		case "level":
			switch fmt.Sprint(keyvals[i+1]) {
			case "debug":
				level = slog.LevelDebug
			case "warn":
				level = slog.LevelWarn
			case "error":
				level = slog.LevelError
			}
		case "msg":
			msg = fmt.Sprint(keyvals[i+1])
		default:
			attrs = append(attrs, key, keyvals[i+1])
		}
	}
	k.l.Log(context.Background(), level, msg, attrs...)
	return nil
}
