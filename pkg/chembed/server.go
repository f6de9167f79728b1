package chembed

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/ch-go/compress"

	"github.com/flamehouse/flamehouse/pkg/chembed/sqlguard"
	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// Server serves an Engine over ClickHouse's HTTP interface.
type Server struct {
	engine *Engine
	cfg    Config
	log    *slog.Logger
	spool  *spooler
	users  *users
	http   *http.Server
	// inflight counts requests being handled, for graceful shutdown.
	inflight sync.WaitGroup
	// tracer traces requests with a traceparent (nil: none; see tracing.go).
	tracer atomic.Pointer[tracerRef]
}

// NewServer returns an HTTP server for engine that follows the listen,
// authentication and limit fields of cfg (usually engine.Config(); the
// engine fields of cfg are ignored). Call Serve to start it and Shutdown to
// stop it; the engine stays open.
func NewServer(engine *Engine, cfg Config, log *slog.Logger) (*Server, error) {
	cfg = cfg.withDefaults()
	cfg.DataDir = engine.cfg.DataDir
	cfg.UsersFile = cfg.UsersFilePath()
	cfg.TenantTables = engine.cfg.TenantTables // the engine's row policies
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("embedded clickhouse server config: %w", err)
	}
	if log == nil {
		log = engine.log
	}
	s := &Server{engine: engine, cfg: cfg, log: log, spool: newSpooler(cfg.DataDir, cfg.MaxSpoolBytes), users: newUsers(cfg, log)}
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// Listen opens the configured listen address.
func (s *Server) Listen(ctx context.Context) (net.Listener, error) {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", s.cfg.ListenAddress)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", s.cfg.ListenAddress, err)
	}
	return ln, nil
}

// Serve serves HTTP on ln until Shutdown. It returns nil after a shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.log.Info("embedded clickhouse listening", "address", ln.Addr().String(), "url", "http://"+ln.Addr().String())
	if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve embedded clickhouse: %w", err)
	}
	return nil
}

// Shutdown stops accepting requests and waits, up to the configured
// shutdown timeout or ctx, for running requests to finish (spooled inserts
// included). After the timeout it closes open client connections; requests
// still running in the engine finish on their own (bounded by the
// execution time cap) before the engine can be closed.
func (s *Server) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.http.Close())
	}
	s.inflight.Wait()
	return err
}

// ServeHTTP implements the HTTP interface's "/" (queries), "/ping" and
// "/replicas_status" endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	switch r.URL.Path {
	case "/ping", "/replicas_status":
		writeOK(w)
		return
	case "/":
	default:
		writeError(w, newException(CodeUnknownException, "There is no handle %s", r.URL.Path).withStatus(http.StatusNotFound), false)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if !r.URL.Query().Has("query") {
			writeOK(w)
			return
		}
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		writeError(w, newException(CodeBadArguments, "method %s is not allowed", r.Method).withStatus(http.StatusMethodNotAllowed), false)
		return
	}
	start := time.Now()
	r, span, traced := s.startSpan(r)
	var verb string
	var err error
	selftrace.Do(r.Context(), func(context.Context) { verb, err = s.handle(w, r) })
	if err != nil {
		writeError(w, err, r.URL.Query().Get("compress") == "1")
	}
	if traced {
		selftrace.Finish(span, err)
	}
	s.log.Debug("request", "verb", verb, "duration", time.Since(start), "error", err)
}

func writeOK(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	_, _ = io.WriteString(w, "Ok.\n")
}

