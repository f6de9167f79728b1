package schema

import (
	"errors"
	"flag"
	"fmt"
	"regexp"
	"time"
)

// Config says where the Flamehouse tables live and how long data is kept.
type Config struct {
	// Database holds the tables. Default "otel", next to the OpenTelemetry
	// Collector exporter's otel_traces and otel_logs.
	Database string `yaml:"database"`
	// TablePrefix starts every table name. Default "otel_" (otel_profile_samples, ...).
	TablePrefix string `yaml:"table_prefix"`
	// Cluster, when set, is the cluster name for ON CLUSTER DDL: tables become
	// Replicated*MergeTree "<name>_local" tables with a Distributed "<name>"
	// table over them. Empty: single node.
	Cluster string `yaml:"cluster"`
	// ReplicationPath is the ZooKeeper/Keeper path of replicated tables in
	// cluster mode; {database} and {table} are expanded by the server.
	ReplicationPath string `yaml:"replication_path"`
	// ReplicaName is the replica name macro in cluster mode.
	ReplicaName string `yaml:"replica_name"`
	// Retention says how long each kind of data is kept.
	Retention Retention `yaml:"retention"`
	// AccessControl says whether Migrate applies AccessDDL (roles, grants,
	// row policies) after the migrations: "auto" tries and skips it when the
	// server refuses (no writable access storage, or a user without access
	// management); "on" makes that refusal an error; "off" never tries.
	AccessControl string `yaml:"access_control"`
}

// Retention is the time to live of the sample tables; 0 keeps data forever.
// The metadata tables (series, stacks, frames, catalogs) keep rows one day
// longer than the longest of these, so that every sample row can still be
// resolved to its stack and labels.
type Retention struct {
	// Samples is the retention of raw samples. Default 7 days.
	Samples time.Duration `yaml:"samples" mapstructure:"samples"`
	// Minute is the retention of the per-minute rollup. Default 30 days.
	Minute time.Duration `yaml:"minute" mapstructure:"minute"`
	// Hour is the retention of the per-hour rollup. Default 365 days.
	Hour time.Duration `yaml:"hour" mapstructure:"hour"`
	// Symbols is how long uploaded and fetched symbols (profile_symbols,
	// profile_executables) are kept after their upload. Default 0: forever,
	// since a build may run, and be profiled, for longer than any sample
	// retention.
	Symbols time.Duration `yaml:"symbols" mapstructure:"symbols"`
}

// Defaults, in one place.
const (
	DefaultDatabase         = "otel"
	DefaultTablePrefix      = "otel_"
	DefaultReplicationPath  = "/clickhouse/tables/{shard}/{database}/{table}"
	DefaultReplicaName      = "{replica}"
	DefaultSamplesRetention = 7 * 24 * time.Hour
	DefaultMinuteRetention  = 30 * 24 * time.Hour
	DefaultHourRetention    = 365 * 24 * time.Hour
	DefaultAccessControl    = AccessControlAuto
)

// Values of Config.AccessControl.
const (
	AccessControlAuto = "auto"
	AccessControlOn   = "on"
	AccessControlOff  = "off"
)

// DefaultConfig returns the single-node defaults.
func DefaultConfig() Config {
	return Config{
		Database:        DefaultDatabase,
		TablePrefix:     DefaultTablePrefix,
		ReplicationPath: DefaultReplicationPath,
		ReplicaName:     DefaultReplicaName,
		Retention: Retention{
			Samples: DefaultSamplesRetention,
			Minute:  DefaultMinuteRetention,
			Hour:    DefaultHourRetention,
		},
		AccessControl: DefaultAccessControl,
	}
}

// RegisterFlags binds the config to flags with the given prefix; the flags'
// defaults are the config's current values.
func (c *Config) RegisterFlags(f *flag.FlagSet, prefix string) {
	f.StringVar(&c.Database, prefix+"database", c.Database, "database of the Flamehouse tables")
	f.StringVar(&c.TablePrefix, prefix+"table-prefix", c.TablePrefix, "prefix of every Flamehouse table name")
	f.StringVar(&c.Cluster, prefix+"cluster", c.Cluster, "cluster name for ON CLUSTER DDL with Replicated and Distributed tables (empty: single node)")
	f.DurationVar(&c.Retention.Samples, prefix+"retention.samples", c.Retention.Samples, "retention of raw samples (0: forever)")
	f.DurationVar(&c.Retention.Minute, prefix+"retention.minute", c.Retention.Minute, "retention of the per-minute rollup (0: forever)")
	f.DurationVar(&c.Retention.Hour, prefix+"retention.hour", c.Retention.Hour, "retention of the per-hour rollup (0: forever)")
	f.DurationVar(&c.Retention.Symbols, prefix+"retention.symbols", c.Retention.Symbols, "retention of uploaded and fetched symbols, from their upload (0: forever)")
	f.StringVar(&c.AccessControl, prefix+"access-control", c.AccessControl,
		"apply roles, grants and row policies after migrating: auto (skip when the server refuses), on (refusal is an error), off")
}

