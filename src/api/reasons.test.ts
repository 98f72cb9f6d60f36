/**
 * Every reason in the catalog is used and explained: each ConditionReason, EventReason,
 * NodeHealthReason and NodeHealthEventReason is set by product code (a reference outside this
 * catalog and outside tests), as is each GmsaReadinessReason, and each has a row in the tables of
 * docs/troubleshooting.md — and no row there names a reason that is gone. Each Node condition
 * type the agent writes is named there too. That document is generated from reason-help.ts
 * (scripts/generate-troubleshooting.ts): it must be the generator's output.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  troubleshootingDocument,
  troubleshootingPath,
} from '../../scripts/generate-troubleshooting.ts';
import { reasonHelp } from './reason-help.ts';
import {
  ConditionReason,
  EventReason,
  GmsaReadinessReason,
  JoinFailureReason,
  NodeHealthCondition,
  NodeHealthEventReason,
  NodeHealthReason,
  PrePullReason,
} from './reasons.ts';

const srcDir = fileURLToPath(new URL('..', import.meta.url));
const document = readFileSync(troubleshootingPath, 'utf8');

/** The product source, without tests, the catalog itself and its help (which names every reason). */
function productSource(): string {
  return readdirSync(srcDir, { recursive: true, encoding: 'utf8' })
    .filter(
      (f) =>
        f.endsWith('.ts') &&
        !f.endsWith('.test.ts') &&
        !f.endsWith('reasons.ts') &&
        !f.endsWith('reason-help.ts'),
    )
    .map((f) => readFileSync(join(srcDir, f), 'utf8'))
    .join('\n');
}

/** The reasons the document's table rows start with: | `Reason` | … */
function documentedReasons(): Set<string> {
  return new Set([...document.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]!));
}

const catalogs = {
  ConditionReason,
  EventReason,
  NodeHealthReason,
  NodeHealthEventReason,
  GmsaReadinessReason,
  PrePullReason,
} as const;

test('every reason is set by product code', () => {
  const source = productSource();
  const unused: string[] = [];
  for (const [catalog, reasons] of Object.entries(catalogs)) {
    for (const key of Object.keys(reasons)) {
      const users = [catalog, ...(key in JoinFailureReason ? ['JoinFailureReason'] : [])];
      if (!users.some((c) => new RegExp(`\\b${c}\\.${key}\\b`).test(source))) {
        unused.push(`${catalog}.${key}`);
      }
    }
  }
  assert.deepEqual(unused, [], 'reasons no product code sets: remove them or set them');
});

test('docs/troubleshooting.md is the output of its generator', () => {
  assert.equal(
    document,
    troubleshootingDocument(),
    'docs/troubleshooting.md is stale or edited by hand: edit src/api/reason-help.ts, then run npm run docs:generate',
  );
});

const all = new Set<string>(Object.values(catalogs).flatMap((c) => Object.values(c)));

test('reason-help.ts explains every reason, and only those', () => {
  const explained = new Set<string>(
    reasonHelp.flatMap((s) =>
      s.blocks.flatMap((b) => (typeof b === 'string' ? [] : b.rows.map((r) => r.reason))),
    ),
  );
  const missing = [...all].filter((r) => !explained.has(r)).sort();
  assert.deepEqual(missing, [], 'reasons without a row in src/api/reason-help.ts');
  const stale = [...explained].filter((r) => !all.has(r)).sort();
  assert.deepEqual(
    stale,
    [],
    'rows of src/api/reason-help.ts for reasons the catalog does not have',
  );
});

test('every reason is explained in the docs/troubleshooting.md tables, and only those', () => {
  const documented = documentedReasons();
  const missing = [...all].filter((r) => !documented.has(r)).sort();
  assert.deepEqual(
    missing,
    [],
    'reasons without a row in docs/troubleshooting.md (run npm run docs:generate)',
  );
  const stale = [...documented].filter((r) => !all.has(r)).sort();
  assert.deepEqual(stale, [], 'docs/troubleshooting.md rows for reasons the catalog does not have');
});

test('every Node condition type the agent writes is named in docs/troubleshooting.md', () => {
  const unnamed = Object.values(NodeHealthCondition).filter((t) => !document.includes(`\`${t}\``));
  assert.deepEqual(unnamed, [], 'Node condition types docs/troubleshooting.md does not name');
});
