// Runs one SQL statement on a ClickHouse HTTP interface and prints the
// result (TabSeparated, trimmed): node scripts/e2e-sql.mjs URL SQL.
// Exits non-zero with ClickHouse's message when the statement fails.
const [url, sql] = process.argv.slice(2);
if (!url || !sql) {
  console.error('usage: node scripts/e2e-sql.mjs http://host:port "SELECT ..."');
  process.exit(2);
}
try {
  const resp = await fetch(url, { method: 'POST', body: sql });
  const text = await resp.text();
  if (!resp.ok) {
    console.error(`ClickHouse answered ${resp.status}: ${text.trim()}`);
    process.exit(1);
  }
  process.stdout.write(text.trim());
} catch (e) {
  console.error(`cannot reach ClickHouse at ${url}: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
