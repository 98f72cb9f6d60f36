/**
 * Every reason in the catalog is used and explained: each ConditionReason, EventReason,
 * NodeHealthReason and NodeHealthEventReason is set by product code (a reference outside this
 * catalog and outside tests), as is each GmsaReadinessReason, and each has a row in the README's
 * "Troubleshooting" tables — and
 * no row there names a reason that is gone. Each Node condition type the agent writes is named
 * there too.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  ConditionReason,
  EventReason,
  GmsaReadinessReason,
  JoinFailureReason,
  NodeHealthCondition,
  NodeHealthEventReason,
  NodeHealthReason,
} from './reasons.ts';

const srcDir = fileURLToPath(new URL('..', import.meta.url));
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The product source, without tests and without the catalog itself. */
function productSource(): string {
  return readdirSync(srcDir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('reasons.ts'))
    .map((f) => readFileSync(join(srcDir, f), 'utf8'))
    .join('\n');
}

/** The README's "Troubleshooting" section: from its heading to the next heading of its level. */
function troubleshooting(): string {
  const start = readme.search(/^## Troubleshooting$/m);
  assert.ok(start >= 0, 'the README has a "## Troubleshooting" section');
  const rest = readme.slice(start + 1);
  const end = rest.search(/^## /m);
  return end < 0 ? rest : rest.slice(0, end);
}

/** The reasons the section's table rows start with: | `Reason` | … */
function documentedReasons(): Set<string> {
  return new Set([...troubleshooting().matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]!));
}

const catalogs = {
  ConditionReason,
  EventReason,
  NodeHealthReason,
  NodeHealthEventReason,
  GmsaReadinessReason,
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

test('every reason is explained in the README troubleshooting tables, and only those', () => {
  const documented = documentedReasons();
  const all = new Set<string>(Object.values(catalogs).flatMap((c) => Object.values(c)));
  const missing = [...all].filter((r) => !documented.has(r)).sort();
  assert.deepEqual(missing, [], 'reasons without a README row (## Troubleshooting)');
  const stale = [...documented].filter((r) => !all.has(r)).sort();
  assert.deepEqual(stale, [], 'README rows for reasons the catalog does not have');
});

test('every Node condition type the agent writes is named in the README troubleshooting tables', () => {
  const section = troubleshooting();
  const unnamed = Object.values(NodeHealthCondition).filter((t) => !section.includes(`\`${t}\``));
  assert.deepEqual(
    unnamed,
    [],
    'Node condition types the README does not name (## Troubleshooting)',
  );
});
