package chembed

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flamehouse/flamehouse/pkg/chembed/sqlguard"
	"github.com/flamehouse/flamehouse/pkg/tenancy"
)

// protocolParams are URL parameters of ClickHouse's HTTP interface that are
// not settings. Every other parameter except param_* is a setting.
var protocolParams = []string{
	"query", "database", "default_format", "client_protocol_version", "query_id", "quota_key",
	"user", "password", "compress", "decompress", "session_id", "session_timeout", "session_check",
	"close_session", "buffer_size", "wait_end_of_query", "stacktrace", "role",
}

// settingNameRe is what a setting name may look like; anything else is
// refused before it can reach a SET statement.
var settingNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// request is one parsed HTTP request.
type request struct {
	// queryParam is the query URL parameter ("" when the SQL is in the body).
	queryParam string
	database   string
	format     string
	settings   map[string]string
	params     []Param
	// clientRevision is client_protocol_version (0 when absent).
	clientRevision uint64
	readOnly       bool
	waitEndOfQuery bool
	queryID        string
	// role is the authenticated user's role.
	role Role
}

// parseRequest splits URL parameters into protocol parameters, query
// parameters and settings, and applies the server's limits to the settings.
func (s *Server) parseRequest(r *http.Request) (*request, error) {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, newException(CodeBadArguments, "cannot parse URL parameters: %v", err)
	}
	req := &request{
		queryParam: values.Get("query"),
		database:   "default",
		format:     "TabSeparated",
		settings:   map[string]string{},
		readOnly:   r.Method == http.MethodGet || r.Method == http.MethodHead,
		queryID:    values.Get("query_id"),
	}
	if db := values.Get("database"); db != "" {
		req.database = db
	}
	if db := r.Header.Get("X-ClickHouse-Database"); db != "" {
		req.database = db
	}
	if f := values.Get("default_format"); f != "" {
		req.format = f
	}
	if f := r.Header.Get("X-ClickHouse-Format"); f != "" {
		req.format = f
	}
	if v := values.Get("client_protocol_version"); v != "" {
		req.clientRevision, err = strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, newException(CodeBadArguments, "client_protocol_version %q is not a number", v)
		}
	}
	if values.Get("compress") == "1" || values.Get("decompress") == "1" {
		return nil, newException(CodeNotImplemented, "ClickHouse native LZ4/ZSTD block compression (compress/decompress) "+
			"is not supported by the embedded server; use HTTP compression (Content-Encoding) or none")
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		return nil, newException(CodeNotImplemented, "external tables (multipart/form-data) are not supported by the embedded server")
	}
	req.waitEndOfQuery = values.Get("wait_end_of_query") == "1"
	for name, vals := range values {
		if len(vals) == 0 || slices.Contains(protocolParams, name) {
			continue
		}
		value := vals[len(vals)-1]
		if pname, ok := strings.CutPrefix(name, "param_"); ok {
			req.params = append(req.params, Param{Name: pname, Value: value})
			continue
		}
		if err := checkSetting(name, value, req); err != nil {
			return nil, err
		}
	}
	s.capExecutionTime(req)
	return req, nil
}

func checkSetting(name, value string, req *request) error {
	if !settingNameRe.MatchString(name) {
		return newException(115, "Unknown setting %q", name)
	}
	switch {
	case name == "readonly":
		if value != "0" && value != "" {
			req.readOnly = true
		}
		return nil
	case name == "max_execution_time":
		req.settings[name] = value
		return nil
	case sqlguard.IsDeniedSetting(name):
		return accessDenied("setting %s is not allowed on the embedded server", name)
	}
	req.settings[name] = value
	return nil
}

// capExecutionTime enforces the server's cap: a client's own
// max_execution_time (clickhouse-go derives one from the context deadline)
// is kept when it is lower.
func (s *Server) capExecutionTime(req *request) {
	limit := s.cfg.MaxExecutionTime
	if limit <= 0 {
		return
	}
	capSeconds := strconv.FormatInt(int64((limit+time.Second-1)/time.Second), 10)
	if v, ok := req.settings["max_execution_time"]; ok {
		if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 && time.Duration(secs*float64(time.Second)) <= limit {
			return
		}
	}
	req.settings["max_execution_time"] = capSeconds
}

// credentials returns the user and password a request presents: HTTP basic
// auth, the X-ClickHouse-User/Key headers, or the user/password URL
// parameters, as a real server accepts them.
func credentials(r *http.Request) (user, password string) {
	if u, p, ok := r.BasicAuth(); ok {
		return u, p
	}
	if u := r.Header.Get("X-ClickHouse-User"); u != "" {
		return u, r.Header.Get("X-ClickHouse-Key")
	}
	q := r.URL.Query()
	if u := q.Get("user"); u != "" {
		return u, q.Get("password")
	}
	return DefaultUser, ""
}

// authenticate checks the presented credentials (the password in
// constant time) and returns who presented them.
func (s *Server) authenticate(r *http.Request) (principal, error) {
	name, password := credentials(r)
	u, found := s.users.lookup(name)
	if !found {
		// Compare anyway, so that an unknown name takes as long.
		u = User{Name: name, PasswordSHA256Hex: PasswordSHA256(password + "\x00")}
	}
	if u.passwordMatches(password) && found {
		return principal{name: u.Name, role: u.Role, tenant: u.Tenant}, nil
	}
	if password == "" {
		return principal{}, newException(CodeRequiredPassword, "%s: Authentication failed: password is required", name)
	}
	return principal{}, newException(CodeAuthenticationFailed, "%s: Authentication failed: password is incorrect, or there is no user with such name", name)
}

// applyRole narrows a request to what its user may do: read-only for
// readers, and for a tenant user the tenant's access marker, no system
// database and none of the settings the guard keeps from tenant users.
// The access marker is the front's own: no client sets it.
func (s *Server) applyRole(req *request, p principal) error {
	req.role = p.role
	if s.engine.allMarker != "" {
		delete(req.settings, markerSetting)
	}
	switch p.role {
	case RoleReader:
		req.readOnly = true
	case RoleTenant:
		if s.engine.allMarker == "" {
			return accessDenied("%s: tenant users need the engine's row policies, and this engine was started without tenant tables", p.name)
		}
		if sqlguard.IsSystemDatabase(req.database) {
			return accessDenied("%s: a tenant user may not use the %s database", p.name, req.database)
		}
		req.readOnly = true
		for name := range req.settings {
			if sqlguard.IsTenantDeniedSetting(name) {
				delete(req.settings, name)
			}
		}
		req.settings[markerSetting] = tenancy.Marker(p.tenant)
		if _, set := req.settings[tenancy.Setting]; !set {
			req.settings[tenancy.Setting] = tenancy.Marker(p.tenant) // how the datasource learns its tenant
		}
	}
	return nil
}
