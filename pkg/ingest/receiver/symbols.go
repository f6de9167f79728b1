package receiver

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// SymbolsPathPrefix is the path of the symbols upload endpoint:
// PUT /v1/symbols/<build id>.
const SymbolsPathPrefix = "/v1/symbols/"

// maxSymbolUploads is the number of uploads read and stored at once; more
// wait for their turn (an upload holds its file's ranges in memory).
const maxSymbolUploads = 2

// SymbolsOptions configure the symbols upload endpoint.
type SymbolsOptions struct {
	// MaxBytes is the largest file accepted (after decompression).
	MaxBytes int64
	// Timeout bounds one upload: reading the body, extracting and storing
	// the symbols (the listener's own read and write timeouts, meant for
	// OTLP requests, are lifted for it).
	Timeout time.Duration
	// TempDir is where bodies are spooled ("" for the system's).
	TempDir string
}

// symbolsHandler serves PUT /v1/symbols/<build id>.
type symbolsHandler struct {
	r     *Receiver
	store *symbols.Store
	opts  SymbolsOptions
	slots chan struct{}
}

// HandleSymbols serves PUT /v1/symbols/<build id> on the HTTP listener:
// the body is an ELF file (executable, shared library, separate debug
// file or Go binary; gzip Content-Encoding accepted) whose symbols are
// stored for the request's tenant, authenticated as the OTLP endpoints
// are. The build id in the path must be the file's (GNU build id in hex,
// or the Go build id). Bodies over opts.MaxBytes (after decompression)
// are refused with 413; the body is spooled to a temporary file and
// removed afterwards. Call it before Start.
func (r *Receiver) HandleSymbols(store *symbols.Store, opts SymbolsOptions) {
	h := &symbolsHandler{r: r, store: store, opts: opts, slots: make(chan struct{}, maxSymbolUploads)}
	r.server.HTTP.PathPrefix(SymbolsPathPrefix).Handler(h)
}

// symbolsError is an upload's failure: its status and message.
type symbolsError struct {
	status int
	msg    string
}

func (e *symbolsError) Error() string { return e.msg }

func (h *symbolsHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if h.opts.Timeout > 0 {
		// Lift the listener's deadlines (set for OTLP requests) for this
		// request; a writer that cannot (a test's recorder) keeps them.
		rc := http.NewResponseController(w)
		deadline := time.Now().Add(h.opts.Timeout)
		_ = rc.SetReadDeadline(deadline)
		_ = rc.SetWriteDeadline(deadline)
		ctx, cancel := context.WithDeadline(req.Context(), deadline)
		defer cancel()
		req = req.WithContext(ctx)
	}
	res, serr := h.serve(req)
	if serr != nil {
		if serr.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", http.MethodPut)
		}
		h.r.metrics.requests.WithLabelValues("symbols", outcome(serr.status)).Inc()
		h.r.log.Info("symbols upload refused", "status", serr.status, "error", serr.msg, "path", req.URL.Path)
		writeJSON(w, serr.status, map[string]string{"error": serr.msg})
		return
	}
	h.r.metrics.requests.WithLabelValues("symbols", "ok").Inc()
	h.r.log.Info("symbols uploaded", "build_id", res.BuildID, "file", res.FileName, "symbols", res.Sources(),
		"ranges", res.Ranges, "seconds", res.Seconds, "merged", res.Merged)
	writeJSON(w, http.StatusOK, res)
}

// outcome names a refused upload's status for
// flamehouse_ingest_requests_total{protocol="symbols"}.
func outcome(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "unauthenticated"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusUnprocessableEntity:
		return "unprocessable"
	case http.StatusMethodNotAllowed:
		return "method"
	case http.StatusUnsupportedMediaType:
		return "content_encoding"
	case http.StatusServiceUnavailable:
		return "unavailable"
	case http.StatusInternalServerError:
		return "error"
	}
	return "bad_request"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", contentJSON)
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func (h *symbolsHandler) serve(req *http.Request) (symbols.Uploaded, *symbolsError) {
	var none symbols.Uploaded
	if req.Method != http.MethodPut {
		return none, &symbolsError{http.StatusMethodNotAllowed, "use PUT " + SymbolsPathPrefix + "<build id> with the file as the body"}
	}
	buildID, err := checkBuildIDPath(strings.TrimPrefix(req.URL.Path, SymbolsPathPrefix))
	if err != nil {
		return none, &symbolsError{http.StatusBadRequest, err.Error()}
	}
	tenant, err := h.r.cfg.Authenticate(req.Header.Get("Authorization"))
	if err != nil {
		return none, &symbolsError{http.StatusUnauthorized, err.Error()}
	}
	if ok, serr := uploadFits(req.ContentLength, h.opts.MaxBytes); !ok {
		return none, serr
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	case <-req.Context().Done():
		return none, &symbolsError{http.StatusServiceUnavailable, "the request ended while waiting for an upload slot"}
	}
	spool, size, serr := h.spool(req)
	if serr != nil {
		return none, serr
	}
	defer func() {
		_ = spool.Close()
		_ = os.Remove(spool.Name())
	}()
	name := req.URL.Query().Get("file_name")
	if name == "" {
		name = buildID
	}
	res, err := h.store.Upload(req.Context(), tenant, name, spool, size, symbols.Options{
		Limits: symbols.Limits{MaxFileBytes: h.opts.MaxBytes}, ExpectBuildID: buildID,
	})
	if err != nil {
		return res, uploadError(err)
	}
	return res, nil
}