// handle runs one query request. An error returned here has not been
// written yet; errors after the response started are written in-band.
func (s *Server) handle(w http.ResponseWriter, r *http.Request) (verb string, err error) {
	who, err := s.authenticate(r)
	if err != nil {
		return "", err
	}
	req, err := s.parseRequest(r)
	if err != nil {
		return "", err
	}
	if err := s.applyRole(req, who); err != nil {
		return "", err
	}
	body := io.Reader(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	encoding := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	if req.queryParam == "" && encoding != "" && encoding != "identity" {
		// The SQL itself is compressed: it has to be read here.
		if body, err = decompress(body, encoding); err != nil {
			return "", err
		}
		encoding = ""
	}
	cmd, err := s.readCommand(req, body, encoding)
	if err != nil {
		return "", err
	}
	if err := s.checkWriterTarget(req, cmd); err != nil {
		return cmd.stmt.Verb, err
	}
	describeSpan(r.Context(), req.database, cmd)
	if cmd.stmt.OutputFormat != "" {
		req.format = cmd.stmt.OutputFormat
	}
	if isHello(cmd.sql) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(helloBlock(s.engine.info, req.clientRevision))
		return "hello", nil
	}
	sess, err := s.engine.pool.acquire(r.Context(), s.cfg.QueueTimeout)
	if err != nil {
		return cmd.stmt.Verb, err
	}
	defer s.engine.pool.release(sess)
	if err := sess.prepare(req.database, req.settings); err != nil {
		return cmd.stmt.Verb, err
	}
	if cmd.stmt.ChangesSession {
		defer func() {
			if resetErr := sess.reset(); resetErr != nil {
				s.log.Warn("session reset failed", "error", resetErr)
			}
		}()
	}
	switch {
	case cmd.stmt.Insert != nil:
		return cmd.stmt.Verb, s.insert(w, req, sess, cmd)
	case cmd.stmt.Streamable() && !req.waitEndOfQuery:
		return cmd.stmt.Verb, s.stream(w, r, req, sess, cmd.sql)
	default:
		return cmd.stmt.Verb, s.buffered(w, req, sess, cmd.sql)
	}
}

// checkWriterTarget keeps a writer's inserts to the tenant tables.
func (s *Server) checkWriterTarget(req *request, cmd *command) error {
	if req.role != RoleWriter || cmd.stmt.Verb != "insert" {
		return nil
	}
	db, table, ok := sqlguard.InsertTarget(cmd.stmt.Insert.Head)
	if db == "" {
		db = req.database
	}
	if ok && slices.Contains(s.cfg.TenantTables, db+"."+table) {
		return nil
	}
	return accessDenied("a writer may insert only into the tables it writes (%s)", strings.Join(s.cfg.TenantTables, ", "))
}

// command is what a request asks the engine to do.
type command struct {
	stmt *sqlguard.Statement
	// sql is the statement text (for inserts with data: the text before it).
	sql string
	// data is the INSERT data that follows the statement, or nil.
	data io.Reader
	// compression is the engine's COMPRESSION name for data, or "".
	compression string
}

// readCommand assembles the statement from the query parameter and the
// body as a real server does (query parameter, newline, body), checks it
// with the guard and separates INSERT data from SQL. SQL is bounded by
// MaxQueryBytes; INSERT data only by MaxBodyBytes.
func (s *Server) readCommand(req *request, body io.Reader, encoding string) (*command, error) {
	opts := sqlguard.Options{ReadOnly: req.readOnly, Rules: req.role.guardRules(), TableOnlyFunctions: s.engine.tableOnlyFunctions}
	limit := s.cfg.MaxQueryBytes
	if req.queryParam != "" {
		return commandFromParam(req.queryParam, body, encoding, opts, limit)
	}
	prefix, truncated, err := readLimited(body, limit)
	if err != nil {
		return nil, err
	}
	if !truncated {
		return commandFromSQL(string(prefix), nil, opts)
	}
	// Larger than any SQL may be: acceptable only as INSERT ... FORMAT x
	// followed by data.
	cmd, err := commandFromSQL(string(prefix), body, opts)
	if err != nil || cmd.stmt.Insert == nil || cmd.stmt.Insert.Format == "Values" {
		return nil, tooLarge(limit)
	}
	return cmd, nil
}

