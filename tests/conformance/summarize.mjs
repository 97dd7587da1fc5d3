// Compares, pass by pass, what the suite found talking to computer.mjs directly with what
// it found through the switchboard, and prints one line per scenario and a closing count.
//
//   node summarize.mjs [--partial] [--table FILE] BASELINE_YML RUN_DIR PASS...
//
// For each PASS (a name such as `all` or `2026`), RUN_DIR/PASS.scenarios lists the
// scenarios that ran (one a line), and RUN_DIR/results/PASS.direct and
// RUN_DIR/results/PASS.through hold the suite's per-scenario checks.json files.
//
// A check is compared by its id (the worst status of the checks sharing it): SUCCESS is
// best, then INFO, SKIPPED or no such check, then WARNING, then FAILURE. The run fails on
//   - a check that is worse through the switchboard than directly, or any FAILURE through
//     the switchboard in a scenario that passes directly, unless baseline.yml's `through`
//     names the scenario or the scenario:check;
//   - a scenario that fails directly (a FAILURE check) unless baseline.yml's `direct`
//     names it (computer.mjs is expected to pass what it serves);
//   - a scenario that left no result, either way;
//   - a baseline entry that matches nothing any more (stale), unless --partial (a chosen
//     few scenarios ran).
// --table FILE also writes a markdown table of every scenario's result in every pass.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

const argv = process.argv.slice(2);
let partial = false;
let tableFile = null;
for (;;) {
  if (argv[0] === '--partial') partial = Boolean(argv.shift());
  else if (argv[0] === '--table') tableFile = argv.splice(0, 2)[1];
  else break;
}
const [baselineFile, runDir, ...passes] = argv;
if (!baselineFile || !runDir || passes.length === 0 || tableFile === undefined) {
  console.error('usage: summarize.mjs [--partial] [--table FILE] BASELINE_YML RUN_DIR PASS...');
  process.exit(2);
}

const PASS_LABEL = {
  all: '--suite all',
  2026: '--requirements 2026-07-28'
};

// ---- the baseline: `through` and `direct`, each entry -> its reason ----

const baseline = parse(readFileSync(baselineFile, 'utf8')) ?? {};
const expected = {};
for (const side of ['through', 'direct']) {
  expected[side] = new Map(Object.entries(baseline[side] ?? {}));
  for (const [entry, reason] of expected[side]) {
    if (typeof reason !== 'string' || !reason.trim()) {
      console.error(`summarize: baseline ${side} entry ${entry} has no reason`);
      process.exit(2);
    }
  }
}
const used = { through: new Set(), direct: new Set() };
const covered = (side, scenario, check) => {
  for (const key of [`${scenario}:${check}`, scenario]) {
    if (expected[side].has(key)) {
      used[side].add(key);
      return key;
    }
  }
  return null;
};

// ---- results ----

// The suite names each result directory server-<scenario>-<ISO time with : and . as ->.
const stamp = /-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
function results(dir) {
  const out = new Map();
  for (const entry of existsSync(dir) ? readdirSync(dir) : []) {
    const name = entry.replace(/^server-/, '').replace(stamp, '');
    const file = path.join(dir, entry, 'checks.json');
    if (existsSync(file)) out.set(name, JSON.parse(readFileSync(file, 'utf8')));
  }
  return out;
}

const RANK = { SUCCESS: 3, INFO: 2, SKIPPED: 2, WARNING: 1, FAILURE: 0 };
const ABSENT = 2;

// id -> the worst of its checks, with that check's message.
function byId(checks) {
  const out = new Map();
  for (const check of checks) {
    const rank = RANK[check.status] ?? ABSENT;
    const seen = out.get(check.id);
    if (!seen || rank < seen.rank) out.set(check.id, { rank, check });
  }
  return out;
}

const failed = (checks) => checks.filter((check) => check.status === 'FAILURE');
const tally = (checks) => {
  const pass = checks.filter((check) => check.status === 'SUCCESS').length;
  return `${pass}/${pass + failed(checks).length}`;
};
// A scenario's outcome in one word, and in the table: its tally, skips and warnings.
const outcome = (checks) => (!checks ? 'none' : failed(checks).length ? 'fail' : 'pass');
const count = (checks, status) => checks.filter((check) => check.status === status).length;
function cell(checks) {
  if (!checks) return 'no result';
  const skipped = count(checks, 'SKIPPED');
  const warnings = count(checks, 'WARNING');
  return (
    `${failed(checks).length ? 'FAIL' : 'pass'} ${tally(checks)}` +
    (skipped ? `, ${skipped} skipped` : '') +
    (warnings ? `, ${warnings} warning${warnings > 1 ? 's' : ''}` : '')
  );
}
const message = (check) => (check.errorMessage ?? check.description ?? '').replace(/\s+/g, ' ');

// ---- compare ----

const lines = [];
const table = new Map(); // scenario -> pass -> { direct, through }
const totals = { ok: 0, known: 0, failed: 0 };
const passSummaries = [];

