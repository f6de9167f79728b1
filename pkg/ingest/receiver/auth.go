package receiver

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strings"
)

// ErrUnauthenticated is returned for missing or wrong credentials.
var ErrUnauthenticated = errors.New("missing or invalid credentials: send Authorization: Bearer <token> or basic auth")

// Authenticate maps an Authorization header value to a tenant. With auth
// off every request belongs to the default tenant. The ingest's endpoints
// and the Pyroscope-compatible query API (pkg/pyroscopeapi) share it.
func (c *Config) Authenticate(authorization string) (string, error) {
	if !c.Auth.Enabled {
		return c.DefaultTenant, nil
	}
	scheme, value, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok {
		return "", ErrUnauthenticated
	}
	value = strings.TrimSpace(value)
	switch strings.ToLower(scheme) {
	case "bearer":
		return matchToken(c.Auth.Tokens, value)
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(value)
		if err != nil {
			return "", ErrUnauthenticated
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return "", ErrUnauthenticated
		}
		return matchBasic(c.Auth.Basic, user, pass)
	}
	return "", ErrUnauthenticated
}

// matchToken compares against every token in constant time, so that the
// time taken tells nothing about which token nearly matched.
func matchToken(tokens []TokenCredential, got string) (string, error) {
	tenant, found := "", false
	for _, t := range tokens {
		if subtle.ConstantTimeCompare([]byte(t.Token.Value()), []byte(got)) == 1 && !found {
			tenant, found = t.Tenant, true
		}
	}
	if !found {
		return "", ErrUnauthenticated
	}
	return tenant, nil
}

func matchBasic(creds []BasicCredential, user, pass string) (string, error) {
	tenant, found := "", false
	for _, c := range creds {
		u := subtle.ConstantTimeCompare([]byte(c.Username), []byte(user))
		p := subtle.ConstantTimeCompare([]byte(c.Password.Value()), []byte(pass))
		if u&p == 1 && !found {
			tenant, found = c.Tenant, true
		}
	}
	if !found {
		return "", ErrUnauthenticated
	}
	return tenant, nil
}
