package secret

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStringNeverShowsValue(t *testing.T) {
	s := String("hunter2")
	require.Equal(t, "hunter2", s.Value())
	for _, shown := range []string{
		fmt.Sprint(s), fmt.Sprintf("%v %s %#v %+v", s, s, s, s),
		fmt.Sprintf("%v", struct{ P String }{s}),
	} {
		require.NotContains(t, shown, "hunter2")
	}
	raw, err := json.Marshal(struct{ P String }{s})
	require.NoError(t, err)
	require.NotContains(t, string(raw), "hunter2")

	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("cfg", "password", s)
	require.NotContains(t, logged.String(), "hunter2")
}

func TestStringUnmarshal(t *testing.T) {
	var v struct{ P String }
	require.NoError(t, json.Unmarshal([]byte(`{"P":"hunter2"}`), &v))
	require.Equal(t, "hunter2", v.P.Value())
	require.Empty(t, String("").String())
}
