-- AccessDDL()

CREATE ROLE IF NOT EXISTS `flamehouse_otel_admin` ON CLUSTER 'flamehouse';

CREATE ROLE IF NOT EXISTS `flamehouse_otel_writer` ON CLUSTER 'flamehouse';

CREATE ROLE IF NOT EXISTS `flamehouse_otel_reader` ON CLUSTER 'flamehouse';

CREATE ROLE IF NOT EXISTS `flamehouse_otel_tenant` ON CLUSTER 'flamehouse';

GRANT ON CLUSTER 'flamehouse' ALL ON `otel`.* TO `flamehouse_otel_admin`;

GRANT ON CLUSTER 'flamehouse' CLUSTER ON *.* TO `flamehouse_otel_admin`;

GRANT ON CLUSTER 'flamehouse'
    INSERT ON `otel`.`otel_profile_samples`,
    INSERT ON `otel`.`otel_profile_samples_local`,
    INSERT ON `otel`.`otel_profile_samples_1m`,
    INSERT ON `otel`.`otel_profile_samples_1m_local`,
    INSERT ON `otel`.`otel_profile_samples_1h`,
    INSERT ON `otel`.`otel_profile_samples_1h_local`,
    INSERT ON `otel`.`otel_profile_service_samples_1m`,
    INSERT ON `otel`.`otel_profile_service_samples_1m_local`,
    INSERT ON `otel`.`otel_profile_service_samples_1h`,
    INSERT ON `otel`.`otel_profile_service_samples_1h_local`,
    INSERT ON `otel`.`otel_profile_stacks`,
    INSERT ON `otel`.`otel_profile_stacks_local`,
    INSERT ON `otel`.`otel_profile_frames`,
    INSERT ON `otel`.`otel_profile_frames_local`,
    INSERT ON `otel`.`otel_profile_series`,
    INSERT ON `otel`.`otel_profile_series_local`,
    INSERT ON `otel`.`otel_profile_catalog`,
    INSERT ON `otel`.`otel_profile_catalog_local`,
    INSERT ON `otel`.`otel_profile_sample_labels`,
    INSERT ON `otel`.`otel_profile_sample_labels_local`,
    INSERT ON `otel`.`otel_profile_symbols`,
    INSERT ON `otel`.`otel_profile_symbols_local`,
    INSERT ON `otel`.`otel_profile_executables`,
    INSERT ON `otel`.`otel_profile_executables_local`,
    INSERT ON `otel`.`otel_profile_profiles`,
    INSERT ON `otel`.`otel_profile_profiles_local`
TO `flamehouse_otel_writer`;

GRANT ON CLUSTER 'flamehouse'
    SELECT ON `otel`.`otel_profile_samples`,
    SELECT ON `otel`.`otel_profile_samples_local`,
    SELECT ON `otel`.`otel_profile_samples_1m`,
    SELECT ON `otel`.`otel_profile_samples_1m_local`,
    SELECT ON `otel`.`otel_profile_samples_1h`,
    SELECT ON `otel`.`otel_profile_samples_1h_local`,
    SELECT ON `otel`.`otel_profile_service_samples_1m`,
    SELECT ON `otel`.`otel_profile_service_samples_1m_local`,
    SELECT ON `otel`.`otel_profile_service_samples_1h`,
    SELECT ON `otel`.`otel_profile_service_samples_1h_local`,
    SELECT ON `otel`.`otel_profile_stacks`,
    SELECT ON `otel`.`otel_profile_stacks_local`,
    SELECT ON `otel`.`otel_profile_frames`,
    SELECT ON `otel`.`otel_profile_frames_local`,
    SELECT ON `otel`.`otel_profile_series`,
    SELECT ON `otel`.`otel_profile_series_local`,
    SELECT ON `otel`.`otel_profile_catalog`,
    SELECT ON `otel`.`otel_profile_catalog_local`,
    SELECT ON `otel`.`otel_profile_sample_labels`,
    SELECT ON `otel`.`otel_profile_sample_labels_local`,
    SELECT ON `otel`.`otel_profile_symbols`,
    SELECT ON `otel`.`otel_profile_symbols_local`,
    SELECT ON `otel`.`otel_profile_executables`,
    SELECT ON `otel`.`otel_profile_executables_local`,
    SELECT ON `otel`.`otel_profile_profiles`,
    SELECT ON `otel`.`otel_profile_profiles_local`,
    SELECT ON `otel`.`otel_profile_schema_migrations_local`
