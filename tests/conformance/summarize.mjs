// Reads the suite's per-scenario checks.json files, compares them with the baseline and
// prints one line per scenario, the message of every failed (and warned) check, and a
// closing count. Exits 1 on any failure not in the baseline, on a baseline entry that now
// passes, and on a scenario that left no result.
//
//   node summarize.mjs [--partial] RESULTS_DIR BASELINE_YML SCENARIO...
// (--partial: a chosen few scenarios ran, so baseline entries outside them are not stale)
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

const argv = process.argv.slice(2);
const partial = argv[0] === '--partial';
const [resultsDir, baselineFile, ...scenarios] = partial ? argv.slice(1) : argv;
if (!resultsDir || !baselineFile || scenarios.length === 0) {
  console.error('usage: summarize.mjs [--partial] RESULTS_DIR BASELINE_YML SCENARIO...');
  process.exit(2);
}

const baseline = new Set((parse(readFileSync(baselineFile, 'utf8'))?.server ?? []).map(String));

// The suite names each result directory server-<scenario>-<ISO time with : and . as ->.
const stamp = /-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
const resultOf = new Map();
for (const entry of existsSync(resultsDir) ? readdirSync(resultsDir) : []) {
  const name = entry.replace(/^server-/, '').replace(stamp, '');
  const file = path.join(resultsDir, entry, 'checks.json');
  if (existsSync(file)) resultOf.set(name, JSON.parse(readFileSync(file, 'utf8')));
}

const counts = { passed: 0, failed: 0, skipped: 0 };
const lines = [];
const say = (label, scenario, note = '') => lines.push(`${label.padEnd(6)} ${scenario}${note}`);
const detail = (kind, check) =>
  lines.push(`         ${kind} [${check.id}] ${check.errorMessage ?? check.description}`);

for (const scenario of scenarios) {
  const checks = resultOf.get(scenario);
  const inBaseline = baseline.has(scenario);
  if (!checks) {
    counts.failed++;
    say('FAIL', scenario, '  (no result: the suite could not run it, see suite.log)');
    continue;
  }
  const failures = checks.filter((check) => check.status === 'FAILURE');
  const warnings = checks.filter((check) => check.status === 'WARNING');
  if (failures.length === 0 && inBaseline) {
    counts.failed++;
    say('STALE', scenario, '  (passes but is in the baseline: remove it there)');
  } else if (failures.length === 0) {
    counts.passed++;
    say('PASS', scenario, warnings.length ? `  (${warnings.length} warning(s))` : '');
  } else if (inBaseline) {
    counts.skipped++;
    say('out', scenario, '  (out of scope, in the baseline)');
    continue; // their checks' messages are expected noise
  } else {
    counts.failed++;
    say('FAIL', scenario);
  }
  for (const check of failures) detail('failed:', check);
  for (const check of warnings) detail('warning:', check);
}

const unknown = partial ? [] : [...baseline].filter((name) => !scenarios.includes(name));
for (const name of unknown) {
  counts.failed++;
  say('STALE', name, '  (in the baseline but not a scenario of this suite)');
}

console.log(lines.join('\n'));
const { passed, failed, skipped } = counts;
console.log(`conformance: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(counts.failed === 0 ? 0 : 1);
