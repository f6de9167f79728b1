package receiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/flamehouse/flamehouse/pkg/selftrace"
)

// ProfilesPath is the OTLP/HTTP path for profiles.
const ProfilesPath = "/v1development/profiles"

const (
	contentProtobuf = "application/x-protobuf"
	contentJSON     = "application/json"
)

// handleHTTP serves POST /v1development/profiles, under a server span
// that continues the sender's trace.
func (r *Receiver) handleHTTP(w http.ResponseWriter, req *http.Request) {
	ctx, span := r.startSpan(selftrace.ExtractHTTP(req.Context(), req.Header), httpSpanName,
		attribute.String("http.request.method", req.Method), attribute.String("http.route", ProfilesPath))
	var eerr *exportError
	selftrace.Do(ctx, func(ctx context.Context) { eerr = r.serveHTTP(w, req.WithContext(ctx)) })
	status := http.StatusOK
	if eerr != nil {
		status = eerr.http
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	endSpan(span, eerr)
}

// serveHTTP answers an export request; it returns the error it answered
// with, or nil for a success.
func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) *exportError {
	// OTLP/HTTP requires the Content-Type header: a request without one is
	// refused like any other type, not guessed to be protobuf.
	header := req.Header.Get("Content-Type")
	contentType, _, err := mime.ParseMediaType(header)
	if err != nil || (contentType != contentProtobuf && contentType != contentJSON) {
		msg := fmt.Sprintf("unsupported Content-Type %q: send %s or %s", header, contentProtobuf, contentJSON)
		if header == "" {
			msg = fmt.Sprintf("no Content-Type: OTLP/HTTP requires %s or %s", contentProtobuf, contentJSON)
		}
		eerr := &exportError{http: http.StatusUnsupportedMediaType, reason: "content_type", msg: msg}
		r.writeHTTPError(w, contentProtobuf, eerr, "http")
		return eerr
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		eerr := &exportError{http: http.StatusMethodNotAllowed, reason: "method", msg: "use POST"}
		r.writeHTTPError(w, contentType, eerr, "http")
		return eerr
	}
	resp, eerr := r.exportHTTP(req, contentType)
	if eerr != nil {
		r.writeHTTPError(w, contentType, eerr, "http")
		return eerr
	}
	r.metrics.requests.WithLabelValues("http", "ok").Inc()
	writeMessage(w, contentType, http.StatusOK, resp)
	return nil
}

func (r *Receiver) exportHTTP(req *http.Request, contentType string) (*collectorpb.ExportProfilesServiceResponse, *exportError) {
	if eerr := checkVersion(req.Header.Values(versionHeader)); eerr != nil {
		return nil, eerr
	}
	tenant, err := r.cfg.Authenticate(req.Header.Get("Authorization"))
	if err != nil {
		return nil, &exportError{http: http.StatusUnauthorized, reason: "unauthenticated", msg: err.Error()}
	}
	body, eerr := readBody(req, r.cfg.requestLimit(tenant))
	if eerr != nil {
		return nil, eerr
	}
	r.metrics.requestBytes.Observe(float64(len(body.payload)))
	if contentType == contentJSON {
		converted, err := jsonToProtobuf(body.payload)
		body.release() // the protobuf encoding is a copy: nothing refers to the JSON
		if err != nil {
			return nil, badRequest("decode", "cannot decode the %s body as an ExportProfilesServiceRequest: %v", contentType, err)
		}
		body = &rawRequest{payload: converted}
	}
	ctx, cancel := contextWithTimeout(req.Context(), r.cfg.RequestTimeout)
	defer cancel()
	resp, eerr := r.export(ctx, tenant, body.payload)
	body.answered(eerr)
	return resp, eerr
}

// readBody reads a possibly gzip-compressed body within limit bytes,
// before and after decompression: one of a declared length into a buffer
// of payloads (pooled, as gRPC payloads are), chunked or compressed ones
// into memory of their own.
func readBody(req *http.Request, limit int) (*rawRequest, *exportError) {
	var in io.Reader = req.Body
	switch enc := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		if n := req.ContentLength; n >= 0 && n <= int64(limit) {
			return readDeclared(req.Body, int(n))
		}
	case "gzip":
		raw, eerr := readLimited(in, limit)
		if eerr != nil {
			return nil, eerr
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, badRequest("decode", "invalid gzip body: %v", err)
		}
		in = zr
	default:
		return nil, &exportError{
			http: http.StatusUnsupportedMediaType, reason: "content_encoding",
			msg: fmt.Sprintf("unsupported Content-Encoding %q: send gzip or none", enc),
		}
	}
	data, eerr := readLimited(in, limit)
	if eerr != nil {
		return nil, eerr
	}
	return &rawRequest{payload: data}, nil
}

// readDeclared reads a body of the n bytes its Content-Length declared
// into a buffer of payloads (net/http ends the body there, and reports a
// shorter one as an unexpected EOF).
func readDeclared(body io.Reader, n int) (*rawRequest, *exportError) {
	data := payloads.Get(n)
	if _, err := io.ReadFull(body, *data); err != nil {
		payloads.Put(data)
		return nil, badRequest("decode", "reading the request body: %v", err)
	}
	return &rawRequest{buf: mem.NewBuffer(data, &payloads), payload: *data}, nil
}

func readLimited(r io.Reader, limit int) ([]byte, *exportError) {
	body, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, badRequest("decode", "reading the request body: %v", err)
	}
	if len(body) > limit {
		return nil, &exportError{
			http: http.StatusRequestEntityTooLarge, reason: "too_large",
			msg: fmt.Sprintf("the request is larger than %d bytes; send smaller batches", limit),
		}
	}
	return body, nil
}

// writeHTTPError answers with the status and a google.rpc.Status body in
// the request's content type, as OTLP/HTTP requires.
func (r *Receiver) writeHTTPError(w http.ResponseWriter, contentType string, e *exportError, protocol string) {
	r.metrics.requests.WithLabelValues(protocol, e.reason).Inc()
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", retryAfterHeader(e.retryAfter))
	}
	writeMessage(w, contentType, e.http, &spb.Status{Code: int32(e.code()), Message: e.msg}) //nolint:gosec // G115: gRPC codes are small
}

func writeMessage(w http.ResponseWriter, contentType string, status int, m proto.Message) {
	var body []byte
	var err error
	if contentType == contentJSON {
		body, err = protojson.Marshal(m)
	} else {
		body, err = proto.Marshal(m)
	}
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(err.Error())
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(body) //nolint:gosec // G705: a protobuf or JSON message, never HTML
}

// jsonToProtobuf turns an OTLP/JSON request into its protobuf encoding,
// which is what the converter reads (JSON senders are rare and small, so
// the detour through the generated message costs little).
func jsonToProtobuf(body []byte) ([]byte, error) {
	var msg collectorpb.ExportProfilesServiceRequest
	if err := unmarshalJSON(body, &msg); err != nil {
		return nil, err
	}
	payload, err := proto.Marshal(&msg)
	if err != nil {
		return nil, fmt.Errorf("encode as protobuf: %w", err)
	}
	return payload, nil
}

// unmarshalJSON decodes OTLP/JSON, whose trace, span and profile ids are
// hex strings where protojson expects base64.
func unmarshalJSON(body []byte, msg *collectorpb.ExportProfilesServiceRequest) error {
	fixed, err := hexIDsToBase64(body)
	if err != nil {
		return err
	}
	if err := protojson.Unmarshal(fixed, msg); err != nil {
		return fmt.Errorf("%w (an unknown field may come from an older schema version)", err)
	}
	return nil
}

var errNotObject = errors.New("the body is not a JSON object")
