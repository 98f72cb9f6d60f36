/**
 * The WindowsNodePool CRD (and the WindowsHost rollout status schema) against the rollout
 * rules in src/rollout/: every field described, the sample pools accepted with the defaults
 * the code assumes, the bad ones refused where the fixture says (the OpenAPI schema, or only a
 * CEL rule and the operator's check), the schema's patterns and enums the same as the parsers'.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { parse, parseAllDocuments } from 'yaml';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import { parseApiTime } from '../kube/api-time.ts';
import { checkHealthSpec, defaultHealthPolicy } from '../remediation/health-spec.ts';
import { parseDuration } from '../rollout/duration.ts';
import { checkPoolSpec } from '../rollout/pool-spec.ts';
import { hostRolloutStatusSchema, windowsHostCrd, windowsNodePoolCrd } from './crds.ts';
import { PoolConditionType } from './reasons.ts';
import { lastActionsLimit, RemediationRung, RungResult } from './remediation-status.ts';
import { RolloutStep } from './rollout-status.ts';
import { healthDefaults, patchPolicies, poolDefaults, weekdays } from './windows-node-pool.ts';

interface Schema {
  description?: string;
  type?: string;
  pattern?: string;
  enum?: string[];
  default?: unknown;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  'x-kubernetes-validations'?: { rule: string; message: string }[];
}

/** A CRD as the client sends it to the API server: plain JSON, wire names. */
function onTheWire(crd: k8s.V1CustomResourceDefinition) {
  return parse(k8s.dumpYaml(crd)) as {
    spec: { versions: { schema: { openAPIV3Schema: Schema } }[] };
  };
}

const version = windowsNodePoolCrd.spec.versions[0]!;
const root = onTheWire(windowsNodePoolCrd).spec.versions[0]!.schema.openAPIV3Schema;
const spec = root.properties!.spec!;
const status = root.properties!.status!;

/** Named fields (any depth) without a description. */
function undescribed(schema: Schema, path: string): string[] {
  const missing: string[] = [];
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const at = `${path}.${name}`;
    if (at.split('.').length === 2 && name === 'metadata') continue;
    if (!field.description?.trim()) missing.push(at);
    missing.push(...undescribed(field, at));
  }
  if (schema.items) missing.push(...undescribed(schema.items, `${path}[]`));
  return missing;
}

test('every field of the pool CRD and of the host rollout status is described', () => {
  assert.ok(root.description);
  assert.deepEqual(root.properties!.metadata, { type: 'object' });
  assert.deepEqual(undescribed(root, 'WindowsNodePool'), []);
  assert.ok(hostRolloutStatusSchema.description);
});

