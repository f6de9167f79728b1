package service

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/google/pprof/profile"

	"gopkg.in/yaml.v3"

	"github.com/flamehouse/flamehouse/pkg/chembed"
	"github.com/flamehouse/flamehouse/pkg/ingest/receiver"
	"github.com/flamehouse/flamehouse/pkg/otlphttp"
	"github.com/flamehouse/flamehouse/pkg/pprofconv"
	"github.com/flamehouse/flamehouse/pkg/schema"
	"github.com/flamehouse/flamehouse/pkg/symbols"
)

// Version is set at build time with -ldflags "-X .../pkg/service.Version=...".
var Version = "dev"

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout io.Writer) error
}

var commands = []command{
	{"run", "start the main job: ClickHouse (embedded unless clickhouse.address is set) with the schema, and the OTLP ingest endpoints", runCommand},
	{"migrate", "apply the schema migrations and retention, then exit", migrateCommand},
	{"ddl", "print the DDL the schema migrations run, for review (honours schema.cluster)", ddlCommand},
	{"config", "print the effective configuration as YAML (secrets redacted)", configCommand},
	{"import", "convert pprof files to OTLP and send them to an OTLP profiles endpoint", importCommand},
	{"export", "write a flame graph or table query's answer as a pprof file (-selector, -profile-type, -from, -to, -o)", exportCommand},
	{"tenants", "tenants add|remove|list: read-only users that see one tenant's rows (docs/security.md)", tenantsCommand},
	{"symbols", "symbols upload FILE...: store the symbols of ELF files (executables, shared libraries, debug files, Go binaries) by build id", symbolsCommand},
	{"version", "print the version", versionCommand},
}

// Main runs the flamehouse command line and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err := c.run(ctx, args[1:], stdout)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			_, _ = fmt.Fprintln(stderr, err)
			return 2
		default:
			_, _ = fmt.Fprintf(stderr, "flamehouse %s: %v\n", c.name, err)
			return 1
		}
	}
	_, _ = fmt.Fprintf(stderr, "flamehouse: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	_, _ = fmt.Fprintln(w, "Usage: flamehouse <command> [-config.file flamehouse.yaml] [flags]\n\nCommands:")
	for _, c := range commands {
		_, _ = fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	_, _ = fmt.Fprintln(w, "\nRun flamehouse <command> -h for the flags of a command.")
}

// parse builds a command's configuration and checks it.
func parse(name string, args []string) (Config, error) { return parseWith(name, args) }

// parseWith is parse for a command with flags of its own.
func parseWith(name string, args []string, extra ...func(*flag.FlagSet)) (Config, error) {
	cfg, fs, err := ParseConfig(name, args, extra...)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("%w: unexpected arguments %s", errUsage, strings.Join(fs.Args(), " "))
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("invalid configuration:\n%w", err)
	}
	return cfg, nil
}

func runCommand(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parse("run", args)
	if err != nil {
		return err
	}
	log := cfg.newLogger()
	svc, err := Start(ctx, cfg, log, Everything)
	if err != nil {
		return err
	}
	svc.Describe(stdout)
	waitErr := svc.Wait(ctx)
	log.Info("shutting down")
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return errors.Join(waitErr, svc.Stop(stopCtx))
}

func migrateCommand(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parse("migrate", args)
	if err != nil {
		return err
	}
	svc, err := Start(ctx, cfg, cfg.newLogger(), SchemaOnly)
	if err != nil {
		return err
	}
	r := svc.Migration
	_, _ = fmt.Fprintf(stdout, "schema version %d; applied: %s; retention changed: %s\n",
		r.Version, listOrNone(r.Applied), listOrNone(r.RetentionChanged))
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return svc.Stop(stopCtx)
}

func listOrNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}

func ddlCommand(_ context.Context, args []string, stdout io.Writer) error {
	cfg, err := parse("ddl", args)
	if err != nil {
		return err
	}
	migrations, err := cfg.Schema.Migrations()
	if err != nil {
		return err
	}
	for _, m := range migrations {
		_, _ = fmt.Fprintf(stdout, "-- migration %04d_%s\n", m.Version, m.Name)
		for _, stmt := range m.Statements {
			_, _ = fmt.Fprintf(stdout, "%s;\n\n", stmt)
		}
	}
	if cfg.Schema.AccessControl != schema.AccessControlOff {
		_, _ = fmt.Fprintf(stdout, "-- access control (schema.access_control: %s; docs/security.md)\n", cfg.Schema.AccessControl)
		for _, stmt := range cfg.Schema.AccessDDL() {
			_, _ = fmt.Fprintf(stdout, "%s;\n\n", stmt)
		}
	}
	return nil
}

func versionCommand(_ context.Context, _ []string, stdout io.Writer) error {
	_, _ = fmt.Fprintf(stdout, "flamehouse %s (schema version %d, embedded ClickHouse from @chdb/lib-linux-x64-gnu %s)\n",
		Version, schema.LatestVersion(), chembed.PinnedVersion)
	return nil
}

func configCommand(_ context.Context, args []string, stdout io.Writer) error {
	cfg, err := parse("config", args)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, fmtConfig(cfg))
	return err
}

// fmtConfig renders the configuration as YAML; secrets print redacted.
func fmtConfig(cfg Config) string {
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Sprintf("# cannot render configuration: %v\n", err)
	}
	return string(out)
}

