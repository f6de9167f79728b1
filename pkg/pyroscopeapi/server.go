package pyroscopeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"

	"github.com/flamehouse/flamehouse/pkg/ingest/receiver"
	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/schema"
)

// TenantHeader is the header Pyroscope (and Grafana's Pyroscope datasource,
// as a custom header) names the tenant with.
const TenantHeader = "X-Scope-OrgID"

// Bounds of the caches the API keeps across requests, as the datasource's.
const (
	cachedFrameIDs = 4 << 20
	cachedLabels   = 1 << 20
	maxResultRows  = 5_000_000
)

// Server is the Pyroscope-compatible query API.
type Server struct {
	cfg Config
	// ingest is the ingest's configuration: its auth, default tenant and
	// TLS apply to the API too.
	ingest   receiver.Config
	conn     clickhouse.Conn
	tables   schema.Config
	symbols  *query.Symbols
	cache    *query.Cache
	resolver *query.Resolver
	log      *slog.Logger
	// now is the clock of relative times and default ranges.
	now func() time.Time

	srv  *http.Server
	ln   net.Listener
	done chan error
}

// New returns the API over the tables of conn; ingest supplies the auth,
// default tenant and TLS settings.
func New(cfg Config, ingest receiver.Config, conn clickhouse.Conn, tables schema.Config, log *slog.Logger) *Server {
	return &Server{
		cfg: cfg, ingest: ingest, conn: conn, tables: tables, log: log, now: time.Now,
		symbols: query.NewSymbols(cachedFrameIDs, cachedLabels), cache: &query.Cache{},
		resolver: query.NewResolver(query.DefaultResolverBytes),
	}
}

// Handler serves the API: the querier service (connect, gRPC, gRPC-Web),
// the render endpoints and /ready.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	path, h := querierv1connect.NewQuerierServiceHandler(&querier{s: s},
		connect.WithInterceptors(connect.UnaryInterceptorFunc(s.authInterceptor)))
	mux.Handle(path, h)
	mux.Handle("GET /pyroscope/render", s.httpHandler(s.render))
	mux.Handle("GET /pyroscope/render-diff", s.httpHandler(s.renderDiff))
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ready\n")) })
	return mux
}

