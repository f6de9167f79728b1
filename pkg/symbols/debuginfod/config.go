package debuginfod

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// Config configures the fetcher (the service's symbols.debuginfod
// section). With no URLs it is off.
type Config struct {
	// URLs are the debuginfod servers, tried in order for each build id
	// (as in DEBUGINFOD_URLS). Empty: no fetching. A URL may carry basic
	// auth credentials; they are never logged or printed.
	URLs URLList `yaml:"urls"`
	// Concurrency is the number of build ids fetched at once. Default 4.
	Concurrency int `yaml:"concurrency"`
	// QueueSize bounds the build ids waiting to be fetched; more are
	// dropped (and seen again with the next frames). Default 1024.
	QueueSize int `yaml:"queue_size"`
	// Timeout bounds one HTTP request, download included. Default 2m.
	Timeout time.Duration `yaml:"timeout"`
	// Retries is how often a request that failed with a 5xx status, a
	// timeout or a network error is tried again on the same server, waiting
	// Backoff, then twice as long each time. Default 3 and 1s.
	Retries int           `yaml:"retries"`
	Backoff time.Duration `yaml:"backoff"`
	// NegativeCacheTTL is how long a build id that no server has (404 from
	// every one), or that no server had a usable file for, is not asked
	// for again. Default 1h. Transport failures are retried after
	// FailureTTL at most.
	NegativeCacheTTL time.Duration `yaml:"negative_cache_ttl"`
	// MaxFileBytes is the largest file downloaded. Default 1 GiB.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
}

// Defaults.
const (
	DefaultConcurrency      = 4
	DefaultQueueSize        = 1024
	DefaultTimeout          = 2 * time.Minute
	DefaultRetries          = 3
	DefaultBackoff          = time.Second
	DefaultNegativeCacheTTL = time.Hour
	DefaultMaxFileBytes     = symbols.DefaultMaxFileBytes
	// FailureTTL caps how long a build id whose fetch failed for a
	// transport reason (timeouts, 5xx after the retries, refused
	// connections) is not asked for again.
	FailureTTL = 5 * time.Minute
)

// DefaultConfig returns the defaults (no URLs: off).
func DefaultConfig() Config {
	return Config{
		Concurrency: DefaultConcurrency, QueueSize: DefaultQueueSize, Timeout: DefaultTimeout, Retries: DefaultRetries,
		Backoff: DefaultBackoff, NegativeCacheTTL: DefaultNegativeCacheTTL, MaxFileBytes: DefaultMaxFileBytes,
	}
}

// Enabled reports whether any server is configured.
func (c *Config) Enabled() bool { return len(c.URLs) > 0 }

// RegisterFlags binds the config to flags with the given prefix.
func (c *Config) RegisterFlags(f *flag.FlagSet, prefix string) {
	f.Var(&c.URLs, prefix+"urls", "debuginfod server URLs, comma-separated, tried in order (empty: no fetching)")
	f.IntVar(&c.Concurrency, prefix+"concurrency", c.Concurrency, "build ids fetched from debuginfod at once")
	f.IntVar(&c.QueueSize, prefix+"queue-size", c.QueueSize, "build ids waiting for debuginfod, at most")
	f.DurationVar(&c.Timeout, prefix+"timeout", c.Timeout, "bound of one debuginfod request, download included")
	f.IntVar(&c.Retries, prefix+"retries", c.Retries, "retries of a debuginfod request after a 5xx, timeout or network error")
	f.DurationVar(&c.Backoff, prefix+"backoff", c.Backoff, "wait before the first retry (doubled for each next one)")
	f.DurationVar(&c.NegativeCacheTTL, prefix+"negative-cache-ttl", c.NegativeCacheTTL, "how long a build id no debuginfod server has is not asked for again")
	f.Int64Var(&c.MaxFileBytes, prefix+"max-file-bytes", c.MaxFileBytes, "largest file downloaded from debuginfod")
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var err error
	for i, raw := range c.URLs {
		if _, e := parseURL(raw); e != nil {
			err = errors.Join(err, fmt.Errorf("urls[%d]: %w", i, e))
		}
	}
	if c.Concurrency < 1 {
		err = errors.Join(err, fmt.Errorf("concurrency must be at least 1, got %d", c.Concurrency))
	}
	if c.QueueSize < 1 {
		err = errors.Join(err, fmt.Errorf("queue_size must be at least 1, got %d", c.QueueSize))
	}
	if c.Timeout <= 0 {
		err = errors.Join(err, fmt.Errorf("timeout must be positive, got %s", c.Timeout))
	}
	if c.Retries < 0 {
		err = errors.Join(err, fmt.Errorf("retries must not be negative, got %d", c.Retries))
	}
	if c.Backoff < 0 {
		err = errors.Join(err, fmt.Errorf("backoff must not be negative, got %s", c.Backoff))
	}
	if c.NegativeCacheTTL <= 0 {
		err = errors.Join(err, fmt.Errorf("negative_cache_ttl must be positive, got %s", c.NegativeCacheTTL))
	}
	if c.MaxFileBytes <= 0 {
		err = errors.Join(err, fmt.Errorf("max_file_bytes must be positive, got %d", c.MaxFileBytes))
	}
	return err
}

// parseURL accepts an absolute http or https URL without query or
// fragment. Errors never repeat a password the URL may hold.
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL") // url.Error would repeat the text, credentials included
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%s: the scheme must be http or https", u.Redacted())
	case u.Host == "":
		return nil, fmt.Errorf("%s: no host", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%s: a server URL takes no query or fragment", u.Redacted())
	}
	return u, nil
}

// URLList is a list of server URLs: a comma-separated flag value, and
// printed (flag defaults, the YAML the service shows) with passwords
// redacted.
type URLList []string

// String is the list as -help shows it, passwords redacted.
func (l *URLList) String() string {
	if l == nil {
		return ""
	}
	out := make([]string, len(*l))
	for i, raw := range *l {
		out[i] = redacted(raw)
	}
	return strings.Join(out, ",")
}

// redacted is a URL fit for logs and messages: its password replaced.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return u.Redacted()
}

// MarshalYAML renders the list with passwords redacted.
func (l URLList) MarshalYAML() (any, error) {
	out := make([]string, len(l))
	for i, raw := range l {
		out[i] = redacted(raw)
	}
	return out, nil
}

// Set parses a comma-separated list.
func (l *URLList) Set(s string) error {
	*l = nil
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			*l = append(*l, u)
		}
	}
	return nil
}