TO `flamehouse_otel_reader`;

CREATE ROW POLICY IF NOT EXISTS `flamehouse_unrestricted` ON CLUSTER 'flamehouse' ON
    `otel`.`otel_profile_samples`,
    `otel`.`otel_profile_samples_local`,
    `otel`.`otel_profile_samples_1m`,
    `otel`.`otel_profile_samples_1m_local`,
    `otel`.`otel_profile_samples_1h`,
    `otel`.`otel_profile_samples_1h_local`,
    `otel`.`otel_profile_service_samples_1m`,
    `otel`.`otel_profile_service_samples_1m_local`,
    `otel`.`otel_profile_service_samples_1h`,
    `otel`.`otel_profile_service_samples_1h_local`,
    `otel`.`otel_profile_stacks`,
    `otel`.`otel_profile_stacks_local`,
    `otel`.`otel_profile_frames`,
    `otel`.`otel_profile_frames_local`,
    `otel`.`otel_profile_series`,
    `otel`.`otel_profile_series_local`,
    `otel`.`otel_profile_catalog`,
    `otel`.`otel_profile_catalog_local`,
    `otel`.`otel_profile_sample_labels`,
    `otel`.`otel_profile_sample_labels_local`,
    `otel`.`otel_profile_symbols`,
    `otel`.`otel_profile_symbols_local`,
    `otel`.`otel_profile_executables`,
    `otel`.`otel_profile_executables_local`,
    `otel`.`otel_profile_profiles`,
    `otel`.`otel_profile_profiles_local`
FOR SELECT USING 1 AS PERMISSIVE TO ALL;

-- TenantUserDDL(acme_reader, tenant acme, HashPassword("secret", deadbeef))

CREATE USER IF NOT EXISTS `acme_reader` ON CLUSTER 'flamehouse'
IDENTIFIED WITH sha256_hash BY '7059272b2d38dd0e258046e7eb433d722b57f7d3f416efc193a1eada71318dbf' SALT 'deadbeef'
SETTINGS log_comment = 'flamehouse:tenant:acme';

ALTER USER `acme_reader` ON CLUSTER 'flamehouse'
IDENTIFIED WITH sha256_hash BY '7059272b2d38dd0e258046e7eb433d722b57f7d3f416efc193a1eada71318dbf' SALT 'deadbeef'
SETTINGS log_comment = 'flamehouse:tenant:acme';

CREATE ROW POLICY IF NOT EXISTS `flamehouse_tenant_acme_reader` ON CLUSTER 'flamehouse' ON
    `otel`.`otel_profile_samples`,
    `otel`.`otel_profile_samples_local`,
    `otel`.`otel_profile_samples_1m`,
    `otel`.`otel_profile_samples_1m_local`,
    `otel`.`otel_profile_samples_1h`,
    `otel`.`otel_profile_samples_1h_local`,
    `otel`.`otel_profile_service_samples_1m`,
    `otel`.`otel_profile_service_samples_1m_local`,
    `otel`.`otel_profile_service_samples_1h`,
    `otel`.`otel_profile_service_samples_1h_local`,
    `otel`.`otel_profile_stacks`,
    `otel`.`otel_profile_stacks_local`,
    `otel`.`otel_profile_frames`,
    `otel`.`otel_profile_frames_local`,
    `otel`.`otel_profile_series`,
    `otel`.`otel_profile_series_local`,
    `otel`.`otel_profile_catalog`,
    `otel`.`otel_profile_catalog_local`,
    `otel`.`otel_profile_sample_labels`,
    `otel`.`otel_profile_sample_labels_local`,
    `otel`.`otel_profile_symbols`,
    `otel`.`otel_profile_symbols_local`,
    `otel`.`otel_profile_executables`,
    `otel`.`otel_profile_executables_local`,
    `otel`.`otel_profile_profiles`,
    `otel`.`otel_profile_profiles_local`
FOR SELECT USING TenantId = 'acme' AS RESTRICTIVE TO `acme_reader`;

