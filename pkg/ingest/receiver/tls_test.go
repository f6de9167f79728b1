package receiver

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// selfSigned writes a certificate and key for 127.0.0.1 and returns their
// paths and a pool that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flamehouse-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestTLSOnBothListeners(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	e := newEnv(t, func(c *Config) { c.TLS = TLSConfig{CertFile: certFile, KeyFile: keyFile} })
	req, want := generated(31)

	// OTLP/HTTP over TLS; plain HTTP is refused by the TLS listener.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	resp, err := client.Post("https://"+e.r.HTTPAddress()+ProfilesPath, contentProtobuf, bytes.NewReader(marshal(t, req)))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, resp.Body.Close())
	plain, err := http.Post("http://"+e.r.HTTPAddress()+ProfilesPath, contentProtobuf, bytes.NewReader(marshal(t, req)))
	if err == nil {
		require.NotEqual(t, http.StatusOK, plain.StatusCode, "plain HTTP must not be served")
		_ = plain.Body.Close()
	}

	// OTLP/gRPC over TLS.
	cc, err := grpc.NewClient(e.r.GRPCAddress(), grpc.WithTransportCredentials(credentials.NewClientTLSFromCert(pool, "")))
	require.NoError(t, err)
	defer func() { _ = cc.Close() }()
	_, err = collectorpb.NewProfilesServiceClient(cc).Export(context.Background(), req)
	require.NoError(t, err)

	got, _ := e.stored(t)
	require.Equal(t, 2*want, got)
}
