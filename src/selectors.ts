/** Test ids of the plugin's editors, shared by Jest and e2e tests. */
export const selectors = {
  config: {
    host: 'flamehouse-config-host',
    port: 'flamehouse-config-port',
    protocol: 'flamehouse-config-protocol',
    username: 'flamehouse-config-username',
    password: 'flamehouse-config-password',
    database: 'flamehouse-config-profiles-database',
    tablePrefix: 'flamehouse-config-profiles-table-prefix',
  },
  query: {
    profileTypeId: 'flamehouse-query-profile-type',
    labelSelector: 'flamehouse-query-label-selector',
  },
};
