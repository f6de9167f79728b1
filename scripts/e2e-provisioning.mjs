// Copies the project's provisioning for a test Grafana: node
// scripts/e2e-provisioning.mjs SOURCE TARGET CLICKHOUSE_PORT [TEMPO_URL].
//
// SOURCE is provisioning/ (datasources/, dashboards/, alerting/, examples/).
// TARGET gets datasources/ with the datasources file and every example,
// dashboards/ with the dashboard and its provider pointing at
// TARGET/dashboards, alerting/ with the alert rules as they are, and every
// datasource that reaches ClickHouse on 127.0.0.1:8123 (the README's main
// job) pointed at CLICKHOUSE_PORT instead, and, with TEMPO_URL, every Tempo
// datasource of the examples (http://localhost:3200) pointed at that Tempo,
// and with FLAMEHOUSE_E2E_PYROSCOPE_API_PORT the Pyroscope datasources on
// 127.0.0.1:4040 at that port.
// Nothing else changes, so the specs check the files users copy.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';

const [source, target, port, tempoUrl] = process.argv.slice(2);
if (
  !source ||
  !target ||
  !/^\d+$/.test(port ?? '') ||
  (tempoUrl !== undefined && !/^https?:\/\/[^/]+$/.test(tempoUrl))
) {
  console.error(
    'usage: node scripts/e2e-provisioning.mjs SOURCE TARGET CLICKHOUSE_PORT [TEMPO_URL (http://host:port)]'
  );
  process.exit(2);
}

const MAIN_JOB_PORT = 8123;

/** Points a datasource that reaches the main job's ClickHouse at the test's port. */
function repoint(ds) {
  const json = ds.jsonData ?? {};
  if (json.port === MAIN_JOB_PORT && ['127.0.0.1', 'localhost'].includes(json.host)) {
    json.port = Number(port);
  }
  if (typeof ds.url === 'string') {
    ds.url = ds.url.replace(`127.0.0.1:${MAIN_JOB_PORT}`, `127.0.0.1:${port}`);
  }
  if (tempoUrl && ds.type === 'tempo') {
    ds.url = tempoUrl;
  }
  // The Pyroscope API example (examples/pyroscope-api.yaml) on the port
  // scripts/e2e.sh gives flamehouse run's API.
  const pyroscopeApiPort = process.env.FLAMEHOUSE_E2E_PYROSCOPE_API_PORT;
  if (pyroscopeApiPort && ds.type === 'grafana-pyroscope-datasource' && typeof ds.url === 'string') {
    ds.url = ds.url.replace('127.0.0.1:4040', `127.0.0.1:${pyroscopeApiPort}`);
  }
  return ds;
}

function copyDatasources(file, into) {
  const doc = parse(readFileSync(file, 'utf8'));
  doc.datasources = (doc.datasources ?? []).map(repoint);
  writeFileSync(into, stringify(doc));
}

mkdirSync(join(target, 'datasources'), { recursive: true });
mkdirSync(join(target, 'dashboards'), { recursive: true });
for (const f of readdirSync(join(source, 'datasources'))) {
  copyDatasources(join(source, 'datasources', f), join(target, 'datasources', f));
}
for (const f of readdirSync(join(source, 'examples')).filter((n) => /\.ya?ml$/.test(n))) {
  copyDatasources(join(source, 'examples', f), join(target, 'datasources', `example-${f}`));
}
for (const f of readdirSync(join(source, 'dashboards'))) {
  if (/\.ya?ml$/.test(f)) {
    const doc = parse(readFileSync(join(source, 'dashboards', f), 'utf8'));
    for (const p of doc.providers ?? []) {
      p.options = { ...p.options, path: join(target, 'dashboards') };
    }
    writeFileSync(join(target, 'dashboards', f), stringify(doc));
  } else {
    cpSync(join(source, 'dashboards', f), join(target, 'dashboards', f));
  }
}
if (existsSync(join(source, 'alerting'))) {
  mkdirSync(join(target, 'alerting'), { recursive: true });
  for (const f of readdirSync(join(source, 'alerting')).filter((n) => /\.ya?ml$/.test(n))) {
    cpSync(join(source, 'alerting', f), join(target, 'alerting', f));
  }
}