func importCommand(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "http://"+receiver.DefaultHTTPListenAddress, "OTLP/HTTP base URL of the ingest service")
	authorization := fs.String("authorization", "", `Authorization header, e.g. "Bearer <token>"`)
	serviceName := fs.String("service", "", "service.name of the profiles (default: the file name without extension)")
	var attrs attrFlags
	fs.Var(&attrs, "attr", "resource attribute key=value (repeatable), e.g. -attr k8s.namespace.name=prod")
	fs.Usage = func() {
		_, _ = fmt.Fprintln(fs.Output(), "Usage: flamehouse import [flags] profile.pb.gz [more files]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: name at least one pprof file", errUsage)
	}
	client := otlphttp.New(*endpoint, *authorization)
	for _, path := range fs.Args() {
		if err := importFile(ctx, client, path, *serviceName, attrs, stdout); err != nil {
			return err
		}
	}
	return nil
}

func importFile(ctx context.Context, client *otlphttp.Client, path, serviceName string, attrs attrFlags, stdout io.Writer) error {
	raw, err := os.ReadFile(path) //nolint:gosec // G304: the user names the files to import
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	prof, err := profile.ParseData(raw)
	if err != nil {
		return fmt.Errorf("%s is not a pprof profile: %w", path, err)
	}
	if serviceName == "" {
		serviceName = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".gz"), filepath.Ext(strings.TrimSuffix(filepath.Base(path), ".gz")))
	}
	req, err := pprofconv.Convert(prof, pprofconv.Options{ResourceAttributes: append([]string{"service.name", serviceName}, attrs...)})
	if err != nil {
		return fmt.Errorf("convert %s: %w", path, err)
	}
	resp, err := client.Export(ctx, req)
	if err != nil {
		return fmt.Errorf("send %s: %w", path, err)
	}
	types := make([]string, 0, len(prof.SampleType))
	for _, st := range prof.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	_, _ = fmt.Fprintf(stdout, "%s: sent %d samples of %s as service %q", path, len(prof.Sample), strings.Join(types, ", "), serviceName)
	if ps := resp.GetPartialSuccess(); ps.GetRejectedProfiles() > 0 {
		_, _ = fmt.Fprintf(stdout, "; %d profiles rejected: %s", ps.GetRejectedProfiles(), ps.GetErrorMessage())
	}
	_, _ = fmt.Fprintln(stdout)
	return nil
}

// attrFlags collects repeated -attr key=value flags as key, value pairs.
type attrFlags []string

func (a *attrFlags) String() string { return strings.Join(*a, ",") }

func (a *attrFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not key=value", v)
	}
	*a = append(*a, k, val)
	return nil
}

// symbolsCommand runs "flamehouse symbols upload [-tenant T] FILE...": it
// reads each file's build id and symbols and writes them into the
// configured ClickHouse (the same configuration and flags as migrate),
// one line per file. A file that cannot be stored (no build id, not ELF,
// truncated, too large) is reported and the others are still stored; the
// command then fails.
func symbolsCommand(ctx context.Context, args []string, stdout io.Writer) error {
	const use = "usage: flamehouse symbols upload [-tenant T] [-config.file flamehouse.yaml] [flags] FILE..."
	if len(args) == 0 || args[0] != "upload" {
		return fmt.Errorf("%w: %s", errUsage, use)
	}
	cfg := DefaultConfig()
	if path := findConfigFile(args[1:]); path != "" {
		if err := cfg.loadFile(path); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	fs := flag.NewFlagSet("symbols upload", flag.ContinueOnError)
	fs.String(configFileFlag, "", "YAML configuration file (flags override it)")
	cfg.RegisterFlags(fs)
	tenant := fs.String("tenant", cfg.Ingest.Receiver.DefaultTenant, "tenant the symbols are stored for (default: ingest.receiver.default_tenant)")
	fs.Usage = func() {
		_, _ = fmt.Fprintln(fs.Output(), use)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: name at least one file; %s", errUsage, use)
	}
	tenantSet := false
	fs.Visit(func(f *flag.Flag) { tenantSet = tenantSet || f.Name == "tenant" })
	if !tenantSet {
		*tenant = cfg.Ingest.Receiver.DefaultTenant // as a flag may have set it
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration:\n%w", err)
	}
	svc, err := Start(ctx, cfg, cfg.newLogger(), SchemaOnly)
	if err != nil {
		return err
	}
	store := symbols.NewStore(cfg.Schema, svc.conn, nil)
	opts := symbols.Options{Limits: symbols.Limits{MaxFileBytes: cfg.Symbols.Upload.MaxBytes}}
	var failed []string
	for _, path := range fs.Args() {
		res, err := store.UploadFile(ctx, *tenant, path, opts)
		if err != nil {
			failed = append(failed, path)
			_, _ = fmt.Fprintf(stdout, "%s: not stored: %v\n", path, err)
			continue
		}
		_, _ = fmt.Fprintln(stdout, uploadLine(path, res))
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	err = svc.Stop(stopCtx)
	if len(failed) > 0 {
		err = errors.Join(err, fmt.Errorf("%d of %d files not stored: %s", len(failed), fs.NArg(), strings.Join(failed, ", ")))
	}
	return err
}

// uploadLine is what the CLI prints for a stored file.
func uploadLine(path string, res symbols.Uploaded) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: build id %s", path, res.BuildID)
	if res.GoBuildID != "" && res.GoBuildID != res.BuildID {
		fmt.Fprintf(&b, " (Go build id %s)", res.GoBuildID)
	}
	fmt.Fprintf(&b, "; held %s; %d ranges written in %.2fs", res.Sources(), res.Ranges, res.Seconds)
	if res.Merged != "" {
		fmt.Fprintf(&b, "; %s", res.Merged)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "\n  warning: %s", w)
	}
	return b.String()
}
