package pyroscopeapi

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/ingest/receiver"
	"github.com/flamehouse/flamehouse/pkg/query"
	"github.com/flamehouse/flamehouse/pkg/secret"
)

func TestTenantOf(t *testing.T) {
	off := receiver.DefaultConfig()
	off.DefaultTenant = "default-team"
	on := receiver.DefaultConfig()
	on.Auth = receiver.AuthConfig{Enabled: true, Tokens: []receiver.TokenCredential{{Token: secret.String("tok-a"), Tenant: "team-a"}}}
	for _, tc := range []struct {
		name    string
		ingest  receiver.Config
		headers map[string]string
		tenant  string
		code    connect.Code
	}{
		{"auth off: the default tenant", off, nil, "default-team", 0},
		{"auth off: the tenant header picks", off, map[string]string{TenantHeader: "team-b"}, "team-b", 0},
		{"auth off: a tenant header with a space", off, map[string]string{TenantHeader: "team b"}, "", connect.CodeInvalidArgument},
		{"auth on: the token's tenant", on, map[string]string{"Authorization": "Bearer tok-a"}, "team-a", 0},
		{"auth on: the header agrees", on, map[string]string{"Authorization": "Bearer tok-a", TenantHeader: "team-a"}, "team-a", 0},
		{"auth on: the header names another tenant", on, map[string]string{"Authorization": "Bearer tok-a", TenantHeader: "team-b"}, "", connect.CodePermissionDenied},
		{"auth on: no credentials", on, map[string]string{TenantHeader: "team-a"}, "", connect.CodeUnauthenticated},
		{"auth on: a wrong token", on, map[string]string{"Authorization": "Bearer nope"}, "", connect.CodeUnauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{ingest: tc.ingest}
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			tenant, err := s.tenantOf(h)
			if tc.code != 0 {
				require.Error(t, err)
				require.Equal(t, tc.code, tenantCode(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.tenant, tenant)
		})
	}
}

func TestSplitQuery(t *testing.T) {
	pt, sel, err := splitQuery(` process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="a"} `)
	require.NoError(t, err)
	require.Equal(t, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", pt)
	require.Equal(t, `{service_name="a"}`, sel)
	pt, sel, err = splitQuery("memory:alloc_space:bytes:space:bytes")
	require.NoError(t, err)
	require.Equal(t, "memory:alloc_space:bytes:space:bytes", pt)
	require.Equal(t, "{}", sel)
	_, _, err = splitQuery(`{service_name="a"}`)
	require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err))
}

func TestRenderTime(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	def := now.Add(-time.Hour)
	at := time.Date(2026, 11, 28, 11, 30, 0, 0, time.UTC)
	sec := strconv.FormatInt(at.Unix(), 10)
	for in, want := range map[string]time.Time{
		"":                          def,
		"now":                       now,
		"now-1h":                    now.Add(-time.Hour),
		"now-7d":                    now.Add(-7 * 24 * time.Hour),
		sec:                         at, // seconds
		sec + "000":                 at, // milliseconds
		sec + "000000":              at, // microseconds
		sec + "000000000":           at, // nanoseconds
		"2026-11-28T11:30:00Z":      at,
		"2026-11-28T11:30:00+00:00": at,
	} {
		got, err := renderTime(in, def, now)
		require.NoError(t, err, in)
		require.True(t, want.Equal(got), "%q: %s, want %s", in, got, want)
	}
	_, err := renderTime("yesterday", def, now)
	require.Error(t, err)
}

func TestNewTimeline(t *testing.T) {
	from := time.Unix(1000, 0)
	to := time.Unix(1062, 0)
	tl := newTimeline(from, to, 15*time.Second, []query.SeriesGroup{
		{Times: []time.Time{time.Unix(990, 0), time.Unix(1050, 0)}, Values: []float64{3, 4}},
		{Times: []time.Time{time.Unix(990, 0), time.Unix(2000, 0)}, Values: []float64{1, 100}},
	})
	require.Equal(t, int64(990), tl.StartTime) // the step at or before from
	require.Equal(t, int64(15), tl.DurationDelta)
	require.Equal(t, []float64{4, 0, 0, 0, 4}, tl.Samples) // 990..1065 in 5 steps; 2000 is outside
}

func TestHTTPStatus(t *testing.T) {
	for code, status := range map[connect.Code]int{
		connect.CodeInvalidArgument: 400, connect.CodeUnauthenticated: 401, connect.CodePermissionDenied: 403,
		connect.CodeUnimplemented: 501, connect.CodeDeadlineExceeded: 504, connect.CodeInternal: 500,
	} {
		require.Equal(t, status, httpStatus(code), code.String())
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.Validate())
	c = Config{Enabled: true, ListenAddress: "4040", DefaultMaxNodes: 0, QueryTimeout: 0}
	err := c.Validate()
	require.Error(t, err)
	for _, want := range []string{"listen_address", "default_max_nodes", "query_timeout"} {
		require.ErrorContains(t, err, want)
	}
	require.NoError(t, (&Config{Enabled: false, ListenAddress: "bad"}).Validate())
}
