package chembed

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/flamehouse/flamehouse/pkg/chembed/sqlguard"
)

// ClickHouse error codes used by this package (src/Common/ErrorCodes.cpp).
const (
	CodeBadArguments               = 36
	CodeSyntaxError                = sqlguard.CodeSyntaxError
	CodeNotImplemented             = 48
	CodeUnknownDatabase            = 81
	CodeTimeoutExceeded            = 159
	CodeReadonly                   = sqlguard.CodeReadonly
	CodeTooManySimultaneousQueries = 202
	CodeQueryIsTooLarge            = 229
	CodeHTTPLengthRequired         = 381
	CodeRequiredPassword           = 194
	CodeAccessDenied               = sqlguard.CodeAccessDenied
	CodeAuthenticationFailed       = 516
	CodeNotEnoughSpace             = 243
	CodeQueryWasCancelled          = 394
	CodeTooManyRowsOrBytes         = 396
	CodeUnknownException           = 1002
)

// codeNames names the codes this package raises itself.
var codeNames = map[int]string{
	CodeBadArguments:               "BAD_ARGUMENTS",
	CodeSyntaxError:                "SYNTAX_ERROR",
	CodeNotImplemented:             "NOT_IMPLEMENTED",
	CodeUnknownDatabase:            "UNKNOWN_DATABASE",
	CodeTimeoutExceeded:            "TIMEOUT_EXCEEDED",
	CodeReadonly:                   "READONLY",
	CodeTooManySimultaneousQueries: "TOO_MANY_SIMULTANEOUS_QUERIES",
	CodeQueryIsTooLarge:            "QUERY_IS_TOO_LARGE",
	CodeHTTPLengthRequired:         "HTTP_LENGTH_REQUIRED",
	CodeRequiredPassword:           "REQUIRED_PASSWORD",
	CodeAccessDenied:               "ACCESS_DENIED",
	CodeAuthenticationFailed:       "AUTHENTICATION_FAILED",
	CodeNotEnoughSpace:             "NOT_ENOUGH_SPACE",
	CodeQueryWasCancelled:          "QUERY_WAS_CANCELLED",
	CodeTooManyRowsOrBytes:         "TOO_MANY_ROWS_OR_BYTES",
	CodeUnknownException:           "UNKNOWN_EXCEPTION",
}

// Exception is a ClickHouse error: a numeric code, its symbolic name and the message.
type Exception struct {
	Code    int
	Name    string
	Message string
	// httpStatus overrides the status derived from Code (0: derived).
	httpStatus int
}

// withStatus sets the HTTP status the server answers with.
func (e *Exception) withStatus(status int) *Exception {
	e.httpStatus = status
	return e
}

// status is the HTTP status for the exception.
func (e *Exception) status() int {
	if e.httpStatus != 0 {
		return e.httpStatus
	}
	return httpStatus(e.Code)
}

func newException(code int, format string, args ...any) *Exception {
	return &Exception{Code: code, Name: codeNames[code], Message: fmt.Sprintf(format, args...)}
}

// Error renders the exception the way ClickHouse does on the wire:
// "Code: 60. DB::Exception: <message>. (UNKNOWN_TABLE)".
func (e *Exception) Error() string {
	msg := strings.TrimPrefix(e.Message, "DB::Exception: ")
	if e.Name == "" {
		return fmt.Sprintf("Code: %d. DB::Exception: %s", e.Code, msg)
	}
	return fmt.Sprintf("Code: %d. DB::Exception: %s (%s)", e.Code, msg, e.Name)
}

var (
	exceptionCodeRe = regexp.MustCompile(`^Code:\s*(\d+)\.\s*`)
	exceptionNameRe = regexp.MustCompile(`\s*\(([A-Z][A-Z0-9_]+)\)(\s*\(version [^)]*\))?\s*$`)
)

// parseException turns libchdb's error text ("Code: 60. DB::Exception: ...
// (UNKNOWN_TABLE)") into an Exception. Text without a code becomes
// UNKNOWN_EXCEPTION.
func parseException(text string) *Exception {
	text = strings.TrimSpace(text)
	m := exceptionCodeRe.FindStringSubmatch(text)
	if m == nil {
		return &Exception{Code: CodeUnknownException, Name: codeNames[CodeUnknownException], Message: text}
	}
	code, err := strconv.Atoi(m[1])
	if err != nil {
		code = CodeUnknownException
	}
	msg := strings.TrimPrefix(text[len(m[0]):], "DB::Exception: ")
	name := ""
	if n := exceptionNameRe.FindStringSubmatchIndex(msg); n != nil {
		name = msg[n[2]:n[3]]
		msg = msg[:n[0]]
	}
	if name == "" {
		name = codeNames[code]
	}
	return &Exception{Code: code, Name: name, Message: msg}
}

