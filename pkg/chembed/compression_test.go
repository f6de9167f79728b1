package chembed_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ClickHouse/ch-go/compress"
	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"
)

// The embedded server refuses ClickHouse's native block compression
// (compress=1), which clickhouse-go uses for its LZ4 and ZSTD settings and
// the OpenTelemetry Collector's ClickHouse exporter by default. A real
// server sends the error text of such a request in a compressed block, and
// clickhouse-go before v2.50 can only read it that way: the refusal has to
// arrive framed, or the client reports "data size should be 0 < 540700271"
// instead of the reason.
func TestNativeCompressionRefusalIsReadable(t *testing.T) {
	base := embedded(t, nil)

	a := send(t, http.MethodPost, base+"?compress=1", strings.NewReader("SELECT 1"), nil)
	require.Equal(t, http.StatusNotImplemented, a.status)
	require.Equal(t, "48", a.code)
	// The block reader reports the end of its input as a wrapped io.EOF.
	text, err := io.ReadAll(compress.NewReader(bytes.NewReader([]byte(a.body))))
	require.ErrorIs(t, err, io.EOF, "the error body is one ClickHouse compressed block: %q", a.body)
	require.Contains(t, string(text), "Code: 48. DB::Exception: ClickHouse native LZ4/ZSTD block compression")
	require.Contains(t, string(text), "(NOT_IMPLEMENTED)")

	// Without compress=1 errors stay plain text.
	a = send(t, http.MethodPost, base+"?decompress=1", strings.NewReader("SELECT 1"), nil)
	require.Equal(t, http.StatusNotImplemented, a.status)
	require.True(t, strings.HasPrefix(a.body, "Code: 48. DB::Exception: "), a.body)

	u, err := url.Parse(base)
	require.NoError(t, err)
	for _, method := range []clickhouse.CompressionMethod{clickhouse.CompressionLZ4, clickhouse.CompressionZSTD} {
		conn, err := clickhouse.Open(&clickhouse.Options{
			Protocol: clickhouse.HTTP, Addr: []string{u.Host},
			Compression: &clickhouse.Compression{Method: method},
		})
		require.NoError(t, err)
		ex := chException(t, conn.Exec(context.Background(), "SELECT 1"))
		require.Equal(t, int32(48), ex.Code, method.String())
		require.Contains(t, ex.Message, "use HTTP compression (Content-Encoding) or none", method.String())
		require.NoError(t, conn.Close())
	}
}
