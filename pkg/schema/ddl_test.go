package schema

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden DDL files in testdata/")

// renderAll renders the bootstrap and every migration as one SQL script.
func renderAll(t *testing.T, cfg Config) string {
	t.Helper()
	migrations, err := cfg.Migrations()
	require.NoError(t, err)
	stmts := cfg.migrationsDDL()
	for _, m := range migrations {
		stmts = append(stmts, m.Statements...)
	}
	return strings.Join(stmts, ";\n\n") + ";\n"
}

func TestDDLGolden(t *testing.T) {
	cluster := DefaultConfig()
	cluster.Cluster = "flamehouse"
	custom := DefaultConfig()
	custom.Database = "profiles"
	custom.TablePrefix = "fh_"
	custom.Retention = Retention{Samples: 72 * time.Hour, Minute: 0, Hour: 0}
	for name, cfg := range map[string]Config{
		"single_node": DefaultConfig(),
		"cluster":     cluster,
		"custom":      custom,
	} {
		t.Run(name, func(t *testing.T) {
			got := renderAll(t, cfg)
			path := filepath.Join("testdata", name+".sql")
			if *update {
				require.NoError(t, os.WriteFile(path, []byte(got), 0o600))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./pkg/schema -update to create the golden file")
			require.Equal(t, string(want), got, "DDL changed: review, then run go test ./pkg/schema -update")
		})
	}
}

func TestDDLClusterMode(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Cluster = "flamehouse"
	sql := renderAll(t, cfg)
	for _, table := range Tables {
		require.Contains(t, sql, "CREATE TABLE IF NOT EXISTS `otel`.`otel_"+table+"_local` ON CLUSTER 'flamehouse'")
		require.Contains(t, sql, "CREATE TABLE IF NOT EXISTS `otel`.`otel_"+table+"` ON CLUSTER 'flamehouse' AS `otel`.`otel_"+table+"_local`\nENGINE = Distributed('flamehouse', 'otel', 'otel_"+table+"_local', "+ShardingKey(table)+")")
	}
	require.NotContains(t, sql, "ENGINE = MergeTree")
	require.Contains(t, sql, "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')")
	require.Contains(t, sql, "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', LastSeen)")
	require.Contains(t, sql, "TO `otel`.`otel_profile_samples_1m_local`")
	require.Equal(t, strings.Count(sql, "CREATE MATERIALIZED VIEW")+strings.Count(sql, "MODIFY QUERY"), strings.Count(sql, "_mv` ON CLUSTER 'flamehouse'"),
		"every statement on a view runs on the whole cluster")

	single := renderAll(t, DefaultConfig())
	require.NotContains(t, single, "ON CLUSTER")
	require.NotContains(t, single, "Distributed")
	require.NotContains(t, single, "_local")
}

func TestDDLRetention(t *testing.T) {
	cfg := DefaultConfig()
	sql := renderAll(t, cfg)
	require.Contains(t, sql, "TTL Timestamp + toIntervalSecond(604800)")  // samples: 7 days
	require.Contains(t, sql, "TTL Timestamp + toIntervalSecond(2592000)") // 1m: 30 days
	require.Contains(t, sql, "TTL LastSeen + toIntervalDay(366)")         // metadata: longest + 1 day
	cfg.Retention.Hour = 0
	sql = renderAll(t, cfg)
	require.NotContains(t, sql, "toIntervalDay", "metadata is kept forever when any rollup is")
}

func TestDDLSymbols(t *testing.T) {
	cfg := DefaultConfig()
	sql := renderAll(t, cfg)
	require.Contains(t, sql, "ADD COLUMN IF NOT EXISTS `MappingStart` UInt64 DEFAULT 0")
	require.Contains(t, sql, "CREATE TABLE IF NOT EXISTS `otel`.`otel_profile_symbols`")
	require.Contains(t, sql, "ENGINE = ReplacingMergeTree(Version)\nORDER BY (TenantId, BuildId, Start)")
	require.Contains(t, sql, "ENGINE = ReplacingMergeTree(UpdatedAt)\nORDER BY (TenantId, BuildId)")
	require.NotContains(t, sql, "TTL toDateTime(intDiv(Version", "symbols are kept forever by default")

	cfg.Retention.Symbols = 90 * 24 * time.Hour
	sql = renderAll(t, cfg)
	require.Contains(t, sql, "TTL toDateTime(intDiv(Version, 1000)) + toIntervalSecond(7776000)")
	require.Contains(t, sql, "TTL UpdatedAt + toIntervalSecond(7776000)")

	cfg.Cluster = "flamehouse"
	sql = renderAll(t, cfg)
	require.Contains(t, sql, "ALTER TABLE `otel`.`otel_profile_frames_local` ON CLUSTER 'flamehouse'\n    ADD COLUMN IF NOT EXISTS `MappingStart`")
	require.Contains(t, sql, "ALTER TABLE `otel`.`otel_profile_frames` ON CLUSTER 'flamehouse'\n    ADD COLUMN IF NOT EXISTS `MappingStart`",
		"the Distributed table gets the columns too")
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, func() *Config { c := DefaultConfig(); return &c }().Validate())
	bad := DefaultConfig()
	bad.Database = "otel; DROP TABLE x"
	bad.TablePrefix = "a-b"
	bad.Cluster = "c' OR 1"
	bad.Retention.Samples = -time.Hour
	err := bad.Validate()
	require.Error(t, err)
	symbols := DefaultConfig()
	symbols.Retention.Symbols = -time.Hour
	require.ErrorIs(t, symbols.Validate(), errRetention)
	require.Error(t, err)
	for _, want := range []error{errDatabase, errPrefix, errCluster, errRetention} {
		require.ErrorIs(t, err, want)
	}
	rollup := DefaultConfig()
	rollup.Retention.Minute = time.Hour
	require.ErrorIs(t, rollup.Validate(), errRollups)
	forever := DefaultConfig()
	forever.Retention.Samples = 0
	require.ErrorIs(t, forever.Validate(), errRollups, "raw samples kept forever outlive finite rollups")
}

func TestSplitStatements(t *testing.T) {
	got := splitStatements("-- c\nCREATE A\n  x;\n\n;\nSELECT 1;\n-- tail\n")
	require.Equal(t, []string{"CREATE A\n  x", "SELECT 1"}, got)
}