// commandFromParam assembles the command of a request with a query
// parameter: its statement, then the body as INSERT data (of a format
// other than Values) or as the rest of the SQL.
func commandFromParam(param string, body io.Reader, encoding string, opts sqlguard.Options, limit int64) (*command, error) {
	if int64(len(param)) > limit {
		return nil, tooLarge(limit)
	}
	stmt, err := inspect(param, opts)
	if err != nil {
		return nil, err
	}
	if ins := stmt.Insert; ins != nil && ins.Format != "Values" {
		return insertFromParam(param, stmt, body, encoding)
	}
	if encoding != "" && encoding != "identity" {
		if body, err = decompress(body, encoding); err != nil {
			return nil, err
		}
	}
	rest, truncated, err := readLimited(body, limit-int64(len(param)))
	if err != nil {
		return nil, err
	}
	if truncated {
		return nil, tooLarge(limit)
	}
	if len(rest) == 0 {
		return &command{stmt: stmt, sql: param}, nil
	}
	return commandFromSQL(param+"\n"+string(rest), nil, opts)
}

// insertFromParam is the command of an INSERT in the query parameter: its
// data is what follows FORMAT in the parameter, then the body, which the
// engine decompresses.
func insertFromParam(param string, stmt *sqlguard.Statement, body io.Reader, encoding string) (*command, error) {
	inline := param[stmt.Insert.DataOffset:]
	comp, err := engineCompression(encoding)
	if err != nil {
		return nil, err
	}
	data := body
	if inline != "" {
		if comp != "" {
			return nil, newException(CodeBadArguments, "INSERT data in the query parameter cannot be combined with a compressed body")
		}
		data = io.MultiReader(strings.NewReader(inline+"\n"), body)
	}
	return &command{stmt: stmt, sql: param, data: data, compression: comp}, nil
}

// inspect runs the guard (package sqlguard) over a statement; a refused
// statement is the exception the server answers with.
func inspect(sql string, opts sqlguard.Options) (*sqlguard.Statement, error) {
	stmt, err := sqlguard.Inspect(sql, opts)
	var refused *sqlguard.Error
	if errors.As(err, &refused) {
		return nil, newException(refused.Code, "%s", refused.Message)
	}
	return stmt, err
}

// commandFromSQL inspects a complete (or, with more data to come, a
// prefix of a) SQL text.
func commandFromSQL(sql string, more io.Reader, opts sqlguard.Options) (*command, error) {
	stmt, err := inspect(sql, opts)
	if err != nil {
		return nil, err
	}
	cmd := &command{stmt: stmt, sql: sql}
	if ins := stmt.Insert; ins != nil {
		data := io.Reader(strings.NewReader(sql[ins.DataOffset:]))
		if more != nil {
			data = io.MultiReader(data, more)
		}
		cmd.data = data
	}
	return cmd, nil
}

func tooLarge(limit int64) *Exception {
	return newException(CodeQueryIsTooLarge, "the query text exceeds %d bytes (max_query_bytes); send INSERT data after FORMAT", limit)
}

// readLimited reads up to limit bytes; truncated reports that more followed.
func readLimited(r io.Reader, limit int64) (data []byte, truncated bool, err error) {
	data, err = io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, bodyError(err)
	}
	if int64(len(data)) > limit {
		return data[:limit], true, nil
	}
	return data, false, nil
}

// bodyError turns a failure to read the request body into an Exception.
func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return newException(CodeQueryIsTooLarge, "the request body exceeds %d bytes (max_body_bytes)", tooBig.Limit)
	}
	return newException(CodeBadArguments, "reading the request body: %v", err)
}

// decompress undoes an HTTP Content-Encoding that Go can read.
func decompress(r io.Reader, encoding string) (io.Reader, error) {
	switch encoding {
	case "gzip", "x-gzip":
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, newException(CodeBadArguments, "gzip body: %v", err)
		}
		return z, nil
	case "deflate":
		z, err := zlib.NewReader(r)
		if err != nil {
			return nil, newException(CodeBadArguments, "deflate body: %v", err)
		}
		return z, nil
	}
	return nil, newException(CodeNotImplemented, "Content-Encoding %q is supported only for INSERT data sent after a query parameter; "+
		"use gzip or deflate for SQL bodies", encoding)
}

