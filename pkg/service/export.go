package service

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/flamehouse/flamehouse/pkg/query"
)

// exportFlags are the flags of `flamehouse export`: the query whose answer
// is written as pprof, and where to.
type exportFlags struct {
	// query is a query as the datasource stores it (JSON); the flags
	// below set its keys.
	query string
	// selector and profileType set labelSelector and profileTypeId.
	selector, profileType string
	// from and to bound the range: Unix milliseconds, RFC 3339 or
	// now-<duration>.
	from, to string
	// output is the file written ("-": standard output; "": the engine's
	// file name in the current directory).
	output string
	// tenant is the tenant whose rows are read ("": the ingest's default
	// tenant).
	tenant string
}

// Defaults of `flamehouse export`.
const (
	defaultExportProfileType = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	defaultExportFrom        = "now-1h"
	defaultExportTo          = "now"
)

func (o *exportFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.query, "query", "", `the query as the datasource stores it, JSON, e.g. '{"queryType":"table","hideFrames":["kernel"]}' (the other flags set its keys)`)
	fs.StringVar(&o.selector, "selector", "", `label selector, e.g. '{service_name="checkout"}' (default: the query's, else every series)`)
	fs.StringVar(&o.profileType, "profile-type", "", "profile type id (default: the query's, else "+defaultExportProfileType+")")
	fs.StringVar(&o.from, "from", defaultExportFrom, "start of the range: Unix milliseconds, RFC 3339 or now-<duration>")
	fs.StringVar(&o.to, "to", defaultExportTo, "end of the range, like -from")
	fs.StringVar(&o.output, "o", "", `file to write, "-" for standard output (default: flamehouse-<type>-<service>-<start>.pb.gz)`)
	fs.StringVar(&o.tenant, "tenant", "", "tenant whose rows are read (default: ingest.receiver.default_tenant)")
}

// request builds the query's request over the range, every problem at once.
func (o *exportFlags) request(now time.Time) (*query.Request, error) {
	q := map[string]any{}
	var errs []error
	if o.query != "" {
		if err := json.Unmarshal([]byte(o.query), &q); err != nil {
			errs = append(errs, fmt.Errorf("-query is not a JSON object: %w", err))
		}
	}
	if o.selector != "" {
		q["labelSelector"] = o.selector
	}
	if o.profileType != "" {
		q["profileTypeId"] = o.profileType
	}
	from, err := query.ParseTime(o.from, now)
	if err != nil {
		errs = append(errs, fmt.Errorf("-from: %w", err))
	}
	to, err := query.ParseTime(o.to, now)
	if err != nil {
		errs = append(errs, fmt.Errorf("-to: %w", err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	raw, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	return query.ParseRequest(raw, from, to, 0, query.Options{DefaultProfileType: defaultExportProfileType, Now: func() time.Time { return now }})
}

// exportCommand runs `flamehouse export`: the query's answer (a flame
// graph or table query) from the configured ClickHouse, written as a
// gzipped pprof file by the same engine call the datasource's pprof
// resource makes (query.Engine.Pprof).
func exportCommand(ctx context.Context, args []string, stdout io.Writer) error {
	var o exportFlags
	cfg, err := parseWith("export", args, o.register)
	if err != nil {
		return err
	}
	r, err := o.request(time.Now())
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	tenant := o.tenant
	if tenant == "" {
		tenant = cfg.Ingest.Receiver.DefaultTenant
	}
	svc, err := Start(ctx, cfg, cfg.newLogger(), SchemaOnly)
	if err != nil {
		return err
	}
	engine := &query.Engine{Conn: svc.conn, Tables: cfg.Schema, Tenant: tenant}
	prof, exportErr := engine.Pprof(ctx, r)
	if exportErr == nil {
		exportErr = writeExport(o.output, query.PprofFileName(r), stdout, func(w io.Writer) error { return prof.Write(w) })
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := errors.Join(exportErr, svc.Stop(stopCtx)); err != nil {
		return err
	}
	if o.output != "-" {
		var total int64
		for _, s := range prof.Sample {
			total += s.Value[0]
		}
		name := o.output
		if name == "" {
			name = query.PprofFileName(r)
		}
		_, _ = fmt.Fprintf(stdout, "%s: %d stacks, %d %s of %s, %s to %s\n", name, len(prof.Sample), total, r.ProfileType.SampleUnit,
			r.ProfileType.ID, r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339))
	}
	return nil
}

// writeExport writes a file (name, or def when name is empty) or, for
// "-", standard output.
func writeExport(name, def string, stdout io.Writer, write func(io.Writer) error) error {
	if name == "-" {
		return write(stdout)
	}
	if name == "" {
		name = def
	}
	f, err := os.Create(name) //nolint:gosec // G304: the user names the file to write
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	return f.Close()
}
