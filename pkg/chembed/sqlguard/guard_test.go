package sqlguard

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInspectAccepts(t *testing.T) {
	tests := []struct {
		name       string
		sql        string
		verb       string
		session    bool
		format     string
		streamable bool
	}{
		{"select", "SELECT 1", "select", false, "", true},
		{"trailing semicolons and comment", "  select 1;; -- done\n", "select", false, "", true},
		{"function name inside a string", "SELECT 'file(x)', 'url(y)'", "select", false, "", true},
		{"function name inside comments", "SELECT 1 -- file('x')\n/* url('y') */ # remote('z')\n", "select", false, "", true},
		{"nested block comment", "SELECT /* a /* file('x') */ b */ 1", "select", false, "", true},
		{"quoted identifier without call", "SELECT `file`, \"url\" FROM t", "select", false, "", true},
		{"heredoc", "SELECT $$file('x')$$, $tag$url('y')$tag$", "select", false, "", true},
		{"with", "WITH 1 AS x SELECT x", "with", false, "", true},
		{"parenthesised select", "(SELECT 1) UNION ALL (SELECT 2)", "select", false, "", true},
		{"output format", "SELECT 1 FORMAT JSONEachRow", "select", false, "JSONEachRow", true},
		{"format function is not a clause", "SELECT format('{}', 1)", "select", false, "", true},
		{"set", "SET max_threads = 1", "set", true, "", false},
		{"use", "USE otel", "use", true, "", false},
		{"system flush logs", "SYSTEM FLUSH LOGS", "system", false, "", false},
		{"create table", "CREATE TABLE t (a UInt8) ENGINE = MergeTree ORDER BY a", "create", false, "", false},
		{"create replacing", "CREATE TABLE t (a UInt8) ENGINE ReplacingMergeTree ORDER BY a", "create", false, "", false},
		{"string with backslash quote", `SELECT 'it\'s file(' , 'x'`, "select", false, "", true},
		{"string with doubled quote", "SELECT 'it''s file('", "select", false, "", true},
		{"tuple access after number", "SELECT t.1.1 FROM t", "select", false, "", true},
		{"insert select", "INSERT INTO t SELECT * FROM u", "insert", false, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stmt, err := Inspect(tc.sql, Options{})
			require.NoError(t, err)
			require.Equal(t, tc.verb, stmt.Verb)
			require.Equal(t, tc.session, stmt.ChangesSession)
			require.Equal(t, tc.format, stmt.OutputFormat)
			require.Equal(t, tc.streamable, stmt.Streamable())
			require.Nil(t, stmt.Insert)
		})
	}
}

func TestInspectInsertWithData(t *testing.T) {
	binary := "\x00\x01;\n\nfile('x') ' unclosed `"
	tests := []struct {
		name     string
		sql      string
		head     string
		settings string
		format   string
		data     string
	}{
		{"native with binary data", "INSERT INTO t FORMAT Native\n" + binary, "INSERT INTO t", "", "Native", binary},
		{"no data yet", "INSERT INTO t FORMAT Native", "INSERT INTO t", "", "Native", ""},
		{
			"columns and settings", "INSERT INTO db.t (a, b) SETTINGS async_insert=1, x='y' FORMAT CSV\r\n1,2\n",
			"INSERT INTO db.t (a, b)", "SETTINGS async_insert=1, x='y'", "CSV", "1,2\n",
		},
		{"only one line break is skipped", "INSERT INTO t FORMAT TSV \n\n1\n", "INSERT INTO t", "", "TSV", "\n1\n"},
		{"quoted table", "insert into `my db`.`t` format RowBinary\nxyz", "insert into `my db`.`t`", "", "RowBinary", "xyz"},
		{"values", "INSERT INTO t VALUES (1, 'a'), (2, 'b')", "INSERT INTO t", "", "Values", " (1, 'a'), (2, 'b')"},
		{"table function target", "INSERT INTO TABLE t (x) FORMAT JSONEachRow\n{}", "INSERT INTO TABLE t (x)", "", "JSONEachRow", "{}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stmt, err := Inspect(tc.sql, Options{})
			require.NoError(t, err)
			require.NotNil(t, stmt.Insert)
			require.Equal(t, tc.head, stmt.Insert.Head)
			require.Equal(t, tc.settings, stmt.Insert.Settings)
			require.Equal(t, tc.format, stmt.Insert.Format)
			require.Equal(t, tc.data, tc.sql[stmt.Insert.DataOffset:])
		})
	}
}