// engineCompression maps an HTTP Content-Encoding to the engine's
// COMPRESSION name for FROM INFILE.
func engineCompression(encoding string) (string, error) {
	switch encoding {
	case "", "identity":
		return "", nil
	case "gzip", "x-gzip":
		return "gzip", nil
	case "deflate", "br", "xz", "zstd", "lz4", "bz2", "snappy":
		return encoding, nil
	}
	return "", newException(CodeNotImplemented, "unsupported Content-Encoding %q", encoding).withStatus(http.StatusUnsupportedMediaType)
}

// buffered runs a statement whose whole output is sent at once.
func (s *Server) buffered(w http.ResponseWriter, req *request, sess *session, sql string) error {
	limit := s.cfg.MaxResultBytes
	_, err := sess.conn.Query(sql, req.format, req.params, func(out []byte, stats Stats) error {
		if int64(len(out)) > limit {
			return newException(CodeTooManyRowsOrBytes, "the result is %d bytes, more than max_result_bytes (%d) allows for a "+
				"buffered result; SELECT results are streamed unless wait_end_of_query=1", len(out), limit)
		}
		s.setResultHeaders(w, req)
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.Header().Set("X-ClickHouse-Summary", summary(stats, len(out)))
		// A client that went away cannot be told anything. The body is query
		// output with its format's content type, never HTML.
		_, _ = w.Write(out) //nolint:gosec // G705: see above
		return nil
	})
	return err
}

// stream runs a SELECT and writes its output block by block as the engine
// produces it. An error after the first block is written in-band, in the
// tagged __exception__ frame clickhouse-go and other clients recognise.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *request, sess *session, sql string) error {
	rc := http.NewResponseController(w)
	tag := exceptionTag()
	started := false
	_, err := sess.conn.Stream(sql, req.format, req.params, func(chunk []byte) error {
		if err := r.Context().Err(); err != nil {
			return err // the client went away: cancel the query
		}
		if !started {
			s.setResultHeaders(w, req)
			w.Header().Set("X-ClickHouse-Exception-Tag", tag)
			w.WriteHeader(http.StatusOK)
			started = true
		}
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		return rc.Flush()
	})
	var ex *Exception
	switch {
	case err == nil && !started:
		s.setResultHeaders(w, req)
		w.Header().Set("Content-Length", "0")
		return nil
	case err == nil:
		return nil
	case !started && errors.As(err, &ex) && ex.Code == CodeBadArguments && strings.Contains(ex.Message, "Streaming query is not supported"):
		return s.buffered(w, req, sess, sql)
	case !started:
		return err
	case errors.As(err, &ex):
		_, _ = w.Write(exceptionFrame(ex, tag))
		return nil
	default:
		s.log.Debug("stream aborted", "error", err)
		return nil
	}
}

// streamWriteTimeout bounds how long one streamed chunk may take to reach a
// slow client before the query is cancelled and its connection freed.
const streamWriteTimeout = time.Minute

// exceptionTag returns the random tag that marks this response's in-band
// exception frame, so result data cannot fake one.
func exceptionTag() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}

// exceptionFrame encodes an error that happened after a 200 response began:
// "\r\n__exception__\r\n<tag>\r\n<message>\n<length> <tag>\r\n__exception__\r\n".
func exceptionFrame(ex *Exception, tag string) []byte {
	msg := ex.Error() + "\n"
	var b bytes.Buffer
	b.WriteString("\r\n__exception__\r\n" + tag + "\r\n")
	b.WriteString(msg)
	b.WriteString(strconv.Itoa(len(msg)) + " " + tag + "\r\n__exception__\r\n")
	return b.Bytes()
}