for (const pass of passes) {
  const scenarios = readFileSync(path.join(runDir, `${pass}.scenarios`), 'utf8')
    .split('\n')
    .filter(Boolean);
  const direct = results(path.join(runDir, 'results', `${pass}.direct`));
  const through = results(path.join(runDir, 'results', `${pass}.through`));
  const tallies = { ok: 0, known: 0, failed: 0, directPass: 0, throughPass: 0 };
  lines.push(
    '',
    `${PASS_LABEL[pass] ?? pass}: ${scenarios.length} scenarios, directly / through the switchboard`
  );

  for (const scenario of scenarios) {
    const a = direct.get(scenario);
    const b = through.get(scenario);
    if (!table.has(scenario)) table.set(scenario, {});
    table.get(scenario)[pass] = { direct: cell(a), through: cell(b) };
    if (a && failed(a).length === 0) tallies.directPass++;
    if (b && failed(b).length === 0) tallies.throughPass++;

    const problems = []; // lines under the scenario when it fails the run
    const notes = [];
    if (!a || !b) {
      const where = [!a && 'directly', !b && 'through the switchboard']
        .filter(Boolean)
        .join(' and ');
      problems.push(`no result ${where}: the suite could not run it (see suite-${pass}.*.log)`);
    } else {
      // Directly: what computer.mjs does not pass must be expected.
      const directFailures = failed(a);
      const unexpected = directFailures.filter((check) => !covered('direct', scenario, check.id));
      for (const check of unexpected) problems.push(`directly: [${check.id}] ${message(check)}`);
      if (directFailures.length && !unexpected.length) notes.push('fails directly too: baseline');

      // Through: no check worse than directly.
      const before = byId(a);
      const after = byId(b);
      const directPasses = directFailures.length === 0;
      const worse = [];
      for (const id of new Set([...before.keys(), ...after.keys()])) {
        const was = before.get(id);
        const now = after.get(id);
        const wasRank = was?.rank ?? ABSENT;
        const nowRank = now?.rank ?? ABSENT;
        if (nowRank < wasRank || (directPasses && nowRank === RANK.FAILURE))
          worse.push({ id, was: was?.check.status ?? 'absent', now: now?.check ?? null });
      }
      const unexplained = worse.filter((item) => !covered('through', scenario, item.id));
      for (const item of unexplained) {
        const now = item.now ? `${item.now.status}: ${message(item.now)}` : 'no such check';
        problems.push(`through: [${item.id}] ${item.was} directly, ${now}`);
      }
      if (worse.length && !unexplained.length)
        notes.push(`${worse.length} check(s) worse through the switchboard: baseline`);
    }

    const state = problems.length ? 'FAIL' : notes.length ? 'known' : 'ok';
    tallies[state === 'FAIL' ? 'failed' : state]++;
    const columns = `${outcome(a).padEnd(5)} ${outcome(b).padEnd(5)}`;
    lines.push(
      `${state.padEnd(6)} ${columns} ${scenario}${notes.length ? `  (${notes.join('; ')})` : ''}`
    );
    for (const problem of problems) lines.push(`         ${problem}`);
  }
  for (const key of ['ok', 'known', 'failed']) totals[key] += tallies[key];
  passSummaries.push(
    `${PASS_LABEL[pass] ?? pass}: ${tallies.ok} ok, ${tallies.known} as the baseline expects, ` +
      `${tallies.failed} failed (directly ${tallies.directPass}/${scenarios.length} pass, ` +
      `through the switchboard ${tallies.throughPass}/${scenarios.length})`
  );
}

// ---- stale baseline entries ----

if (!partial) {
  for (const side of ['through', 'direct']) {
    for (const entry of expected[side].keys()) {
      if (used[side].has(entry)) continue;
      totals.failed++;
      lines.push(`STALE  baseline ${side}: ${entry}  (matches nothing any more: remove it)`);
    }
  }
}

console.log(lines.join('\n').replace(/^\n/, ''));
console.log('');
for (const summary of passSummaries) console.log(`conformance ${summary}`);
console.log(
  `conformance: ${totals.ok} ok, ${totals.known} as the baseline expects, ${totals.failed} failed`
);

// ---- the table ----

if (tableFile) {
  const header = ['scenario'];
  const rule = ['---'];
  for (const pass of passes) {
    header.push(`${PASS_LABEL[pass] ?? pass}: directly`, 'through the switchboard');
    rule.push('---', '---');
  }
  header.push('expected to differ');
  rule.push('---');
  const out = [`| ${header.join(' | ')} |`, `| ${rule.join(' | ')} |`];
  const reasons = (scenario) =>
    ['through', 'direct']
      .flatMap((side) =>
        [...expected[side].keys()]
          .filter((key) => key === scenario || key.startsWith(`${scenario}:`))
          .map(
            (key) =>
              `${side === 'direct' ? 'directly: ' : ''}${key.slice(scenario.length + 1) || 'all'}`
          )
      )
      .join('; ');
  for (const [scenario, byPass] of table) {
    const cells = [scenario];
    for (const pass of passes) {
      const cell = byPass[pass];
      cells.push(cell?.direct ?? '—', cell?.through ?? '—');
    }
    cells.push(reasons(scenario) || '');
    out.push(`| ${cells.join(' | ')} |`);
  }
  writeFileSync(tableFile, out.join('\n') + '\n');
}

process.exit(totals.failed === 0 ? 0 : 1);