func TestInspectRefuses(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		code int
		opts Options
	}{
		{"multi-statement", "SELECT 1; SELECT 2", CodeSyntaxError, Options{}},
		{"multi-statement hiding a write", "SELECT 1;\nDROP TABLE t", CodeSyntaxError, Options{}},
		{"file table function", "SELECT * FROM file('/etc/passwd', 'LineAsString')", CodeAccessDenied, Options{}},
		{"file scalar function", "SELECT file('/etc/hostname')", CodeAccessDenied, Options{}},
		{"upper case and space", "SELECT * FROM FILE ('/etc/passwd')", CodeAccessDenied, Options{}},
		{"back-quoted name", "SELECT * FROM `file`('/etc/passwd')", CodeAccessDenied, Options{}},
		{"double-quoted name", `SELECT * FROM "url"('http://x', CSV)`, CodeAccessDenied, Options{}},
		{"comment between name and paren", "SELECT * FROM file/**/('/etc/passwd')", CodeAccessDenied, Options{}},
		{"line comment between name and paren", "SELECT * FROM file -- x\n('/etc/passwd')", CodeAccessDenied, Options{}},
		{"url", "SELECT * FROM url('http://169.254.169.254/', CSV, 'a String')", CodeAccessDenied, Options{}},
		{"remote", "SELECT * FROM remote('10.0.0.1', system.one)", CodeAccessDenied, Options{}},
		{"s3", "SELECT * FROM s3('https://b/k', 'CSV')", CodeAccessDenied, Options{}},
		{"executable", "SELECT * FROM executable('x.sh', TSV, 'a String')", CodeAccessDenied, Options{}},
		{"into outfile", "SELECT 1 INTO OUTFILE '/tmp/x'", CodeAccessDenied, Options{}},
		{"from infile", "INSERT INTO t FROM INFILE '/etc/passwd' FORMAT LineAsString", CodeAccessDenied, Options{}},
		{"file engine", "CREATE TABLE t (a String) ENGINE = File(TSV)", CodeAccessDenied, Options{}},
		{"url engine without parens", "CREATE TABLE t (a String) ENGINE URL", CodeAccessDenied, Options{}},
		{"filesystem database", "CREATE DATABASE d ENGINE = Filesystem('/')", CodeAccessDenied, Options{}},
		{"dictionary", "CREATE DICTIONARY d (k UInt64, v String) PRIMARY KEY k SOURCE(HTTP(url 'http://x')) LAYOUT(FLAT()) LIFETIME(0)", CodeAccessDenied, Options{}},
		{"or replace dictionary", "CREATE OR REPLACE DICTIONARY d (k UInt64) PRIMARY KEY k", CodeAccessDenied, Options{}},
		{"temporary table", "CREATE TEMPORARY TABLE t (a UInt8)", CodeAccessDenied, Options{}},
		{"system shutdown", "SYSTEM SHUTDOWN", CodeAccessDenied, Options{}},
		{"system kill", "system kill", CodeAccessDenied, Options{}},
		{"backup", "BACKUP TABLE t TO Disk('default', 'x.zip')", CodeAccessDenied, Options{}},
		{"restore", "RESTORE TABLE t FROM Disk('default', 'x.zip')", CodeAccessDenied, Options{}},
		{"attach", "ATTACH TABLE t FROM '/var/lib/x' (a UInt8) ENGINE = MergeTree ORDER BY a", CodeAccessDenied, Options{}},
		{"raise execution time", "SELECT 1 SETTINGS max_execution_time = 100000", CodeAccessDenied, Options{}},
		{"raise execution time, backquoted", "SELECT 1 SETTINGS `max_execution_time` = 100000", CodeAccessDenied, Options{}},
		{"lift readonly, double-quoted", `SET "ReadOnly" = 0`, CodeAccessDenied, Options{}},
		{"template file, backquoted", "SELECT 1 SETTINGS `format_template_row` = '/etc/passwd' FORMAT Template", CodeAccessDenied, Options{}},
		{"template file", "SELECT 1 SETTINGS format_template_row = '/etc/passwd' FORMAT Template", CodeAccessDenied, Options{}},
		{"function in values", "INSERT INTO t VALUES (file('/etc/passwd'))", CodeAccessDenied, Options{}},
		{"fake heredoc", "SELECT $x, file('/etc/passwd'), $x", CodeAccessDenied, Options{}},
		{"number then dot", "SELECT 1.file('/etc/passwd')", CodeSyntaxError, Options{}},
		{"after hex string", "SELECT x'41', file('/etc/passwd')", CodeAccessDenied, Options{}},
		{"unclosed string", "SELECT 'abc", CodeSyntaxError, Options{}},
		{"unclosed comment", "SELECT /* abc", CodeSyntaxError, Options{}},
		{"unclosed quoted name", "SELECT `abc", CodeSyntaxError, Options{}},
		{"hash without space", "#!/x\nSELECT 1 #bad", CodeSyntaxError, Options{}},
		{"empty", " \n -- nothing\n", CodeSyntaxError, Options{}},
		{"format without name", "INSERT INTO t FORMAT", CodeSyntaxError, Options{}},
		{"write in read-only request", "INSERT INTO t VALUES (1)", CodeReadonly, Options{ReadOnly: true}},
		{"ddl in read-only request", "CREATE TABLE t (a UInt8) ENGINE = Memory", CodeReadonly, Options{ReadOnly: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Inspect(tc.sql, tc.opts)
			var ex *Error
			require.ErrorAs(t, err, &ex)
			require.Equal(t, tc.code, ex.Code, ex.Error())
		})
	}
}