ALTER ROW POLICY `flamehouse_tenant_acme_reader` ON CLUSTER 'flamehouse' ON
    `otel`.`otel_profile_samples`,
    `otel`.`otel_profile_samples_local`,
    `otel`.`otel_profile_samples_1m`,
    `otel`.`otel_profile_samples_1m_local`,
    `otel`.`otel_profile_samples_1h`,
    `otel`.`otel_profile_samples_1h_local`,
    `otel`.`otel_profile_service_samples_1m`,
    `otel`.`otel_profile_service_samples_1m_local`,
    `otel`.`otel_profile_service_samples_1h`,
    `otel`.`otel_profile_service_samples_1h_local`,
    `otel`.`otel_profile_stacks`,
    `otel`.`otel_profile_stacks_local`,
    `otel`.`otel_profile_frames`,
    `otel`.`otel_profile_frames_local`,
    `otel`.`otel_profile_series`,
    `otel`.`otel_profile_series_local`,
    `otel`.`otel_profile_catalog`,
    `otel`.`otel_profile_catalog_local`,
    `otel`.`otel_profile_sample_labels`,
    `otel`.`otel_profile_sample_labels_local`,
    `otel`.`otel_profile_symbols`,
    `otel`.`otel_profile_symbols_local`,
    `otel`.`otel_profile_executables`,
    `otel`.`otel_profile_executables_local`,
    `otel`.`otel_profile_profiles`,
    `otel`.`otel_profile_profiles_local`
AS RESTRICTIVE FOR SELECT USING TenantId = 'acme' TO `acme_reader`;

GRANT ON CLUSTER 'flamehouse' `flamehouse_otel_reader`, `flamehouse_otel_tenant` TO `acme_reader`;

