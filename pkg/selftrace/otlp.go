package selftrace

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// OTLPTracesPath is where an OTLP/HTTP endpoint takes traces, below its
// base URL.
const OTLPTracesPath = "/v1/traces"

// ValidateOTLPEndpoint checks the base URL of an OTLP/HTTP traces endpoint:
// http or https, a host, no query or fragment. The path, if any, is the
// prefix the endpoint is served under.
func ValidateOTLPEndpoint(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	var errs error
	if u.Scheme != "http" && u.Scheme != "https" {
		errs = errors.Join(errs, fmt.Errorf("scheme must be http or https, got %q", u.Scheme))
	}
	if u.Host == "" {
		errs = errors.Join(errs, errors.New("no host"))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		errs = errors.Join(errs, errors.New("no query or fragment allowed"))
	}
	return errs
}

// OTLPTracesURL is the URL spans are POSTed to for an endpoint's base URL.
func OTLPTracesURL(base string) string { return strings.TrimSuffix(base, "/") + OTLPTracesPath }
