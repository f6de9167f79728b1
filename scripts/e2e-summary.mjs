// Prints how many browser specs ran, passed, failed and were skipped (with
// the reasons), from Playwright's JSON report: node scripts/e2e-summary.mjs
// REPORT. With FLAMEHOUSE_E2E_REQUIRE=1 a skipped spec, or none run, fails.
import { readFileSync } from 'node:fs';

const file = process.argv[2];
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (e) {
  console.error(`e2e: no Playwright report at ${file}: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}

const counts = { passed: 0, failed: 0, flaky: 0, skipped: 0 };
const skipped = new Map();
function walk(suite, path) {
  for (const s of suite.suites ?? []) {
    walk(s, [...path, s.title]);
  }
  for (const spec of suite.specs ?? []) {
    for (const t of spec.tests ?? []) {
      const outcome = t.status === 'expected' ? 'passed' : t.status === 'unexpected' ? 'failed' : t.status;
      counts[outcome] = (counts[outcome] ?? 0) + 1;
      if (outcome === 'skipped') {
        const reason = (t.annotations ?? []).find((a) => a.type === 'skip')?.description ?? 'no reason given';
        skipped.set(reason, [...(skipped.get(reason) ?? []), [...path, spec.title].filter(Boolean).join(' › ')]);
      }
    }
  }
}
walk(report, []);
const ran = counts.passed + counts.failed + counts.flaky;
console.log(
  `e2e: ${ran + counts.skipped} specs: ${ran} run, ${counts.passed} passed, ${counts.flaky} flaky, ` +
    `${counts.failed} failed, ${counts.skipped} skipped`
);
for (const [reason, specs] of skipped) {
  console.log(`e2e: skipped ${specs.length}: ${reason}`);
}
if (process.env.FLAMEHOUSE_E2E_REQUIRE === '1' && (counts.skipped > 0 || ran === 0)) {
  console.error('e2e: FLAMEHOUSE_E2E_REQUIRE=1: every spec must run, none may be skipped');
  process.exit(1);
}
process.exit(counts.failed > 0 ? 1 : 0);