func TestInspectReadOnlyAllowsReads(t *testing.T) {
	for _, sql := range []string{"SELECT 1", "SHOW TABLES", "DESCRIBE TABLE system.one", "EXISTS TABLE t", "EXPLAIN SELECT 1", "WITH 1 AS x SELECT x"} {
		_, err := Inspect(sql, Options{ReadOnly: true})
		require.NoError(t, err, sql)
	}
}

func TestTokenize(t *testing.T) {
	toks, err := tokenize("SELECT a.b, 'x''y', `q``n`, 1.5e-3, 0x1F, -- c\n $h$ $ $h$ FROM t WHERE x != 1")
	require.NoError(t, err)
	var texts []string
	for _, tk := range toks {
		texts = append(texts, tk.text)
	}
	require.Equal(t, []string{
		"SELECT", "a", ".", "b", ",", "x'y", ",", "q`n", ",", "1.5e-3", ",", "0x1F", ",",
		"$h$ $ $h$", "FROM", "t", "WHERE", "x", "!=", "1",
	}, texts)
	require.Equal(t, tokQuotedIdent, toks[7].kind)
	require.Equal(t, tokString, toks[5].kind)
}

// FuzzInspect checks that no input makes the guard panic or report
// offsets outside the statement, and that what it accepts as an INSERT
// splits the text consistently.
func FuzzInspect(f *testing.F) {
	for _, seed := range []string{
		"SELECT 1", "SELECT 1; SELECT 2", "INSERT INTO t FORMAT Native\n\x00\x01",
		"INSERT INTO t (a) SETTINGS x=1 VALUES (1)", "SELECT $a$ x $a$", "SELECT `a``b`", "SELECT 'a\\'b'",
		"/* /* */ */ SELECT 1", "SELECT 1.2.3e+4", "SELECT x'ff', b'01'", "#! shebang\nSELECT 1",
		"SELECT file('x')", "CREATE TABLE t ENGINE = File(TSV)", "SELECT 0x", "SELECT .5", "$", "'", "\xff\xfe",
		"SELECT * FROM `\\x73ystem`.parts", "SELECT 1 SETTINGS chdb_client_name = ''", "SELECT * FROM merge(db, 'x')",
		"INSERT INTO db.t SELECT * FROM db.u", "SHOW CREATE USER x", "SELECT dictGet('d', 'a', 1)",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		for _, opts := range []Options{
			{},
			{ReadOnly: true},
			{Rules: RulesWriter},
			{ReadOnly: true, Rules: RulesTenant, TableOnlyFunctions: map[string]bool{"merge": true, "mergetreeindex": true}},
		} {
			checkInspected(t, sql, opts)
		}
		checkTokens(t, sql)
	})
}

// checkInspected: the guard refuses with an Exception or accepts an INSERT
// whose data offset and head fit the text, and a tenant user only the
// verbs tenants may run.
func checkInspected(t *testing.T, sql string, opts Options) {
	stmt, err := Inspect(sql, opts)
	if err != nil {
		var ex *Error
		if !errors.As(err, &ex) {
			t.Fatalf("non-Exception error %T: %v", err, err)
		}
		return
	}
	if ins := stmt.Insert; ins != nil {
		if ins.DataOffset < 0 || ins.DataOffset > len(sql) {
			t.Fatalf("data offset %d outside [0,%d]", ins.DataOffset, len(sql))
		}
		if !strings.HasPrefix(strings.TrimSpace(sql), ins.Head) {
			t.Fatalf("head %q is not a prefix of %q", ins.Head, sql)
		}
		_, _, _ = InsertTarget(ins.Head)
	}
	if opts.Rules == RulesTenant && !tenantVerbs[stmt.Verb] {
		t.Fatalf("a tenant user's %q was accepted", stmt.Verb)
	}
}

// checkTokens: the tokens of a text the lexer reads are in order, within
// it and not empty.
func checkTokens(t *testing.T, sql string) {
	toks, err := tokenize(sql)
	if err != nil {
		return
	}
	prev := 0
	for _, tk := range toks {
		if tk.start < prev || tk.end > len(sql) || tk.start >= tk.end {
			t.Fatalf("token %+v out of order or bounds", tk)
		}
		prev = tk.end
	}
}

func TestInspectHostileHeredocsStayLinear(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ { // chembed.DefaultMaxQueryBytes
		b.WriteString("$" + strconv.Itoa(i) + "$ ")
	}
	_, err := Inspect("SELECT "+b.String(), Options{})
	var ex *Error
	require.ErrorAs(t, err, &ex)
	require.Equal(t, CodeSyntaxError, ex.Code)
}
