package symbols

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Uploaded is what one upload read and stored: the answer of the HTTP
// endpoint and the line the CLI prints.
type Uploaded struct {
	// FileName is the name stored with the executable.
	FileName string `json:"file_name"`
	// BuildID is the file's build id (GNU, else Go).
	BuildID string `json:"build_id"`
	// GoBuildID is the Go build id, when the file has one.
	GoBuildID string `json:"go_build_id,omitempty"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// What the file held.
	HasSymtab    bool `json:"symtab"`
	HasDynsym    bool `json:"dynsym"`
	HasDwarf     bool `json:"dwarf"`
	HasGoPclntab bool `json:"go_pclntab"`
	// Ranges is the number of rows written to profile_symbols.
	Ranges int `json:"ranges"`
	// Version is the upload's version (Unix milliseconds).
	Version uint64 `json:"version"`
	// Merged says how an earlier upload of the build id was combined with
	// this one (see Store.Put); empty when it was not.
	Merged string `json:"merged,omitempty"`
	// Warnings are the parts of the file that could not be read.
	Warnings []string `json:"warnings,omitempty"`
	// Seconds is the time taken, reading and storing.
	Seconds float64 `json:"seconds"`
}

// Sources lists what the file held, e.g. "symtab, DWARF".
func (u *Uploaded) Sources() string {
	e := Executable{HasSymtab: u.HasSymtab, HasDynsym: u.HasDynsym, HasDwarf: u.HasDwarf, HasGoPclntab: u.HasGoPclntab}
	return e.Sources()
}

// Upload reads one file's symbols and stores them for a tenant with
// source "upload". Extraction errors are returned as they are (test them
// with errors.Is against ErrNotELF and the others); a store error is
// wrapped with ErrStore.
func (s *Store) Upload(ctx context.Context, tenant, fileName string, r io.ReaderAt, size int64, opts Options) (Uploaded, error) {
	start := time.Now()
	exe, err := ExtractWith(r, size, opts)
	if err != nil {
		return Uploaded{FileName: fileName}, err
	}
	out := Uploaded{
		FileName: fileName, BuildID: exe.BuildID, GoBuildID: exe.GoBuildID, Size: exe.Size,
		HasSymtab: exe.HasSymtab, HasDynsym: exe.HasDynsym, HasDwarf: exe.HasDwarf, HasGoPclntab: exe.HasGoPclntab,
		Warnings: exe.Warnings,
	}
	stored, err := s.Put(ctx, tenant, SourceUpload, fileName, exe)
	if err != nil {
		return out, fmt.Errorf("%w: %w", ErrStore, err)
	}
	out.Ranges, out.Version, out.Merged = stored.Ranges, stored.Version, stored.Merged
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// ErrStore wraps a failure to write to ClickHouse (not the file's fault).
var ErrStore = errors.New("cannot store the symbols")

// UploadFile is Upload of a file on disk, stored under its base name.
func (s *Store) UploadFile(ctx context.Context, tenant, path string, opts Options) (Uploaded, error) {
	f, err := os.Open(path) //nolint:gosec // G304: the operator names the files to upload
	if err != nil {
		return Uploaded{FileName: filepath.Base(path)}, err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return Uploaded{FileName: filepath.Base(path)}, err
	}
	if !st.Mode().IsRegular() {
		return Uploaded{FileName: filepath.Base(path)}, fmt.Errorf("%s is not a regular file", path)
	}
	return s.Upload(ctx, tenant, filepath.Base(path), f, st.Size(), opts)
}

// UploadConfig is the symbols upload endpoint's configuration (the
// service's symbols.upload section); its byte limit also bounds the CLI.
type UploadConfig struct {
	// Enabled serves PUT /v1/symbols/<build id> on the ingest service's
	// HTTP listener. Default true.
	Enabled bool `yaml:"enabled"`
	// MaxBytes is the largest file accepted, after decompression. Default
	// 1 GiB.
	MaxBytes int64 `yaml:"max_bytes"`
	// Timeout bounds one upload: receiving, reading and storing it.
	// Default 10m.
	Timeout time.Duration `yaml:"timeout"`
}

// Upload defaults.
const (
	DefaultUploadMaxBytes = DefaultMaxFileBytes
	DefaultUploadTimeout  = 10 * time.Minute
)

// DefaultUploadConfig returns the upload defaults.
func DefaultUploadConfig() UploadConfig {
	return UploadConfig{Enabled: true, MaxBytes: DefaultUploadMaxBytes, Timeout: DefaultUploadTimeout}
}

// RegisterFlags binds the section to flags with the given prefix.
func (c *UploadConfig) RegisterFlags(f *flag.FlagSet, prefix string) {
	f.BoolVar(&c.Enabled, prefix+"enabled", c.Enabled, "serve PUT /v1/symbols/<build id> on the ingest HTTP listener")
	f.Int64Var(&c.MaxBytes, prefix+"max-bytes", c.MaxBytes, "largest file a symbols upload accepts (HTTP and CLI), after decompression")
	f.DurationVar(&c.Timeout, prefix+"timeout", c.Timeout, "bound of one symbols upload over HTTP: receiving, reading and storing")
}

// Validate reports every problem at once.
func (c *UploadConfig) Validate() error {
	var err error
	if c.MaxBytes <= 0 {
		err = errors.Join(err, fmt.Errorf("max_bytes must be positive, got %d", c.MaxBytes))
	}
	if c.Timeout <= 0 {
		err = errors.Join(err, fmt.Errorf("timeout must be positive, got %s", c.Timeout))
	}
	return err
}
