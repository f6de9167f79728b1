package pyroscopeapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/ingest/receiver"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/secret"
)

// The checks that answer before any read: credentials, tenant header,
// validation, what is not implemented. (Answers from ClickHouse are tested
// against the real Pyroscope in internal/integration/pyroscopeapi.)
func TestHandlerRefusesBeforeReading(t *testing.T) {
	ingest := receiver.DefaultConfig()
	ingest.Auth = receiver.AuthConfig{Enabled: true, Tokens: []receiver.TokenCredential{{Token: secret.String("tok-a"), Tenant: "team-a"}}}
	srv := httptest.NewServer(New(DefaultConfig(), ingest, nil, schema.DefaultConfig(), slog.New(slog.DiscardHandler)).Handler())
	t.Cleanup(srv.Close)
	client := querierv1connect.NewQuerierServiceClient(srv.Client(), srv.URL)
	call := func(headers map[string]string, msg *querierv1.SelectMergeStacktracesRequest) error {
		req := connect.NewRequest(msg)
		for k, v := range headers {
			req.Header().Set(k, v)
		}
		_, err := client.SelectMergeStacktraces(context.Background(), req)
		return err
	}
	token := map[string]string{"Authorization": "Bearer tok-a"}
	valid := &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: "{}"}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		msg     *querierv1.SelectMergeStacktracesRequest
		code    connect.Code
		text    string
	}{
		{"no credentials", nil, valid, connect.CodeUnauthenticated, "credentials"},
		{"another tenant's header", map[string]string{"Authorization": "Bearer tok-a", TenantHeader: "team-b"}, valid, connect.CodePermissionDenied, TenantHeader},
		{"a malformed profile type", token, &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: "cpu", LabelSelector: "{}"}, connect.CodeInvalidArgument, "profile type"},
		{"a malformed selector", token, &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: valid.ProfileTypeID, LabelSelector: `{a=}`}, connect.CodeInvalidArgument, "selector"},
		{"a malformed span id", token, &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: valid.ProfileTypeID, SpanSelector: []string{"xyz"}}, connect.CodeInvalidArgument, "span id"},
		{"an empty range", token, &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: valid.ProfileTypeID, Start: 2000, End: 1000}, connect.CodeInvalidArgument, "time range"},
		{"two trace ids", token, &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: valid.ProfileTypeID, TraceIdSelector: []string{"a", "b"}}, connect.CodeInvalidArgument, "trace"},
		{"a call-site selector", token, &querierv1.SelectMergeStacktracesRequest{
			ProfileTypeID: valid.ProfileTypeID, StackTraceSelector: &typesv1.StackTraceSelector{CallSite: []*typesv1.Location{{Name: "main"}}},
		}, connect.CodeUnimplemented, "stack_trace_selector"},
		{"profile ids", token, &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: valid.ProfileTypeID, ProfileIdSelector: []string{"x"}}, connect.CodeUnimplemented, "profile ids"},
		{"the DOT format", token, &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: valid.ProfileTypeID, Format: querierv1.ProfileFormat_PROFILE_FORMAT_DOT}, connect.CodeUnimplemented, "format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := call(tc.headers, tc.msg)
			require.Equal(t, tc.code, connect.CodeOf(err), "%v", err)
			require.ErrorContains(t, err, tc.text)
		})
	}

	// The render endpoints answer the same as JSON with the HTTP status.
	for _, tc := range []struct {
		path, token string
		status      int
		code        string
	}{
		{"/pyroscope/render?query=process_cpu:cpu:nanoseconds:cpu:nanoseconds{}", "", http.StatusUnauthorized, "unauthenticated"},
		{"/pyroscope/render?query={}", "tok-a", http.StatusBadRequest, "invalid_argument"},
		{"/pyroscope/render?query=cpu:x&from=yesterday", "tok-a", http.StatusBadRequest, "invalid_argument"},
		{"/pyroscope/render?query=cpu:x&format=dot", "tok-a", http.StatusNotImplemented, "unimplemented"},
		{"/pyroscope/render-diff?leftQuery=a:b:c:d:e&rightQuery=f:g:h:i:j", "tok-a", http.StatusBadRequest, "invalid_argument"},
	} {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+tc.path, nil)
		require.NoError(t, err)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		var body map[string]string
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		_ = resp.Body.Close()
		require.Equal(t, tc.status, resp.StatusCode, "%s: %v", tc.path, body)
		require.Equal(t, tc.code, body["code"], tc.path)
		require.NotEmpty(t, body["message"])
	}
}
