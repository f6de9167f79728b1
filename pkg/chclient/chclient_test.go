package chclient

import (
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"
)

func TestOptions(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Address = "ch.example:8443"
	cfg.Protocol = ProtocolHTTP
	cfg.Password = "pw"
	cfg.Secure = true
	opts, err := cfg.Options()
	require.NoError(t, err)
	require.Equal(t, clickhouse.HTTP, opts.Protocol)
	require.Equal(t, []string{"ch.example:8443"}, opts.Addr)
	require.Equal(t, "pw", opts.Auth.Password)
	require.NotNil(t, opts.TLS)
	require.Equal(t, "ch.example", opts.TLS.ServerName)
	require.Equal(t, 10*time.Second, opts.DialTimeout)

	cfg.Secure = false
	cfg.Protocol = ProtocolNative
	opts, err = cfg.Options()
	require.NoError(t, err)
	require.Equal(t, clickhouse.Native, opts.Protocol)
	require.Nil(t, opts.TLS)
}

func TestValidate(t *testing.T) {
	cfg := DefaultConfig()
	require.NoError(t, cfg.Validate(), "no address means no external server")
	cfg.Address = "no-port"
	cfg.Protocol = "grpc"
	cfg.CertFile = "c.pem"
	cfg.MaxOpenConns = 0
	err := cfg.Validate()
	for _, want := range []error{errProtocol, errKeyPair, errPool} {
		require.ErrorIs(t, err, want)
	}
	require.ErrorContains(t, err, "no-port")

	cfg = DefaultConfig()
	cfg.Address = "h:9440"
	cfg.Secure = true
	cfg.CAFile = "/does/not/exist.pem"
	_, err = cfg.Options()
	require.ErrorContains(t, err, "ca_file")
}
