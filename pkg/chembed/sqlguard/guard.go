// Package sqlguard inspects a client's SQL statement before the embedded
// ClickHouse engine (package chembed) runs it. The engine runs in
// ClickHouse's "local" mode, which has no access control, so the guard
// refuses multi-statements and every way to touch the host (file(), url(),
// remote(), INTO OUTFILE, FROM INFILE, host-backed table and database
// engines, SYSTEM, BACKUP and RESTORE), settings that would lift the
// server's limits, writes in read-only requests, and what a writer or a
// tenant user may not do; it describes what it accepts (the verb, an
// INSERT's head, settings, format and where its inline data starts). It
// tokenizes SQL as the engine does, and nothing else: no parsing, no
// engine, no I/O.
package sqlguard

import (
	"fmt"
	"strings"
)

// hostAccessNames are table functions, scalar functions, table engines and
// database engines that read or write host files, run programs or open
// network connections. The embedded engine runs without access control, so
// none of them may be reached by a client: the guard refuses any of these
// names used as a call (name(...)) or after ENGINE.
var hostAccessNames = setOf(
	// files and programs
	"file", "filecluster", "filesystem", "filelog", "executable", "executablepool", "embeddedrocksdb",
	"sqlite", "iceberglocal", "deltalakelocal", "paimonlocal", "backup",
	// network and remote storage
	"url", "urlcluster", "remote", "remotesecure", "cluster", "clusterallreplicas",
	"s3", "s3cluster", "s3queue", "gcs", "oss", "cosn", "hdfs", "hdfscluster",
	"azureblobstorage", "azureblobstoragecluster", "azurequeue",
	"mysql", "materializedmysql", "postgresql", "materializedpostgresql", "mongodb", "redis",
	"odbc", "jdbc", "hive", "kafka", "rabbitmq", "nats", "ytsaurus", "arrowflight", "datalakecatalog",
	"iceberg", "icebergs3", "icebergazure", "iceberghdfs", "icebergcluster", "icebergs3cluster",
	"icebergazurecluster", "iceberghdfscluster", "deltalake", "deltalakes3", "deltalakeazure",
	"deltalakecluster", "deltalakes3cluster", "deltalakeazurecluster", "hudi", "hudicluster",
	"paimon", "paimons3", "paimonazure", "paimonhdfs", "paimoncluster",
)

// deniedSettings name files (format schemas and templates) or would let a
// client lift the server's limits from inside SQL. Limits are set by the
// server per request; clients pass their own through URL settings.
var deniedSettings = setOf(
	"format_template_resultset", "format_template_row", "format_schema", "format_schema_source",
	"output_format_schema", "max_execution_time", "readonly",
)

// readOnlyVerbs are the statements allowed when a request is read-only
// (GET requests and readonly=1/2), as on a real server.
var readOnlyVerbs = setOf("select", "with", "show", "describe", "desc", "exists", "explain")

// IsDeniedSetting reports whether a setting names host files (format
// schemas and templates) or would lift the server's limits: refused in SQL
// and in a request's URL settings.
func IsDeniedSetting(name string) bool { return deniedSettings[name] }