-- TenantUserDDL(grafana_o, existing, tenant o'brien\co)

ALTER USER `grafana_o` ON CLUSTER 'flamehouse' MODIFY SETTING log_comment = 'flamehouse:tenant:o\'brien\\co';

CREATE ROW POLICY IF NOT EXISTS `flamehouse_tenant_grafana_o` ON CLUSTER 'flamehouse' ON
    `otel`.`otel_profile_samples`,
    `otel`.`otel_profile_samples_local`,
    `otel`.`otel_profile_samples_1m`,
    `otel`.`otel_profile_samples_1m_local`,
    `otel`.`otel_profile_samples_1h`,
    `otel`.`otel_profile_samples_1h_local`,
    `otel`.`otel_profile_service_samples_1m`,
    `otel`.`otel_profile_service_samples_1m_local`,
    `otel`.`otel_profile_service_samples_1h`,
    `otel`.`otel_profile_service_samples_1h_local`,
    `otel`.`otel_profile_stacks`,
    `otel`.`otel_profile_stacks_local`,
    `otel`.`otel_profile_frames`,
    `otel`.`otel_profile_frames_local`,
    `otel`.`otel_profile_series`,
    `otel`.`otel_profile_series_local`,
    `otel`.`otel_profile_catalog`,
    `otel`.`otel_profile_catalog_local`,
    `otel`.`otel_profile_sample_labels`,
    `otel`.`otel_profile_sample_labels_local`,
    `otel`.`otel_profile_symbols`,
    `otel`.`otel_profile_symbols_local`,
    `otel`.`otel_profile_executables`,
    `otel`.`otel_profile_executables_local`,
    `otel`.`otel_profile_profiles`,
    `otel`.`otel_profile_profiles_local`
FOR SELECT USING TenantId = 'o\'brien\\co' AS RESTRICTIVE TO `grafana_o`;

ALTER ROW POLICY `flamehouse_tenant_grafana_o` ON CLUSTER 'flamehouse' ON
    `otel`.`otel_profile_samples`,
    `otel`.`otel_profile_samples_local`,
    `otel`.`otel_profile_samples_1m`,
    `otel`.`otel_profile_samples_1m_local`,
    `otel`.`otel_profile_samples_1h`,
    `otel`.`otel_profile_samples_1h_local`,
    `otel`.`otel_profile_service_samples_1m`,
    `otel`.`otel_profile_service_samples_1m_local`,
    `otel`.`otel_profile_service_samples_1h`,
    `otel`.`otel_profile_service_samples_1h_local`,
    `otel`.`otel_profile_stacks`,
    `otel`.`otel_profile_stacks_local`,
    `otel`.`otel_profile_frames`,
    `otel`.`otel_profile_frames_local`,
    `otel`.`otel_profile_series`,
    `otel`.`otel_profile_series_local`,
    `otel`.`otel_profile_catalog`,
    `otel`.`otel_profile_catalog_local`,
    `otel`.`otel_profile_sample_labels`,
    `otel`.`otel_profile_sample_labels_local`,
    `otel`.`otel_profile_symbols`,
    `otel`.`otel_profile_symbols_local`,
    `otel`.`otel_profile_executables`,
    `otel`.`otel_profile_executables_local`,
    `otel`.`otel_profile_profiles`,
    `otel`.`otel_profile_profiles_local`
AS RESTRICTIVE FOR SELECT USING TenantId = 'o\'brien\\co' TO `grafana_o`;

GRANT ON CLUSTER 'flamehouse' `flamehouse_otel_reader`, `flamehouse_otel_tenant` TO `grafana_o`;

-- DropTenantUserDDL(acme_reader, dropUser false)

REVOKE ON CLUSTER 'flamehouse' `flamehouse_otel_reader`, `flamehouse_otel_tenant` FROM `acme_reader`;

DROP ROW POLICY IF EXISTS `flamehouse_tenant_acme_reader` ON
    `otel`.`otel_profile_samples`,
    `otel`.`otel_profile_samples_local`,
    `otel`.`otel_profile_samples_1m`,
    `otel`.`otel_profile_samples_1m_local`,
    `otel`.`otel_profile_samples_1h`,
    `otel`.`otel_profile_samples_1h_local`,
    `otel`.`otel_profile_service_samples_1m`,
    `otel`.`otel_profile_service_samples_1m_local`,
    `otel`.`otel_profile_service_samples_1h`,
    `otel`.`otel_profile_service_samples_1h_local`,
    `otel`.`otel_profile_stacks`,
    `otel`.`otel_profile_stacks_local`,
    `otel`.`otel_profile_frames`,
    `otel`.`otel_profile_frames_local`,
    `otel`.`otel_profile_series`,
    `otel`.`otel_profile_series_local`,
    `otel`.`otel_profile_catalog`,
    `otel`.`otel_profile_catalog_local`,
    `otel`.`otel_profile_sample_labels`,
    `otel`.`otel_profile_sample_labels_local`,
    `otel`.`otel_profile_symbols`,
    `otel`.`otel_profile_symbols_local`,
    `otel`.`otel_profile_executables`,
    `otel`.`otel_profile_executables_local`,
    `otel`.`otel_profile_profiles`,
    `otel`.`otel_profile_profiles_local`
ON CLUSTER 'flamehouse';

-- DropTenantUserDDL(acme_reader, dropUser true)

DROP USER IF EXISTS `acme_reader` ON CLUSTER 'flamehouse';

DROP ROW POLICY IF EXISTS `flamehouse_tenant_acme_reader` ON
    `otel`.`otel_profile_samples`,
    `otel`.`otel_profile_samples_local`,
    `otel`.`otel_profile_samples_1m`,
    `otel`.`otel_profile_samples_1m_local`,
    `otel`.`otel_profile_samples_1h`,
    `otel`.`otel_profile_samples_1h_local`,
    `otel`.`otel_profile_service_samples_1m`,
    `otel`.`otel_profile_service_samples_1m_local`,
    `otel`.`otel_profile_service_samples_1h`,
    `otel`.`otel_profile_service_samples_1h_local`,
    `otel`.`otel_profile_stacks`,
    `otel`.`otel_profile_stacks_local`,
    `otel`.`otel_profile_frames`,
    `otel`.`otel_profile_frames_local`,
    `otel`.`otel_profile_series`,
    `otel`.`otel_profile_series_local`,
    `otel`.`otel_profile_catalog`,
    `otel`.`otel_profile_catalog_local`,
    `otel`.`otel_profile_sample_labels`,
    `otel`.`otel_profile_sample_labels_local`,
    `otel`.`otel_profile_symbols`,
    `otel`.`otel_profile_symbols_local`,
    `otel`.`otel_profile_executables`,
    `otel`.`otel_profile_executables_local`,
    `otel`.`otel_profile_profiles`,
    `otel`.`otel_profile_profiles_local`
ON CLUSTER 'flamehouse';
