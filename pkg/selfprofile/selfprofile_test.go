package selfprofile

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   []string // substrings of the error; none: valid
	}{
		{"defaults", func(*Config) {}, nil},
		{"traces off, any table", func(c *Config) { c.Traces, c.TracesTable = false, "not a table" }, nil},
		{"self-profiling off: nothing checked", func(c *Config) { c.Enabled, c.Interval, c.TracesTable = false, 0, "x-y" }, nil},
		{"another table", func(c *Config) { c.TracesTable = "self_spans_2" }, nil},
		{"table with a dot", func(c *Config) { c.TracesTable = "otel.otel_traces" }, []string{`traces_table must be a plain identifier`, `"otel.otel_traces"`}},
		{"table with a backtick", func(c *Config) { c.TracesTable = "t`; DROP" }, []string{"traces_table"}},
		{"empty table", func(c *Config) { c.TracesTable = "" }, []string{"traces_table"}},
		{"table starting with a digit", func(c *Config) { c.TracesTable = "1traces" }, []string{"traces_table"}},
		{"OTLP endpoint", func(c *Config) { c.TracesOTLPEndpoint = "http://127.0.0.1:4318" }, nil},
		{"OTLP endpoint with a path prefix", func(c *Config) { c.TracesOTLPEndpoint = "https://tempo.internal/otlp/" }, nil},
		{"traces off, any OTLP endpoint", func(c *Config) { c.Traces, c.TracesOTLPEndpoint = false, "::" }, nil},
		{"OTLP endpoint without a scheme", func(c *Config) { c.TracesOTLPEndpoint = "127.0.0.1:4318" }, []string{`traces_otlp_endpoint "127.0.0.1:4318"`}},
		{"OTLP endpoint over gRPC", func(c *Config) { c.TracesOTLPEndpoint = "grpc://tempo:4317" }, []string{`scheme must be http or https, got "grpc"`}},
		{"OTLP endpoint without a host", func(c *Config) { c.TracesOTLPEndpoint = "http:///v1" }, []string{"no host"}},
		{"OTLP endpoint with a query", func(c *Config) { c.TracesOTLPEndpoint = "http://tempo:4318/?x=1" }, []string{"no query or fragment"}},
		{"interval too short", func(c *Config) { c.Interval = 500 * time.Millisecond }, []string{"interval must be at least 1s, got 500ms"}},
		{
			"every problem at once", func(c *Config) {
				c.Interval, c.ServiceName, c.TracesTable, c.TracesOTLPEndpoint = 0, "", "a-b", "ftp://x"
			},
			[]string{"interval", "service_name", "traces_table", "traces_otlp_endpoint"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.change(&c)
			err := c.Validate()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestTracesComeWithSelfProfiling(t *testing.T) {
	c := DefaultConfig()
	require.True(t, c.TracesEnabled(), "on by default")
	c.Enabled = false
	require.False(t, c.TracesEnabled(), "off when self-profiling is off")
	c.Enabled, c.Traces = true, false
	require.False(t, c.TracesEnabled())
}