// IsTenantDeniedSetting reports whether a tenant user may not name a
// setting: the access marker, the query cache's settings (its entries are
// shared by every tenant) and introspection.
func IsTenantDeniedSetting(name string) bool {
	return tenantDeniedNames[name] || strings.HasPrefix(name, "query_cache")
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// ClickHouse error codes of refused statements (src/Common/ErrorCodes.cpp).
const (
	CodeSyntaxError  = 62
	CodeReadonly     = 164
	CodeAccessDenied = 497
)

// Error is a refused statement: the ClickHouse error code and message the
// server answers with.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return e.Message }

func newError(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Statement is what the guard learned about an accepted client statement.
type Statement struct {
	// Verb is the lower-cased first keyword: select, with, insert, create, set, use, ...
	Verb string
	// ChangesSession is set for SET and USE: their effect must not outlive the request.
	ChangesSession bool
	// Insert is set for an INSERT whose data follows the statement (FORMAT x or VALUES).
	Insert *InsertStatement
	// OutputFormat is the FORMAT clause of a query that has one, else "".
	OutputFormat string
}

// Streamable reports whether the statement's result can be streamed chunk by chunk.
func (s *Statement) Streamable() bool { return s.Verb == "select" || s.Verb == "with" }

// InsertStatement splits an INSERT with inline data into the parts that the
// server reassembles as INSERT ... FROM INFILE ... FORMAT x.
type InsertStatement struct {
	// Head is the statement up to the SETTINGS, FORMAT or VALUES keyword: "INSERT INTO t (a, b)".
	Head string
	// Settings is the SETTINGS clause, or "".
	Settings string
	// Format is the input format name; VALUES is reported as "Values".
	Format string
	// DataOffset is where the data starts in the inspected text.
	DataOffset int
}

// Options are a request's restrictions beyond the safety rules every
// statement is held to.
type Options struct {
	// ReadOnly allows only statements that read (readOnlyVerbs).
	ReadOnly bool
	// Rules adds a writer's or a tenant user's rules.
	Rules Rules
	// TableOnlyFunctions are the engine's table functions that are not
	// scalar functions (chembed's Engine.tableOnlyFunctions); a tenant user
	// may call only the generators among them.
	TableOnlyFunctions map[string]bool
}

// Rules says whose rules apply to a statement besides the safety rules.
type Rules uint8

const (
	// RulesAdmin adds none: every statement the safety rules allow.
	RulesAdmin Rules = iota
	// RulesWriter allows inserts and the statements a client driver needs
	// (DESCRIBE, SELECT without FROM), nothing that reads a table.
	RulesWriter
	// RulesTenant allows reads only, and none that reads around the
	// tenant's row policies (system tables describing every tenant's data,
	// table functions and dictionary lookups, the query cache).
	RulesTenant
)

// AccessMarkerSetting is the setting that carries the embedded engine's
// access marker on every statement (package chembed): a tenant user's SQL
// may not name it.
const AccessMarkerSetting = "chdb_client_name"

// Rules for tenant users: the row policies keep other tenants' rows out of
// every read of a tenant table; these keep a tenant user from reading
// around them or changing what they compare with.
var (
	// tenantVerbs are what a tenant user may run.
	tenantVerbs = setOf("select", "with", "describe", "desc", "exists", "explain", "show")
	// tenantShowObjects may follow SHOW (not PROCESSLIST, USERS, GRANTS ...).
	tenantShowObjects = setOf("tables", "databases", "columns", "fields", "create", "full", "dictionaries")
	// tenantDeniedNames are settings a tenant user's SQL may not name: the
	// access marker (the query cache's tag; the query cache's entries are
	// shared by the engine's single user: "query_cache*" is refused too,
	// IsTenantDeniedSetting) and introspection.
	tenantDeniedNames = setOf(AccessMarkerSetting, "use_query_cache", "enable_reads_from_query_cache",
		"enable_writes_to_query_cache", "allow_introspection_functions", "profile")
	// tenantSystemTables are the system tables a tenant user may read: none
	// of them describes tables' contents, parts, queries or users.
	tenantSystemTables = setOf("one", "numbers", "numbers_mt", "zeros", "zeros_mt", "functions", "table_functions",
		"formats", "data_type_families", "time_zones", "collations", "keywords", "aggregate_function_combinators",
		"table_engines", "database_engines", "build_options", "contributors", "licenses", "settings",
		// names and types of tables and columns (with their sizes: see docs/security.md)
		"databases", "tables", "columns", "server_settings")
	// tenantTableFunctions are the table functions a tenant user may call:
	// generators that read no table.
	tenantTableFunctions = setOf("numbers", "numbers_mt", "zeros", "zeros_mt", "generateseries", "generate_series",
		"values", "null", "view", "format", "generaterandom")
	// systemDatabases are databases whose tables describe the server.
	systemDatabases = setOf("system", "information_schema")
)

// IsSystemDatabase reports whether a database describes the server rather
// than holding data (system, information_schema in either case).
func IsSystemDatabase(name string) bool { return systemDatabases[strings.ToLower(name)] }

// Inspect checks one client statement against the safety rules and
// describes it. Errors are *Error values that the server sends back as
// ClickHouse exceptions: SYNTAX_ERROR for multi-statements and what the
// engine could not tokenize, ACCESS_DENIED for host access, READONLY for
// writes in read-only requests.
func Inspect(sql string, opts Options) (*Statement, error) {
	g := guard{lex: lexer{src: sql}}
	return g.run(opts)
}

type guard struct {
	lex  lexer
	toks []token // significant tokens seen so far
	stmt Statement
	// ended is set once a ';' closed the statement.
	ended bool
	// depth is the current parenthesis depth.
	depth int
	// insert tracking: where SETTINGS and FORMAT start, and whether the
	// INSERT turned out to be INSERT ... SELECT.
	settingsAt, formatAt int
	insertDone           bool
	opts                 Options
}

// checkRoleVerb applies a writer's and a tenant user's rules to the
// statement's first keyword.
func (g *guard) checkRoleVerb() error {
	verb := g.stmt.Verb
	switch g.opts.Rules {
	case RulesTenant:
		if !tenantVerbs[verb] {
			return newError(CodeReadonly, "Cannot execute %s: a tenant user may only read (SELECT, SHOW, DESCRIBE, EXISTS, EXPLAIN)",
				strings.ToUpper(verb))
		}
	case RulesWriter:
		switch verb {
		case "insert", "select", "with", "describe", "desc", "exists":
		default:
			return accessDenied("a writer may only insert (%s refused)", strings.ToUpper(verb))
		}
	}
	return nil
}

// checkRole applies a writer's and a tenant user's rules to the newest
// token.
func (g *guard) checkRole(t token) error {
	n := len(g.toks)
	switch g.opts.Rules {
	case RulesWriter:
		// A writer's SELECT may compute (SELECT 1, the driver's hello)
		// but not read a table.
		if (g.stmt.Verb == "select" || g.stmt.Verb == "with") && t.is("from") {
			return accessDenied("a writer may not read tables")
		}
	case RulesTenant:
		name := t.name()
		if IsTenantDeniedSetting(name) {
			return accessDenied("%s may not be used by a tenant user", name)
		}
		if n == 2 && g.stmt.Verb == "show" && !tenantShowObjects[name] {
			return accessDenied("SHOW %s is not allowed for a tenant user", strings.ToUpper(t.text))
		}
		if n == 3 && g.stmt.Verb == "show" && g.toks[1].is("create") && !t.is("table") && !t.is("view") && !t.is("database") {
			return accessDenied("SHOW CREATE %s is not allowed for a tenant user", strings.ToUpper(t.text))
		}
		if n == 2 && g.stmt.Verb == "explain" && t.is("estimate") {
			return accessDenied("EXPLAIN ESTIMATE is not allowed for a tenant user (it counts every tenant's rows)")
		}
		if n >= 3 && g.toks[n-2].isPunct(".") && systemDatabases[g.toks[n-3].name()] && !tenantSystemTables[name] {
			return accessDenied("%s.%s is not readable by a tenant user (it describes every tenant's data or the server's users and queries)",
				g.toks[n-3].text, t.text)
		}
		if t.isPunct("(") && n >= 2 {
			prev := g.toks[n-2].name()
			if (g.opts.TableOnlyFunctions[prev] && !tenantTableFunctions[prev]) ||
				strings.HasPrefix(prev, "dict") || strings.HasPrefix(prev, "joinget") {
				return accessDenied("%s(...) is not allowed for a tenant user (it reads around the tenant's row policy)", g.toks[n-2].text)
			}
		}
	}
	return nil
}

func (g *guard) run(opts Options) (*Statement, error) {
	g.opts = opts
	for {
		t, ok, err := g.lex.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if g.ended {
			if t.isPunct(";") {
				continue
			}
			return nil, newError(CodeSyntaxError,
				"Multi-statements are not allowed: %s follows the end of the first statement", t.describe())
		}
		if t.isPunct(";") {
			g.ended = true
			continue
		}
		g.toks = append(g.toks, t)
		if err := g.check(t); err != nil {
			return nil, err
		}
		if ins := g.stmt.Insert; ins != nil && ins.Format != "Values" {
			break // the rest is data in the named format, not SQL
		}
	}
	if g.stmt.Verb == "" {
		return nil, newError(CodeSyntaxError, "Empty query")
	}
	if g.formatAt > 0 && g.stmt.Insert == nil && !g.insertDone {
		return nil, newError(CodeSyntaxError, "Syntax error: INSERT ... FORMAT without a format name")
	}
	if opts.Rules == RulesWriter && g.stmt.Verb == "insert" && (g.insertDone || g.stmt.Insert == nil) {
		return nil, accessDenied("a writer may insert data, not INSERT ... SELECT (it reads)")
	}
	if opts.ReadOnly && !readOnlyVerbs[g.stmt.Verb] {
		return nil, newError(CodeReadonly, "Cannot execute %s in readonly mode: the request is read-only (GET or readonly setting)",
			strings.ToUpper(g.stmt.Verb))
	}
	return &g.stmt, nil
}

// check applies the rules that concern the newest token.
func (g *guard) check(t token) error {
	n := len(g.toks)
	switch {
	case t.isPunct("("):
		g.depth++
	case t.isPunct(")"):
		g.depth--
	}
	if g.stmt.Verb == "" {
		if t.isPunct("(") {
			return nil
		}
		if err := g.setVerb(t); err != nil {
			return err
		}
		return g.checkRoleVerb()
	}
	if err := g.checkRole(t); err != nil {
		return err
	}
	if t.kind == tokWord && (t.is("infile") || t.is("outfile")) {
		return accessDenied("%s is not allowed: the embedded server does not read or write host files", strings.ToUpper(t.text))
	}
	// A setting's name may be quoted (SETTINGS `max_execution_time` = 1e6,
	// SET "readonly" = 0): the engine takes it either way, so must the guard.
	if name := t.name(); deniedSettings[name] {
		return accessDenied("setting %s cannot be changed from SQL on the embedded server", name)
	}
	if t.isPunct("(") && n >= 2 {
		if prev := g.toks[n-2]; hostAccessNames[prev.name()] {
			return accessDenied("%s(...) is not allowed: the embedded server does not access host files, programs or the network", prev.text)
		}
	}
	if engine := g.engineName(); hostAccessNames[engine] {
		return accessDenied("ENGINE %s is not allowed: the embedded server does not access host files, programs or the network", engine)
	}
	if g.stmt.Verb == "insert" {
		if !g.insertDone && g.stmt.Insert == nil {
			g.trackInsert(t)
		}
	} else if g.depth == 0 && t.kind == tokWord && n >= 2 && g.toks[n-2].is("format") {
		g.stmt.OutputFormat = t.text
	}
	return nil
}

func accessDenied(format string, args ...any) *Error {
	return newError(CodeAccessDenied, format, args...)
}

// setVerb records the first keyword and refuses statements that reach
// outside the data directory or need a session.
func (g *guard) setVerb(t token) error {
	if t.kind != tokWord {
		return newError(CodeSyntaxError, "Syntax error: statement starts with %s", t.describe())
	}
	verb := strings.ToLower(t.text)
	g.stmt.Verb = verb
	rest := strings.Fields(strings.ToLower(g.lex.src[t.end:min(len(g.lex.src), t.end+64)]))
	switch verb {
	case "set", "use":
		g.stmt.ChangesSession = true
	case "system":
		if len(rest) < 2 || rest[0] != "flush" || !strings.HasPrefix(rest[1], "logs") {
			return accessDenied("SYSTEM statements are not allowed on the embedded server (except SYSTEM FLUSH LOGS)")
		}
	case "backup", "restore", "attach":
		return accessDenied("%s is not allowed on the embedded server", strings.ToUpper(verb))
	case "create":
		if len(rest) > 2 && rest[0] == "or" && rest[1] == "replace" {
			rest = rest[2:]
		}
		if len(rest) > 0 && (rest[0] == "dictionary" || rest[0] == "temporary") {
			return accessDenied("CREATE %s is not supported by the embedded server "+
				"(dictionaries read external sources; temporary tables need a session)", strings.ToUpper(rest[0]))
		}
	}
	return nil
}

// engineName returns the engine named by the newest tokens ("ENGINE = X"
// or "ENGINE X"), lower-cased, or "".
func (g *guard) engineName() string {
	n := len(g.toks)
	last := g.toks[n-1]
	if last.kind != tokWord && last.kind != tokQuotedIdent {
		return ""
	}
	switch {
	case n >= 2 && g.toks[n-2].is("engine"):
		return last.name()
	case n >= 3 && g.toks[n-2].isPunct("=") && g.toks[n-3].is("engine"):
		return last.name()
	}
	return ""
}

// trackInsert follows INSERT INTO target [(columns)] [SETTINGS ...]
// {FORMAT x | VALUES ... | SELECT ...} at parenthesis depth 0.
func (g *guard) trackInsert(t token) {
	if g.formatAt > 0 {
		g.finishInsert(g.formatAt, t.text, g.dataAfter(t.end))
		return
	}
	if g.depth > 0 {
		return
	}
	switch {
	case t.is("settings"):
		g.settingsAt = t.start
	case t.is("format"):
		g.formatAt = t.start
	case t.is("values"):
		g.finishInsert(t.start, "Values", t.end)
	case t.is("select"), t.is("with"):
		g.insertDone = true
	}
}

func (g *guard) finishInsert(clauseAt int, format string, dataAt int) {
	headEnd := clauseAt
	settings := ""
	if g.settingsAt > 0 {
		headEnd = g.settingsAt
		settings = strings.TrimSpace(g.lex.src[g.settingsAt:clauseAt])
	}
	g.stmt.Insert = &InsertStatement{
		Head:       strings.TrimSpace(g.lex.src[:headEnd]),
		Settings:   settings,
		Format:     format,
		DataOffset: dataAt,
	}
}

// dataAfter returns where inline data starts after a format name: past
// spaces and tabs and at most one line break, as the engine's own parser
// skips them. Binary data right after the line break is left intact.
func (g *guard) dataAfter(end int) int {
	s := g.lex.src
	for end < len(s) && (s[end] == ' ' || s[end] == '\t' || s[end] == '\f') {
		end++
	}
	if end < len(s) && s[end] == '\r' {
		end++
	}
	if end < len(s) && s[end] == '\n' {
		end++
	}
	return end
}

// InsertTarget returns the table an INSERT statement's head names
// ("INSERT INTO [TABLE] [db.]table ..."), with database "" when it is not
// qualified; ok is false for INSERT INTO FUNCTION and what it cannot read.
func InsertTarget(head string) (database, table string, ok bool) {
	lex := lexer{src: head}
	var toks []token
	for len(toks) < 6 {
		t, more, err := lex.next()
		if err != nil || !more {
			break
		}
		toks = append(toks, t)
	}
	i := 0
	if i < len(toks) && toks[i].is("insert") {
		i++
	}
	if i < len(toks) && toks[i].is("into") {
		i++
	}
	if i < len(toks) && toks[i].is("table") {
		i++
	}
	if i >= len(toks) || toks[i].is("function") || (toks[i].kind != tokWord && toks[i].kind != tokQuotedIdent) {
		return "", "", false
	}
	first := toks[i].text
	if i+2 < len(toks) && toks[i+1].isPunct(".") && (toks[i+2].kind == tokWord || toks[i+2].kind == tokQuotedIdent) {
		return first, toks[i+2].text, true
	}
	return "", first, true
}