// insert spools INSERT data to a file and lets the engine read it with
// INSERT ... FROM INFILE: libchdb truncates binary data passed inline at the
// first "\n\n", and the spool keeps large bodies out of memory. The spool
// file is removed when the statement ends.
func (s *Server) insert(w http.ResponseWriter, req *request, sess *session, cmd *command) error {
	path, err := s.spool.write(cmd.data)
	defer s.spool.remove(path)
	if err != nil {
		return err
	}
	ins := cmd.stmt.Insert
	sql := ins.Head + " FROM INFILE " + quoteString(path)
	if cmd.compression != "" {
		sql += " COMPRESSION " + quoteString(cmd.compression)
	}
	if ins.Settings != "" {
		sql += " " + ins.Settings
	}
	sql += " FORMAT " + ins.Format
	_, err = sess.conn.Query(sql, req.format, req.params, func(out []byte, stats Stats) error {
		w.Header().Set("X-ClickHouse-Summary", summary(stats, len(out)))
		s.setResultHeaders(w, req)
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		_, _ = w.Write(out) //nolint:gosec // G705: INSERT output in the request's format, never HTML
		return nil
	})
	return err
}

// setResultHeaders sets the headers a real server sends with a result.
func (s *Server) setResultHeaders(w http.ResponseWriter, req *request) {
	h := w.Header()
	h.Set("Content-Type", contentType(req.format))
	h.Set("X-ClickHouse-Format", req.format)
	h.Set("X-ClickHouse-Timezone", s.engine.info.timezone)
	h.Set("X-ClickHouse-Server-Display-Name", s.engine.info.displayName)
	if req.queryID != "" {
		h.Set("X-ClickHouse-Query-Id", req.queryID)
	}
}

func contentType(format string) string {
	f := strings.ToLower(format)
	switch {
	case strings.HasPrefix(f, "json"):
		return "application/json; charset=UTF-8"
	case strings.HasPrefix(f, "tabseparated"), strings.HasPrefix(f, "tsv"):
		return "text/tab-separated-values; charset=UTF-8"
	case strings.HasPrefix(f, "csv"):
		return "text/csv; charset=UTF-8"
	case strings.HasPrefix(f, "pretty"), f == "vertical", f == "markdown":
		return "text/plain; charset=UTF-8"
	}
	return "application/octet-stream"
}

// summary renders X-ClickHouse-Summary.
func summary(st Stats, resultBytes int) string {
	raw, _ := json.Marshal(map[string]string{
		"read_rows":     strconv.FormatUint(st.RowsRead, 10),
		"read_bytes":    strconv.FormatUint(st.BytesRead, 10),
		"written_rows":  strconv.FormatUint(st.RowsWritten, 10),
		"written_bytes": strconv.FormatUint(st.BytesWritten, 10),
		"result_bytes":  strconv.Itoa(resultBytes),
		"elapsed_ns":    strconv.FormatInt(st.Elapsed.Nanoseconds(), 10),
	})
	return string(raw)
}

// writeError sends an error the way a real server does: the status from
// the error code, X-ClickHouse-Exception-Code and the text in the body.
// When the request asked for compressed output (compress=1) the text goes
// in one ClickHouse compressed block, as a real server sends it: clients
// such as clickhouse-go before v2.50 read error bodies through their block
// decompressor and would otherwise report garbage instead of the message
// (the embedded server refuses such requests, and says why).
func writeError(w http.ResponseWriter, err error, compressed bool) {
	var ex *Exception
	if !errors.As(err, &ex) {
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			ex = newException(CodeQueryWasCancelled, "%v", err)
		default:
			ex = newException(CodeUnknownException, "%v", err)
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=UTF-8")
	h.Set("X-ClickHouse-Exception-Code", strconv.Itoa(ex.Code))
	if ex.Name != "" {
		h.Set("X-ClickHouse-Exception-Name", ex.Name)
	}
	h.Del("Content-Length")
	body := []byte(ex.Error() + "\n")
	if compressed {
		// Method NONE: the text framed, not compressed, which every reader
		// of ClickHouse compressed blocks accepts.
		block := compress.NewWriter(compress.LevelZero, compress.None)
		if block.Compress(body) == nil {
			body = block.Data
		}
	}
	w.WriteHeader(ex.status())
	_, _ = w.Write(body)
}
