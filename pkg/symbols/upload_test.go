package symbols_test

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/symbols"
)

func TestUploadConfig(t *testing.T) {
	def := symbols.DefaultUploadConfig()
	require.NoError(t, def.Validate())
	require.True(t, def.Enabled)
	require.Equal(t, int64(1<<30), def.MaxBytes)
	require.Equal(t, 10*time.Minute, def.Timeout)

	for _, tc := range []struct {
		name string
		cfg  symbols.UploadConfig
		want []string
	}{
		{"zero", symbols.UploadConfig{}, []string{"max_bytes must be positive", "timeout must be positive"}},
		{"negative-bytes", symbols.UploadConfig{MaxBytes: -1, Timeout: time.Second}, []string{"max_bytes must be positive, got -1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}

	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg := symbols.DefaultUploadConfig()
	cfg.RegisterFlags(fs, "symbols.upload.")
	require.NoError(t, fs.Parse([]string{"-symbols.upload.max-bytes", "1048576", "-symbols.upload.timeout", "30s", "-symbols.upload.enabled=false"}))
	require.Equal(t, symbols.UploadConfig{Enabled: false, MaxBytes: 1 << 20, Timeout: 30 * time.Second}, cfg)
}