// Start listens on the configured address and serves in the background:
// HTTP/1.1 and HTTP/2 (h2c without TLS, which gRPC clients need).
func (s *Server) Start(ctx context.Context) error {
	tlsConfig, err := s.tlsConfig()
	if err != nil {
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.cfg.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.ListenAddress, err)
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(tlsConfig == nil)
	s.srv = &http.Server{
		Handler: s.Handler(), Protocols: protocols, TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	s.ln, s.done = ln, make(chan error, 1)
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	s.log.Info("Pyroscope-compatible query API listening", "url", scheme+"://"+ln.Addr().String())
	return nil
}

// Addr is the bound address (after Start).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Err reports a listener failure after Start.
func (s *Server) Err() <-chan error { return s.done }

// Stop stops accepting requests and waits for those in flight until ctx
// ends.
func (s *Server) Stop(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Shutdown(ctx)
}

// tlsConfig is the ingest's TLS (nil without): its certificate, and with a
// client CA file mutual TLS.
func (s *Server) tlsConfig() (*tls.Config, error) {
	t := s.ingest.TLS
	if !t.Enabled() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("pyroscope api tls: %w", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("pyroscope api tls: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("pyroscope api tls: %s holds no PEM certificate", t.ClientCAFile)
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// Errors of the tenant check.
var (
	errTenantHeader = errors.New("tenant header " + TenantHeader + " names another tenant than the credentials")
	errBadTenant    = errors.New("tenant header " + TenantHeader + " must be 1 to 150 printable ASCII characters")
)

// tenantOf is the tenant of a request. With auth on, the credentials
// decide (the ingest's tokens and basic credentials), and a tenant header,
// when sent, must name the same tenant. With auth off, the tenant header
// picks the tenant, as Pyroscope's does, else the ingest's default tenant.
func (s *Server) tenantOf(h http.Header) (string, error) {
	tenant, err := s.ingest.Authenticate(h.Get("Authorization"))
	if err != nil {
		return "", err
	}
	org, sent := strings.TrimSpace(h.Get(TenantHeader)), h.Get(TenantHeader) != ""
	if sent && !validTenant(org) {
		return "", errBadTenant
	}
	switch {
	case !sent:
		return tenant, nil
	case s.ingest.Auth.Enabled && org != tenant:
		return "", errTenantHeader
	}
	return org, nil
}

func validTenant(t string) bool {
	if t == "" || len(t) > 150 {
		return false
	}
	for i := range len(t) {
		if t[i] < 0x21 || t[i] > 0x7e {
			return false
		}
	}
	return true
}

type tenantKey struct{}

// authInterceptor resolves the tenant of a connect request.
func (s *Server) authInterceptor(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		tenant, err := s.tenantOf(req.Header())
		if err != nil {
			return nil, connect.NewError(tenantCode(err), err)
		}
		return next(context.WithValue(ctx, tenantKey{}, tenant), req)
	}
}

func tenantCode(err error) connect.Code {
	switch {
	case errors.Is(err, receiver.ErrUnauthenticated):
		return connect.CodeUnauthenticated
	case errors.Is(err, errTenantHeader):
		return connect.CodePermissionDenied
	}
	return connect.CodeInvalidArgument
}

// httpHandler serves a JSON endpoint: the tenant resolved, errors as
// {"code", "message"} with the HTTP status of their connect code.
func (s *Server) httpHandler(serve func(ctx context.Context, r *http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, err := s.tenantOf(r.Header)
		if err != nil {
			err = connect.NewError(tenantCode(err), err)
		} else {
			var body any
			if body, err = serve(context.WithValue(r.Context(), tenantKey{}, tenant), r); err == nil {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(body)
				return
			}
		}
		code := connect.CodeOf(err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(httpStatus(code))
		msg := err.Error()
		var ce *connect.Error
		if errors.As(err, &ce) {
			msg = ce.Message()
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"code": code.String(), "message": msg})
	})
}

// httpStatuses are the HTTP statuses connect gives codes; the others are
// 500.
var httpStatuses = map[connect.Code]int{
	connect.CodeInvalidArgument: http.StatusBadRequest, connect.CodeFailedPrecondition: http.StatusBadRequest,
	connect.CodeOutOfRange: http.StatusBadRequest, connect.CodeUnauthenticated: http.StatusUnauthorized,
	connect.CodePermissionDenied: http.StatusForbidden, connect.CodeNotFound: http.StatusNotFound,
	connect.CodeUnimplemented: http.StatusNotImplemented, connect.CodeDeadlineExceeded: http.StatusGatewayTimeout,
	connect.CodeUnavailable: http.StatusServiceUnavailable,
}

// httpStatus is the HTTP status connect gives a code.
func httpStatus(c connect.Code) int {
	if s, ok := httpStatuses[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// engine is the query engine of a request's tenant, with the request's
// ClickHouse settings on ctx: the time limit, the result bound and a
// log_comment naming the API method.
func (s *Server) engine(ctx context.Context, method string) (context.Context, *query.Engine) {
	tenant, _ := ctx.Value(tenantKey{}).(string)
	ctx = query.WithSettings(ctx, clickhouse.Settings{
		"max_execution_time": int(s.cfg.QueryTimeout.Seconds()), "max_result_rows": maxResultRows, "result_overflow_mode": "throw",
		"log_comment": "flamehouse pyroscope_api:" + method,
	})
	return ctx, &query.Engine{Conn: s.conn, Tables: s.tables, Tenant: tenant, Symbols: s.symbols, Cache: s.cache, Resolver: s.resolver}
}

// answerErr turns an engine error into a connect error: the user's
// mistakes are InvalidArgument, a time limit DeadlineExceeded, the rest
// Internal (logged).
func (s *Server) answerErr(ctx context.Context, method string, err error) error {
	var ce *connect.Error
	switch {
	case errors.As(err, &ce):
		return err
	case errors.Is(err, query.ErrInvalidQuery):
		return connect.NewError(connect.CodeInvalidArgument, err)
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "TIMEOUT_EXCEEDED"):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	}
	s.log.WarnContext(ctx, "pyroscope api query failed", "method", method, "error", err)
	return connect.NewError(connect.CodeInternal, err)
}
