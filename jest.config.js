// force timezone to UTC to allow tests to work regardless of local timezone
// generally used by snapshots, but can affect specific tests
process.env.TZ = 'UTC';

const base = require('./.config/jest.config');

module.exports = {
  // Jest configuration provided by Grafana scaffolding
  ...base,
  // @grafana 13 packages pull in ES modules shipped as .mjs (d3-color and
  // friends); transform them like the scaffold transforms .js.
  transform: {
    ...base.transform,
    '^.+\\.mjs$': base.transform['^.+\\.(t|j)sx?$'],
  },
};