// Patterns of names pasted into DDL, in the syntax Go's regexp and
// JavaScript's RegExp share (the config editor checks them too:
// src/generated/backend.ts).
const (
	// IdentifierPattern is a plain identifier, a database or table name.
	IdentifierPattern = `^[A-Za-z_][A-Za-z0-9_]*$`
	// TablePrefixPattern is a table prefix, possibly empty.
	TablePrefixPattern = `^[A-Za-z0-9_]*$`
)

var (
	identifierRe = regexp.MustCompile(IdentifierPattern)
	prefixRe     = regexp.MustCompile(TablePrefixPattern)
	clusterRe    = regexp.MustCompile(`^[A-Za-z0-9_.{}-]+$`)
	pathRe       = regexp.MustCompile(`^[A-Za-z0-9_./{}-]+$`)

	errDatabase  = errors.New("database must be a plain identifier (letters, digits, underscore; not starting with a digit)")
	errPrefix    = errors.New("table prefix may contain only letters, digits and underscores")
	errCluster   = errors.New("cluster name may contain only letters, digits, '_', '.', '-' and {macros}")
	errPath      = errors.New("replication path and replica name may contain only letters, digits, '_', '.', '/', '-' and {macros}")
	errRetention = errors.New("retention must not be negative")
	errRollups   = errors.New("rollup retention must not be shorter than the retention of raw samples (0 = forever counts as longest)")
	errAccess    = errors.New("access control must be auto, on or off")
)

// IsIdentifier reports whether a database or table name is a plain
// identifier: letters, digits and underscores, not starting with a digit.
func IsIdentifier(name string) bool { return identifierRe.MatchString(name) }

// Validate reports every problem of the config at once. Names are checked
// here because they are pasted into DDL as identifiers.
func (c *Config) Validate() error {
	var err error
	if !identifierRe.MatchString(c.Database) {
		err = errors.Join(err, fmt.Errorf("%w: %q", errDatabase, c.Database))
	}
	if !prefixRe.MatchString(c.TablePrefix) {
		err = errors.Join(err, fmt.Errorf("%w: %q", errPrefix, c.TablePrefix))
	}
	if c.Cluster != "" {
		if !clusterRe.MatchString(c.Cluster) {
			err = errors.Join(err, fmt.Errorf("%w: %q", errCluster, c.Cluster))
		}
		if !pathRe.MatchString(c.ReplicationPath) || !pathRe.MatchString(c.ReplicaName) {
			err = errors.Join(err, fmt.Errorf("%w: %q, %q", errPath, c.ReplicationPath, c.ReplicaName))
		}
	}
	r := c.Retention
	if r.Samples < 0 || r.Minute < 0 || r.Hour < 0 || r.Symbols < 0 {
		err = errors.Join(err, errRetention)
	} else if longer(r.Samples, r.Minute) || longer(r.Samples, r.Hour) {
		err = errors.Join(err, errRollups)
	}
	switch c.AccessControl {
	case AccessControlAuto, AccessControlOn, AccessControlOff:
	default:
		err = errors.Join(err, fmt.Errorf("%w: %q", errAccess, c.AccessControl))
	}
	return err
}

// longer reports whether retention a keeps data longer than b (0 = forever).
func longer(a, b time.Duration) bool {
	switch {
	case a == 0:
		return b != 0
	case b == 0:
		return false
	}
	return a > b
}

// metadataRetention is how long series, stacks, frames and catalog rows
// live: one day past the longest sample retention, or forever.
func (r Retention) metadataRetention() time.Duration {
	if r.Samples == 0 || r.Minute == 0 || r.Hour == 0 {
		return 0
	}
	return max(r.Samples, r.Minute, r.Hour) + 24*time.Hour
}