// uploadFits checks a declared body size against the limit before a byte
// is read (-1: not declared, checked while reading).
func uploadFits(contentLength, maxBytes int64) (bool, *symbolsError) {
	if contentLength > maxBytes {
		return false, tooLarge(contentLength, maxBytes)
	}
	return true, nil
}

func tooLarge(size, maxBytes int64) *symbolsError {
	what := "larger than"
	if size > 0 {
		what = fmt.Sprintf("%d bytes, more than", size)
	}
	msg := fmt.Sprintf("the file is %s the upload limit of %d bytes (symbols.upload.max_bytes)", what, maxBytes)
	return &symbolsError{http.StatusRequestEntityTooLarge, msg}
}

// checkBuildIDPath checks the build id of the path: a GNU build id in hex
// (4 to 64 bytes) or a Go build id (printable, no spaces).
func checkBuildIDPath(id string) (string, error) {
	if id == "" {
		return "", errors.New("name the file's build id in the path: PUT " + SymbolsPathPrefix + "<build id>")
	}
	if len(id) > 256 {
		return "", errors.New("the build id in the path is longer than 256 characters")
	}
	for _, c := range id {
		if c <= ' ' || c > '~' {
			return "", fmt.Errorf("the build id in the path has the character %q: send the GNU build id in hex or the Go build id", c)
		}
	}
	return strings.ToLower(id), nil
}

// spool copies the body, decompressed when gzip, into a temporary file,
// refusing it past the limit.
func (h *symbolsHandler) spool(req *http.Request) (*os.File, int64, *symbolsError) {
	var body io.Reader = req.Body
	switch enc := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, 0, &symbolsError{http.StatusBadRequest, "invalid gzip body: " + err.Error()}
		}
		body = zr
	default:
		return nil, 0, &symbolsError{http.StatusUnsupportedMediaType, fmt.Sprintf("unsupported Content-Encoding %q: send gzip or none", enc)}
	}
	f, err := os.CreateTemp(h.opts.TempDir, "flamehouse-symbols-*")
	if err != nil {
		return nil, 0, &symbolsError{http.StatusInternalServerError, "cannot spool the upload: " + err.Error()}
	}
	n, err := io.Copy(f, io.LimitReader(body, h.opts.MaxBytes+1))
	fail := func(e *symbolsError) (*os.File, int64, *symbolsError) {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, 0, e
	}
	switch {
	case err != nil:
		return fail(&symbolsError{http.StatusBadRequest, "reading the request body: " + err.Error()})
	case n > h.opts.MaxBytes:
		return fail(tooLarge(0, h.opts.MaxBytes))
	case n == 0:
		return fail(&symbolsError{http.StatusBadRequest, "the body is empty: send the ELF file"})
	}
	return f, n, nil
}

// uploadError maps an upload's error to its status: 413 for a file over
// the limits, 400 for a build id that is not the file's, 422 for a file
// that is not a usable ELF file, 500 when the store failed.
func uploadError(err error) *symbolsError {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, symbols.ErrTooLarge):
		status = http.StatusRequestEntityTooLarge
	case errors.Is(err, symbols.ErrBuildIDMismatch):
		status = http.StatusBadRequest
	case errors.Is(err, symbols.ErrNotELF), errors.Is(err, symbols.ErrMalformed), errors.Is(err, symbols.ErrNoBuildID),
		errors.Is(err, symbols.ErrNoSymbols), errors.Is(err, symbols.ErrTooManyRanges):
		status = http.StatusUnprocessableEntity
	}
	return &symbolsError{status, err.Error()}
}
