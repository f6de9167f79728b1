package chembed

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseException(t *testing.T) {
	tests := []struct {
		text    string
		code    int
		name    string
		message string
	}{
		{
			"Code: 60. DB::Exception: Unknown table expression identifier 'x' in scope SELECT * FROM x. (UNKNOWN_TABLE)",
			60, "UNKNOWN_TABLE", "Unknown table expression identifier 'x' in scope SELECT * FROM x.",
		},
		{
			"Code: 62. DB::Exception: Syntax error: failed at position 1. (SYNTAX_ERROR) (version 26.5.1.1)\n",
			62, "SYNTAX_ERROR", "Syntax error: failed at position 1.",
		},
		{"Code: 497. DB::Exception: denied", 497, "ACCESS_DENIED", "denied"},
		{"something odd happened", CodeUnknownException, "UNKNOWN_EXCEPTION", "something odd happened"},
	}
	for _, tc := range tests {
		ex := parseException(tc.text)
		require.Equal(t, tc.code, ex.Code, tc.text)
		require.Equal(t, tc.name, ex.Name, tc.text)
		require.Equal(t, tc.message, ex.Message, tc.text)
	}
	require.Equal(t, "Code: 60. DB::Exception: gone. (UNKNOWN_TABLE)", (&Exception{Code: 60, Name: "UNKNOWN_TABLE", Message: "gone."}).Error())
}

func TestHTTPStatus(t *testing.T) {
	require.Equal(t, http.StatusNotFound, httpStatus(60))
	require.Equal(t, http.StatusBadRequest, httpStatus(CodeSyntaxError))
	require.Equal(t, http.StatusForbidden, httpStatus(CodeAccessDenied))
	require.Equal(t, http.StatusServiceUnavailable, httpStatus(CodeTooManySimultaneousQueries))
	require.Equal(t, http.StatusInternalServerError, httpStatus(395))
	require.Equal(t, http.StatusTeapot, newException(1, "x").withStatus(http.StatusTeapot).status())
}