test('namespaced, with the status subresource, a short name and the printer columns of the issue', () => {
  assert.equal(windowsNodePoolCrd.metadata?.name, 'windowsnodepools.winfleet.io');
  assert.equal(windowsNodePoolCrd.spec.scope, 'Namespaced');
  assert.deepEqual(windowsNodePoolCrd.spec.names.shortNames, ['wnp']);
  assert.deepEqual({ ...version.subresources }, { status: {} });
  const columns = version.additionalPrinterColumns!;
  assert.deepEqual(
    columns.filter((c) => !c.priority).map((c) => c.name),
    [
      'Hosts',
      'Ready',
      'Updated',
      'Unavailable',
      'Available',
      'Progressing',
      'Degraded',
      'Paused',
      'Policy',
      'Age',
    ],
  );
  // Every plain column path names a field the schema has.
  for (const column of columns) {
    const path = column.jsonPath
      .replace(/\[\?.*$/, '')
      .split('.')
      .filter(Boolean);
    if (path[0] === 'metadata') continue;
    let at: Schema | undefined = root;
    for (const part of path) at = at?.properties?.[part];
    assert.ok(at, `${column.name}: ${column.jsonPath} is not in the schema`);
  }
  for (const type of Object.values(PoolConditionType)) {
    assert.ok(
      columns.some((c) => c.jsonPath.includes(`'${type}'`)),
      `a column shows ${type}`,
    );
  }
});

test('what the client sends keeps every default, enum and CEL rule', () => {
  const text = JSON.stringify(root);
  // 6 for the rollout fields; 6 for spec.health (a condition's timeout, nodeStartupTimeout,
  // maxUnhealthy and the three rung timeouts); 1 for spec.join.nodeNamePattern; 1 for
  // spec.prePull (images or auto).
  assert.equal(text.match(/"x-kubernetes-validations"/g)?.length, 14);
  // 7 for the rollout fields; 9 for spec.health (itself, its four fields, remediation, its four);
  // 3 for spec.prePull (auto, timeoutSeconds, maxParallel).
  assert.equal(text.match(/"default"/g)?.length, 19);
  assert.ok(!/x_kubernetes|"_default"|"_enum"/.test(text), 'no client-model names on the wire');
  // The WindowsHost CRD carries the rollout status, enums kept on the wire.
  const rollout =
    onTheWire(windowsHostCrd).spec.versions[0]!.schema.openAPIV3Schema.properties!.status!
      .properties!.rollout!;
  assert.deepEqual(
    windowsHostCrd.spec.versions[0]!.schema!.openAPIV3Schema!.properties!.status!.properties!
      .rollout,
    hostRolloutStatusSchema,
    'the schema hostRolloutStatusSchema exports',
  );
  assert.deepEqual(rollout.properties!.current!.properties!.step!.enum, Object.values(RolloutStep));
  assert.deepEqual(undescribed(rollout, 'status.rollout'), []);
});

test('the schema’s enums are the code’s', () => {
  assert.deepEqual(spec.properties!.patches!.properties!.policy!.enum, [...patchPolicies]);
  assert.deepEqual(spec.properties!.maintenanceWindow!.properties!.days!.items!.enum, [
    ...weekdays,
  ]);
  assert.equal(
    status.properties!.conditions!.items!.properties!.type!.description,
    'Available, Progressing or Degraded',
  );
});

const ajv = new Ajv({
  allErrors: true,
  useDefaults: true,
  strict: false,
  formats: {
    'date-time': {
      validate: (s: string) => {
        try {
          parseApiTime(s, 'date-time');
          return true;
        } catch {
          return false;
        }
      },
    },
  },
});
const validateSpec = ajv.compile(spec);

function load(file: string): {
  metadata: { name: string; annotations?: Record<string, string> };
  kind: string;
  spec: unknown;
}[] {
  const text = readFileSync(new URL(`../rollout/fixtures/${file}`, import.meta.url), 'utf8');
  return parseAllDocuments(text).map((d) => d.toJS());
}

test('the sample pools pass the schema and the operator’s check; the schema fills in the defaults the code assumes', () => {
  for (const pool of load('pools.yaml').filter((d) => d.kind === 'WindowsNodePool')) {
    const copy = structuredClone(pool.spec);
    assert.ok(validateSpec(copy), `${pool.metadata.name}: ${JSON.stringify(validateSpec.errors)}`);
    assert.deepEqual(checkPoolSpec(copy).problems, [], pool.metadata.name);
  }
  const minimal: Record<string, unknown> = {
    selector: {},
    maintenanceWindow: { start: '01:00', end: '05:00' },
  };
  assert.ok(validateSpec(minimal));
  assert.deepEqual(minimal, {
    selector: {},
    maxUnavailable: poolDefaults.maxUnavailable,
    drainTimeout: poolDefaults.drainTimeout,
    readyTimeout: poolDefaults.readyTimeout,
    maintenanceWindow: { start: '01:00', end: '05:00', timeZone: poolDefaults.timeZone },
    patches: { policy: poolDefaults.patchPolicy },
    paused: false,
    health: {
      unhealthyConditions: healthDefaults.unhealthyConditions,
      nodeStartupTimeout: healthDefaults.nodeStartupTimeout,
      maxUnhealthy: healthDefaults.maxUnhealthy,
      remediation: {
        enabled: true,
        restartServiceTimeout: healthDefaults.restartServiceTimeout,
        rebootstrapTimeout: healthDefaults.rebootstrapTimeout,
        rebootTimeout: healthDefaults.rebootTimeout,
      },
    },
  });
  // The defaults the schema fills in are the policy of hosts in no pool.
  const health = checkHealthSpec((minimal as { health: unknown }).health);
  assert.deepEqual(health.problems, []);
  assert.deepEqual(health.policy, { ...defaultHealthPolicy });
  const { policy, problems } = checkPoolSpec(minimal);
  assert.deepEqual(problems, []);
  assert.equal(policy.drainTimeoutMs, 600_000);
  assert.equal(policy.readyTimeoutMs, 900_000);
});

test('each bad pool is refused for its problem, by the schema where the fixture says so', () => {
  const bad = load('bad-pools.yaml');
  assert.ok(bad.length >= 10);
  for (const pool of bad) {
    const name = pool.metadata.name;
    const expected = new RegExp(pool.metadata.annotations!['test.winfleet.io/problem']!);
    const { problems } = checkPoolSpec(pool.spec);
    assert.ok(
      problems.some((p) => expected.test(p)),
      `${name}: ${JSON.stringify(problems)} lacks ${expected}`,
    );
    const bySchema = pool.metadata.annotations!['test.winfleet.io/schema'] === 'yes';
    assert.equal(
      !validateSpec(structuredClone(pool.spec)),
      bySchema,
      `${name}: refused by the OpenAPI schema`,
    );
  }
});

test('every rule the schema alone cannot enforce has a CEL rule', () => {
  const rules = (s: Schema | undefined) =>
    (s?.['x-kubernetes-validations'] ?? []).map((v) => v.rule);
  assert.match(rules(spec.properties!.maxUnavailable).join(), /self >= 1/);
  assert.match(
    rules(spec.properties!.drainTimeout).join(),
    /duration\(self\) <= duration\('24h'\)/,
  );
  assert.match(rules(spec.properties!.readyTimeout).join(), /duration\(self\) >= duration\('1s'\)/);
  assert.match(rules(spec.properties!.maintenanceWindow).join(), /self\.start != self\.end/);
  assert.match(
    rules(spec.properties!.selector!.properties!.matchExpressions!.items).join(),
    /self\.operator in \['In', 'NotIn'\]/,
  );
  assert.match(rules(spec.properties!.selector!.properties!.matchLabels).join(), /self\.all\(k/);
  const pattern = rules(spec.properties!.join!.properties!.nodeNamePattern).join();
  assert.match(pattern, /self\.startsWith\('\^'\) && self\.endsWith\('\$'\)/);
  // A pattern RE2 cannot compile makes matches() fail, and so the rule (the API server's RE2).
  assert.match(pattern, /''\.matches\(self\) \|\| !''\.matches\(self\)/);
});

test('property: the schema’s duration pattern accepts exactly what parseDuration reads', (t) => {
  const pattern = new RegExp(spec.properties!.drainTimeout!.pattern!);
  const token = fc.constantFrom(
    '0',
    '1',
    '10',
    '05',
    '90',
    'h',
    'm',
    's',
    'ms',
    'us',
    '.',
    '-',
    'd',
  );
  fc.assert(
    fc.property(
      fc.array(token, { minLength: 1, maxLength: 8 }).map((a) => a.join('')),
      (text) => {
        // The pattern is the syntax; the range (a value too large for milliseconds, or outside
        // 1s–24h) is the CEL rule's and parseDuration's bounds, checked above.
        let parsed = true;
        try {
          parseDuration(text, 'd');
        } catch (error) {
          parsed = !(error as Error).message.startsWith('Cannot parse');
        }
        assert.equal(pattern.test(text), parsed, JSON.stringify(text));
      },
    ),
    { seed: testSeed(t), numRuns: 3000 },
  );
});

test('property: the schema’s maxUnavailable rule and time-of-day patterns agree with the parsers', (t) => {
  const rule = spec.properties!.maxUnavailable!['x-kubernetes-validations']![0]!.rule;
  const percent = new RegExp(/matches\('(.*)'\)/.exec(rule)![1]!);
  const start = new RegExp(spec.properties!.maintenanceWindow!.properties!.start!.pattern!);
  const end = new RegExp(spec.properties!.maintenanceWindow!.properties!.end!.pattern!);
  const digits = fc
    .array(fc.constantFrom('0', '1', '2', '4', '5', '9', ':', '%', '-', '.'), {
      minLength: 1,
      maxLength: 6,
    })
    .map((a) => a.join(''));
  fc.assert(
    fc.property(digits, (text) => {
      const asPercent = checkPoolSpec({ selector: {}, maxUnavailable: text }).problems.length === 0;
      assert.equal(percent.test(text), asPercent, `maxUnavailable ${JSON.stringify(text)}`);
      const window = (w: object) => checkPoolSpec({ selector: {}, maintenanceWindow: w }).problems;
      const startOk = !window({ start: text, end: text === '00:00' ? '01:00' : '00:00' }).some(
        (p) => p.includes('.start'),
      );
      assert.equal(start.test(text), startOk, `start ${JSON.stringify(text)}`);
      const endOk = !window({ start: text === '00:00' ? '01:00' : '00:00', end: text }).some((p) =>
        p.includes('.end'),
      );
      assert.equal(end.test(text), endOk, `end ${JSON.stringify(text)}`);
    }),
    { seed: testSeed(t), numRuns: 3000 },
  );
});

const health = spec.properties!.health!;
const validateHealth = ajv.compile(health);

test('spec.health: the issue’s sample passes the schema and the check; every CEL rule is there', () => {
  const sample = {
    unhealthyConditions: [
      { type: 'Ready', status: 'False', timeout: '5m' },
      { type: 'Ready', status: 'Unknown', timeout: '5m' },
      { type: 'KubeletUnhealthy', status: 'True', timeout: '2m' },
    ],
    nodeStartupTimeout: '15m',
    maxUnhealthy: '40%',
  };
  assert.ok(validateHealth(structuredClone(sample)), JSON.stringify(validateHealth.errors));
  const { policy, problems } = checkHealthSpec(sample);
  assert.deepEqual(problems, []);
  assert.deepEqual(policy.unhealthyConditions, [
    { type: 'Ready', status: 'False', timeoutMs: 300_000 },
    { type: 'Ready', status: 'Unknown', timeoutMs: 300_000 },
    { type: 'KubeletUnhealthy', status: 'True', timeoutMs: 120_000 },
  ]);
  assert.deepEqual(policy.maxUnhealthy, { kind: 'percent', percent: 40 });
  const rules = (s: Schema | undefined) =>
    (s?.['x-kubernetes-validations'] ?? []).map((v) => v.rule).join();
  const p = health.properties!;
  assert.match(rules(p.maxUnhealthy), /self >= 0/);
  assert.match(rules(p.nodeStartupTimeout), /duration\('30s'\)/);
  assert.match(rules(p.unhealthyConditions!.items!.properties!.timeout), /duration\('24h'\)/);
  for (const f of ['restartServiceTimeout', 'rebootstrapTimeout', 'rebootTimeout']) {
    assert.match(rules(p.remediation!.properties![f]), /duration\('1s'\)/, f);
  }
  assert.deepEqual(p.unhealthyConditions!.items!.properties!.status!.enum, [
    'True',
    'False',
    'Unknown',
  ]);
  const wire = JSON.stringify(p.unhealthyConditions);
  assert.match(
    wire,
    /"x-kubernetes-list-map-keys":\["type","status"\]/,
    'one entry per type+status',
  );
});

test('spec.health: each bad value is refused naming the field, by the schema where it can', () => {
  const cases: { health: unknown; problem: RegExp; bySchema: boolean }[] = [
    { health: { maxUnhealthy: -1 }, problem: /^spec\.health\.maxUnhealthy is -1/, bySchema: false },
    {
      health: { maxUnhealthy: '101%' },
      problem: /^Cannot parse spec\.health\.maxUnhealthy "101%"/,
      bySchema: false,
    },
    {
      health: { nodeStartupTimeout: '10s' },
      problem: /^spec\.health\.nodeStartupTimeout "10s" is too short: use at least 30s/,
      bySchema: false,
    },
    {
      health: { nodeStartupTimeout: '1.5h' },
      problem: /^Cannot parse spec\.health\.nodeStartupTimeout/,
      bySchema: true,
    },
    {
      health: { unhealthyConditions: [] },
      problem: /^spec\.health\.unhealthyConditions: must be a list of at least one/,
      bySchema: true,
    },
    {
      health: { unhealthyConditions: [{ type: 'Ready', status: 'false', timeout: '5m' }] },
      problem: /^spec\.health\.unhealthyConditions\[0\]\.status: "false" is not one of/,
      bySchema: true,
    },
    {
      health: { unhealthyConditions: [{ type: 'Ready', status: 'False', timeout: '48h' }] },
      problem: /^spec\.health\.unhealthyConditions\[0\]\.timeout "48h" is too long/,
      bySchema: false,
    },
    {
      health: { unhealthyConditions: [{ type: 'Not Ready', status: 'False', timeout: '5m' }] },
      problem:
        /^spec\.health\.unhealthyConditions\[0\]\.type: "Not Ready" is not a Node condition type/,
      bySchema: true,
    },
    {
      health: { remediation: { enabled: 'yes' } },
      problem: /^spec\.health\.remediation\.enabled: must be true or false/,
      bySchema: true,
    },
    {
      health: { remediation: { rebootTimeout: '0s' } },
      problem: /^spec\.health\.remediation\.rebootTimeout "0s" is too short/,
      bySchema: false,
    },
  ];
  for (const c of cases) {
    const { problems } = checkHealthSpec(c.health);
    assert.ok(
      problems.some((p) => c.problem.test(p)),
      `${JSON.stringify(c.health)}: ${JSON.stringify(problems)}`,
    );
    assert.equal(
      !validateHealth(structuredClone(c.health)),
      c.bySchema,
      `${JSON.stringify(c.health)} refused by the OpenAPI schema`,
    );
  }
  // A duplicate type+status: the list map refuses it at the API server; the check names it.
  const twice = {
    unhealthyConditions: [
      { type: 'Ready', status: 'False', timeout: '5m' },
      { type: 'Ready', status: 'False', timeout: '1m' },
    ],
  };
  assert.match(
    checkHealthSpec(twice).problems.join(),
    /unhealthyConditions\[1\]: Ready False is listed twice/,
  );
});

test('property: the schema’s maxUnhealthy rule agrees with parseMaxUnhealthy', (t) => {
  const rule = health.properties!.maxUnhealthy!['x-kubernetes-validations']![0]!.rule;
  const percent = new RegExp(/matches\('(.*)'\)/.exec(rule)![1]!);
  const text = fc
    .array(fc.constantFrom('0', '1', '4', '9', '%', '-', '.', ' '), { minLength: 1, maxLength: 5 })
    .map((a) => a.join(''));
  fc.assert(
    fc.property(text, (value) => {
      const ok = checkHealthSpec({ maxUnhealthy: value }).problems.length === 0;
      assert.equal(percent.test(value), ok, JSON.stringify(value));
    }),
    { seed: testSeed(t), numRuns: 2000 },
  );
});

test('the WindowsHost CRD carries status.remediation, described, its enums the code’s', () => {
  const remediation =
    onTheWire(windowsHostCrd).spec.versions[0]!.schema.openAPIV3Schema.properties!.status!
      .properties!.remediation!;
  assert.deepEqual(undescribed(remediation, 'status.remediation'), []);
  const current = remediation.properties!.current!.properties!;
  assert.deepEqual(current.rung!.enum, Object.values(RemediationRung));
  const items = remediation.properties!.lastActions!.items!.properties!;
  assert.deepEqual(items.rung!.enum, Object.values(RemediationRung));
  assert.deepEqual(items.result!.enum, Object.values(RungResult));
  assert.equal(
    (remediation.properties!.lastActions as { maxItems?: number }).maxItems,
    lastActionsLimit,
  );
});