// statusTable lists the error codes that the real server's HTTP handler
// answers with a status other than 500
// (src/Server/HTTP/exceptionCodeToHTTPStatus.cpp), with their names so that
// a test can check the codes against the engine's errorCodeToName.
// TOO_MANY_SIMULTANEOUS_QUERIES is 503 here (a real server sends 500): the
// embedded server raises it when its connection pool is exhausted, and 503
// tells clients to retry.
var statusTable = []struct {
	code   int
	name   string
	status int
}{
	{CodeRequiredPassword, "REQUIRED_PASSWORD", http.StatusUnauthorized},
	{192, "UNKNOWN_USER", http.StatusForbidden},
	{193, "WRONG_PASSWORD", http.StatusForbidden},
	{CodeAuthenticationFailed, "AUTHENTICATION_FAILED", http.StatusForbidden},
	{512, "SET_NON_GRANTED_ROLE", http.StatusForbidden},
	{CodeAccessDenied, "ACCESS_DENIED", http.StatusForbidden},
	{CodeBadArguments, "BAD_ARGUMENTS", http.StatusBadRequest},
	{427, "CANNOT_COMPILE_REGEXP", http.StatusBadRequest},
	{6, "CANNOT_PARSE_TEXT", http.StatusBadRequest},
	{25, "CANNOT_PARSE_ESCAPE_SEQUENCE", http.StatusBadRequest},
	{26, "CANNOT_PARSE_QUOTED_STRING", http.StatusBadRequest},
	{38, "CANNOT_PARSE_DATE", http.StatusBadRequest},
	{41, "CANNOT_PARSE_DATETIME", http.StatusBadRequest},
	{72, "CANNOT_PARSE_NUMBER", http.StatusBadRequest},
	{441, "CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING", http.StatusBadRequest},
	{675, "CANNOT_PARSE_IPV4", http.StatusBadRequest},
	{676, "CANNOT_PARSE_IPV6", http.StatusBadRequest},
	{27, "CANNOT_PARSE_INPUT_ASSERTION_FAILED", http.StatusBadRequest},
	{376, "CANNOT_PARSE_UUID", http.StatusBadRequest},
	{15, "DUPLICATE_COLUMN", http.StatusBadRequest},
	{44, "ILLEGAL_COLUMN", http.StatusBadRequest},
	{37, "UNKNOWN_ELEMENT_IN_AST", http.StatusBadRequest},
	{123, "UNKNOWN_TYPE_OF_AST_NODE", http.StatusBadRequest},
	{8, "THERE_IS_NO_COLUMN", http.StatusBadRequest},
	{167, "TOO_DEEP_AST", http.StatusBadRequest},
	{168, "TOO_BIG_AST", http.StatusBadRequest},
	{223, "UNEXPECTED_AST_STRUCTURE", http.StatusBadRequest},
	{CodeSyntaxError, "SYNTAX_ERROR", http.StatusBadRequest},
	{117, "INCORRECT_DATA", http.StatusBadRequest},
	{53, "TYPE_MISMATCH", http.StatusBadRequest},
	{321, "VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE", http.StatusBadRequest},
	{60, "UNKNOWN_TABLE", http.StatusNotFound},
	{46, "UNKNOWN_FUNCTION", http.StatusNotFound},
	{47, "UNKNOWN_IDENTIFIER", http.StatusNotFound},
	{50, "UNKNOWN_TYPE", http.StatusNotFound},
	{56, "UNKNOWN_STORAGE", http.StatusNotFound},
	{CodeUnknownDatabase, "UNKNOWN_DATABASE", http.StatusNotFound},
	{115, "UNKNOWN_SETTING", http.StatusNotFound},
	{152, "UNKNOWN_DIRECTION_OF_SORTING", http.StatusNotFound},
	{63, "UNKNOWN_AGGREGATE_FUNCTION", http.StatusNotFound},
	{73, "UNKNOWN_FORMAT", http.StatusNotFound},
	{336, "UNKNOWN_DATABASE_ENGINE", http.StatusNotFound},
	{78, "UNKNOWN_TYPE_OF_QUERY", http.StatusNotFound},
	{511, "UNKNOWN_ROLE", http.StatusNotFound},
	{CodeQueryIsTooLarge, "QUERY_IS_TOO_LARGE", http.StatusRequestEntityTooLarge},
	{CodeNotImplemented, "NOT_IMPLEMENTED", http.StatusNotImplemented},
	{209, "SOCKET_TIMEOUT", http.StatusServiceUnavailable},
	{76, "CANNOT_OPEN_FILE", http.StatusServiceUnavailable},
	{439, "CANNOT_SCHEDULE_TASK", http.StatusServiceUnavailable},
	{CodeTooManySimultaneousQueries, "TOO_MANY_SIMULTANEOUS_QUERIES", http.StatusServiceUnavailable},
	{CodeHTTPLengthRequired, "HTTP_LENGTH_REQUIRED", http.StatusLengthRequired},
	{CodeTimeoutExceeded, "TIMEOUT_EXCEEDED", http.StatusRequestTimeout},
}

var statusByCode = func() map[int]int {
	m := make(map[int]int, len(statusTable))
	for _, e := range statusTable {
		m[e.code] = e.status
	}
	return m
}()

// httpStatus maps a ClickHouse error code to the HTTP status of the answer.
func httpStatus(code int) int {
	if status, ok := statusByCode[code]; ok {
		return status
	}
	return http.StatusInternalServerError
}

func accessDenied(format string, args ...any) *Exception {
	return newException(CodeAccessDenied, format, args...)
}
