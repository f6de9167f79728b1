package service

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/internal/nativebin"
	"github.com/flamehouse/flamehouse/pkg/ingest/receiver"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/secret"
)

// TestSymbolsUploadCommandAndEndpoint runs Flamehouse with auth on, then
// `flamehouse symbols upload` against its ClickHouse (as an operator
// would, -clickhouse.address) with a C executable, a shared library's
// separate debug file, a Go binary and a file without a build id, and
// reads back what each stored; then the same service's PUT
// /v1/symbols/<build id>, with and without credentials.
func TestSymbolsUploadCommandAndEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine; skipped under -short")
	}
	nativebin.Require(t, "gcc", "objcopy", "go")
	exe := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, Kind: nativebin.PIE})
	lib := nativebin.Build(t, nativebin.Spec{Sources: nativebin.LibraryC, Kind: nativebin.Shared})
	libDebug := nativebin.DebugOnly(t, lib)
	goBin := nativebin.BuildGo(t, nativebin.ProgramGo)
	noID := nativebin.Build(t, nativebin.Spec{Sources: nativebin.ProgramC, NoBuildID: true})

	cfg := localConfig(t)
	cfg.SelfProfile.Enabled = false
	cfg.Ingest.Receiver.Auth.Enabled = true
	cfg.Ingest.Receiver.Auth.Tokens = []receiver.TokenCredential{{Token: secret.String("s3cret"), Tenant: "team-http"}}
	ctx := context.Background()
	svc, err := Start(ctx, cfg, slog.New(slog.DiscardHandler), Everything)
	require.NoError(t, err)
	defer func() { _ = svc.Stop(ctx) }()

	var out, errOut bytes.Buffer
	code := Main([]string{
		"symbols", "upload", "-clickhouse.address", svc.HTTPAddress(), "-clickhouse.protocol", "http", "-log.level", "warn",
		"-tenant", "team-cli", exe.Path, libDebug.Path, goBin.Path, noID.Path,
	}, &out, &errOut)
	require.Equal(t, 1, code, "one file has no build id: %s %s", out.String(), errOut.String())
	printed := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(regexp.QuoteMeta(exe.Path) + `: build id ` + exe.BuildID + `; held symtab, dynsym, DWARF; [1-9]\d* ranges written in \d+\.\d\ds`),
		regexp.MustCompile(regexp.QuoteMeta(libDebug.Path) + `: build id ` + lib.BuildID + `; held symtab, DWARF; [1-9]\d* ranges written`),
		regexp.MustCompile(regexp.QuoteMeta(goBin.Path) + `: build id ` + goBin.BuildID + ` \(Go build id \S+\); held symtab, DWARF, Go pclntab; [1-9]\d* ranges written`),
		regexp.MustCompile(regexp.QuoteMeta(noID.Path) + `: not stored: no build id: .*-Wl,--build-id`),
	} {
		require.Regexp(t, want, printed)
	}
	require.Contains(t, errOut.String(), "1 of 4 files not stored: "+noID.Path)

	type row struct {
		file                   string
		symtab, dwarf, pclntab bool
		ranges, stored         uint64
		segments               int
	}
	read := func(tenant, buildID string) row {
		var r row
		var sizes []uint64
		err := svc.Conn().QueryRow(ctx, "SELECT FileName, HasSymtab, HasDwarf, HasGoPclntab, Ranges, SegmentSizes FROM "+
			cfg.Schema.Qualified(schema.Executables)+" WHERE TenantId = ? AND BuildId = ? ORDER BY UpdatedAt DESC LIMIT 1",
			tenant, buildID).Scan(&r.file, &r.symtab, &r.dwarf, &r.pclntab, &r.ranges, &sizes)
		require.NoError(t, err, "%s %s", tenant, buildID)
		r.segments = len(sizes)
		require.NoError(t, svc.Conn().QueryRow(ctx, "SELECT count() FROM "+cfg.Schema.Qualified(schema.Symbols)+
			" WHERE TenantId = ? AND BuildId = ?", tenant, buildID).Scan(&r.stored))
		return r
	}
	got := read("team-cli", exe.BuildID)
	require.Equal(t, "prog", got.file)
	require.True(t, got.symtab && got.dwarf && !got.pclntab)
	require.Positive(t, got.ranges)
	require.Equal(t, got.ranges, got.stored)
	require.Positive(t, got.segments)
	require.Equal(t, "libprog.so.debug", read("team-cli", lib.BuildID).file)
	goRow := read("team-cli", goBin.BuildID)
	require.True(t, goRow.pclntab)
	require.Equal(t, goRow.ranges, goRow.stored)
	var n uint64
	require.NoError(t, svc.Conn().QueryRow(ctx, "SELECT count() FROM "+cfg.Schema.Qualified(schema.Executables)).Scan(&n))
	require.Equal(t, uint64(3), n, "the file without a build id stored nothing")

	// Without -tenant, the tenant of data ingested without auth.
	out.Reset()
	require.Equal(t, 0, Main([]string{
		"symbols", "upload", "-clickhouse.address", svc.HTTPAddress(), "-clickhouse.protocol", "http", "-log.level", "warn",
		"-ingest.default-tenant", "team-default", exe.Path,
	}, &out, &errOut), errOut.String())
	require.Equal(t, got.ranges, read("team-default", exe.BuildID).ranges)

	// The HTTP endpoint of the same service: the stripped library's
	// executable joins its debug file's symbols for the token's tenant.
	_, httpAddr := svc.IngestAddresses()
	put := func(auth, path, buildID string) int {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+httpAddr+receiver.SymbolsPathPrefix+buildID+"?file_name=libprog.so",
			bytes.NewReader(data))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusUnauthorized, put("", libDebug.Path, lib.BuildID))
	require.Equal(t, http.StatusOK, put("Bearer s3cret", libDebug.Path, lib.BuildID))
	require.Equal(t, http.StatusOK, put("Bearer s3cret", nativebin.Stripped(t, lib).Path, lib.BuildID))
	joined := read("team-http", lib.BuildID)
	require.True(t, joined.dwarf, "the debug file's symbols stay")
	require.Equal(t, "libprog.so", joined.file)

	// Usage errors.
	out.Reset()
	errOut.Reset()
	require.Equal(t, 2, Main([]string{"symbols"}, &out, &errOut))
	require.Contains(t, errOut.String(), "flamehouse symbols upload")
	require.Equal(t, 2, Main([]string{"symbols", "upload"}, &out, &errOut))
	require.Contains(t, errOut.String(), "name at least one file")
}
