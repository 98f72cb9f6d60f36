/**
 * Generated WindowsHost specs against the real API server and the operator process. Each spec
 * mixes valid and invalid fields; one with an invalid field must be refused by the CRD schema
 * naming that field, one without must be accepted and answered by the operator with a
 * condition carrying a reason. The operator must stay up and healthy throughout.
 *
 * Valid addresses are loopback (127.0.0.0/8, in a range nothing of ours listens on); invalid
 * ones are checked against the CRD's own address pattern first, so nothing accepted can
 * point outside the machine. Replay a run with WINFLEET_SEED=<seed>; WINFLEET_FUZZ_COUNT
 * changes how many specs are sent (default 500).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { isIPv4 } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import fc from 'fast-check';
import { freePort } from '../../sim/cluster/free-port.ts';
import { generateTestKey } from '../../sim/hosts/ssh-test-client.ts';
import { spawnOperator, stopProcess } from '../../sim/testkit/operator-process.ts';
import { writeStandInPayload } from '../../sim/testkit/payload.ts';
import { freshCluster } from '../../sim/testkit/test-cluster.ts';
import { writeOperatorConfig } from '../../sim/testkit/test-operator.ts';
import { sshKeySecretName, writeSshKeySecret } from '../../sim/testkit/windows-hosts.ts';
import { waitFor } from '../kube/wait-for.ts';
import { windowsHostCrd } from './crds.ts';
import { apiVersion } from './group-version.ts';
import { installCrds } from './install-crds.ts';
import type { WindowsHost } from './windows-host.ts';

/** A generated field: its value, and whether the schema should take it. */
interface Field {
  value: unknown;
  valid: boolean;
}
// Weighted so that about a third of the specs have no invalid field at all.
const valid = (arb: fc.Arbitrary<unknown>) => ({
  weight: 8,
  arbitrary: arb.map((value): Field => ({ value, valid: true })),
});
const invalid = (arb: fc.Arbitrary<unknown>) => ({
  weight: 1,
  arbitrary: arb.map((value): Field => ({ value, valid: false })),
});
const omitted: Field = { value: undefined, valid: true };
const missingRequired: Field = { value: undefined, valid: false };

const specSchema = windowsHostCrd.spec.versions[0]!.schema!.openAPIV3Schema!.properties!.spec!;
const addressPattern = new RegExp(specSchema.properties!.address!.pattern!);
/** What the schema takes as an address (length limits included). */
const schemaTakesAddress = (a: string) => a.length <= 253 && addressPattern.test(a);

const octet = fc.integer({ min: 0, max: 255 });
const oddText = fc.string({
  maxLength: 40,
  unit: fc.oneof(
    fc.constantFrom(...'aZ09.-_/:; @\\"\'\n\t\u0000%*'.split('')),
    fc.constantFrom('é', 'ß', 'Ω', '用', '😀', '\u202e', '\u00a0'),
  ),
});
const huge = fc.integer({ min: 300, max: 20_000 }).map((n) => 'x'.repeat(n));
const rfc1123Label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);

const address = fc.oneof(
  valid(
    fc
      .tuple(fc.integer({ min: 240, max: 254 }), octet, octet)
      .map(([a, b, c]) => `127.${a}.${b}.${c === 0 ? 1 : c}`),
  ),
  invalid(
    fc
      .oneof(
        oddText,
        huge,
        fc.tuple(octet, octet, octet, fc.integer({ min: 256, max: 999 })).map((o) => o.join('.')),
        fc.constantFrom('', '127.01.0.1', '999.1.1.1', '1.2.3', 'a..b', '-a.b', 'ü.example', '::1'),
        fc.oneof(fc.integer(), fc.constant(null), fc.constant(['127.0.0.1'])),
      )
      // Anything the schema takes would be looked up or dialled: only send what it refuses.
      .filter((a) => typeof a !== 'string' || !schemaTakesAddress(a)),
  ),
  { weight: 1, arbitrary: fc.constant(missingRequired) },
);

const port = fc.oneof(
  { weight: 2, arbitrary: fc.constant(omitted) },
  valid(fc.integer({ min: 1, max: 65535 })),
  invalid(
    fc.oneof(
      fc.constantFrom(0, -1, 65536, 1.5, '22', true),
      fc.integer({ min: 65536 }),
      fc.integer({ max: 0 }),
    ),
  ),
);

const usernameChar = fc.constantFrom(...'abcXYZ019._-@\\ éßΩ用'.split(''));
const username = fc.oneof(
  valid(fc.string({ minLength: 1, maxLength: 104, unit: usernameChar })),
  invalid(
    fc.oneof(
      fc.constant(''),
      fc.string({ minLength: 105, maxLength: 300, unit: usernameChar }),
      fc.constantFrom('Admin\nistrator', 'a\u0000b', 7, null, { name: 'x' }),
    ),
  ),
  { weight: 1, arbitrary: fc.constant(missingRequired) },
);

const sshKeySecretRef = fc.oneof(
  valid(
    fc.constantFrom(
      { name: sshKeySecretName },
      { name: sshKeySecretName, key: 'ssh-privatekey' },
      { name: sshKeySecretName, key: 'no-such.key' },
      { name: 'no-such-secret' },
    ),
  ),
  invalid(
    fc.oneof(
      fc.constantFrom({}, { name: '' }, { name: 'Bad_Name' }, { name: 'a/b' }, { name: '../x' }),
      fc.constantFrom({ name: 'ok', key: 'a/b' }, { name: 'ok', key: '' }, { name: 5 }, 'ssh-key'),
      huge.map((name) => ({ name })),
    ),
  ),
  { weight: 1, arbitrary: fc.constant(missingRequired) },
);

const nodeName = fc.oneof(
  { weight: 2, arbitrary: fc.constant(omitted) },
  valid(rfc1123Label),
  invalid(
    fc.oneof(
      fc.constantFrom('', 'Upper', 'under_score', '-lead', 'trail-', 'dot.ted', 'ünï', 42),
      fc
        .string({ minLength: 64, maxLength: 100, unit: fc.constantFrom('a', '1', '-') })
        .map((s) => `a${s}a`),
      oddText.filter((s) => !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(s)),
    ),
  ),
);

const labels = fc.oneof(
  { weight: 2, arbitrary: fc.constant(omitted) },
  valid(
    fc.dictionary(fc.constantFrom('pool', 'winfleet.io/zone', 'x_y.z'), rfc1123Label, {
      maxKeys: 3,
    }),
  ),
  invalid(
    fc.constantFrom(
      { 'bad key': 'v' },
      { ok: 'bad value!' },
      { ok: 'x'.repeat(64) },
      { ok: 5 },
      { '/x': 'v' },
      'labels',
    ),
  ),
);

const taints = fc.oneof(
  { weight: 2, arbitrary: fc.constant(omitted) },
  valid(fc.constantFrom([], [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }])),
  invalid(
    fc.constantFrom(
      [{ key: 'a', effect: 'Sometimes' }],
      [{ key: 'bad key', effect: 'NoSchedule' }],
      [{ effect: 'NoSchedule' }],
      [{ key: 'a', value: 'x'.repeat(64), effect: 'NoExecute' }],
      { key: 'a' },
    ),
  ),
);

const pool = fc.oneof(
  { weight: 2, arbitrary: fc.constant(omitted) },
  valid(rfc1123Label),
  invalid(fc.constantFrom('Pool', 'a_b', 'x'.repeat(64), 3)),
);

const extra = fc.oneof(
  { weight: 2, arbitrary: fc.constant(omitted) },
  valid(fc.oneof(fc.string(), fc.integer(), fc.object({ maxDepth: 2 }))),
);

const fields = { address, port, username, sshKeySecretRef, nodeName, labels, taints, pool };
const generated = fc.record({ ...fields, extra });

type Generated = { [K in keyof typeof fields | 'extra']: Field };

function specOf(g: Generated): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(g)) {
    if (field.value === undefined) continue;
    spec[name === 'extra' ? 'surpriseField' : name] = field.value;
  }
  return spec;
}

const invalidFields = (g: Generated) =>
  Object.entries(g)
    .filter(([, f]) => !f.valid)
    .map(([name]) => name);

function errorMessage(error: unknown): string {
  const body = (error as { body?: unknown }).body;
  try {
    return (JSON.parse(String(body)) as { message: string }).message;
  } catch {
    return String((error as Error).message ?? error);
  }
}

test('generated WindowsHost specs: refused naming the field, or answered with a condition', async (t) => {
  const seed = Number(process.env.WINFLEET_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const count = Number(process.env.WINFLEET_FUZZ_COUNT ?? 500);
  console.log(`# WindowsHost fuzz: WINFLEET_SEED=${seed} WINFLEET_FUZZ_COUNT=${count}`);
  t.diagnostic(`seed ${seed} (replay with WINFLEET_SEED=${seed})`);
  const samples = fc.sample(generated, { seed, numRuns: count }) as Generated[];
  for (const g of samples) {
    const a = g.address;
    if (a.valid) assert.ok(isIPv4(String(a.value)) && String(a.value).startsWith('127.'));
    else if (typeof a.value === 'string') assert.equal(schemaTakesAddress(a.value), false);
  }

  const cluster = await freshCluster(t);
  const { kc } = cluster;
  const namespace = 'winfleet-system';
  await installCrds(kc);
  await writeOperatorConfig(kc, namespace, { hosts: { agentCheckIntervalSeconds: 1 } });
  await writeSshKeySecret(kc, namespace, generateTestKey().privateKey);
  const payloadDir = await mkdtemp(join(tmpdir(), 'winfleet-payload-'));
  await writeStandInPayload(payloadDir);
  const statusPort = await freePort();
  const operatorLog = join(cluster.dir, 'operator.log');
  const operator = spawnOperator({
    kubeconfig: cluster.kubeconfigPath,
    namespace,
    statusPort,
    payloadDir,
    logFile: operatorLog,
  });
  t.after(() => stopProcess(operator));
  let exit: string | undefined;
  operator.on('exit', (code, signal) => {
    exit = `exited with code ${code} signal ${signal}`;
  });
  const healthy = async () => {
    assert.equal(exit, undefined, 'the operator process is still running');
    const res = await fetch(`http://127.0.0.1:${statusPort}/healthz`);
    assert.equal(res.status, 200, 'the operator answers /healthz');
  };
  await waitFor(() => healthy().then(() => true), { description: 'the operator healthy' });

  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const counts = { refused: 0, accepted: 0, answered: 0 };
  const reasons = new Map<string, number>();
  const sent = new Map<string, unknown>();
  const batchSize = 50;
  for (let start = 0; start < samples.length; start += batchSize) {
    const batch = samples.slice(start, start + batchSize);
    const accepted: string[] = [];
    await Promise.all(
      batch.map(async (g, i) => {
        const name = `fuzz-${start + i}`;
        const spec = specOf(g);
        const bad = invalidFields(g);
        const body = { apiVersion, kind: 'WindowsHost', metadata: { name, namespace }, spec };
        const shown = JSON.stringify(spec).slice(0, 400);
        try {
          await objects.create(body as unknown as WindowsHost);
        } catch (error) {
          const message = errorMessage(error);
          assert.notEqual(bad.length, 0, `a valid spec was refused: ${shown}: ${message}`);
          assert.ok(
            bad.some((field) => message.includes(`spec.${field}`)),
            `the refusal names one of ${bad.join(', ')}: ${message.slice(0, 600)} (spec ${shown})`,
          );
          counts.refused++;
          return;
        }
        assert.deepEqual(bad, [], `the schema accepted invalid ${bad.join(', ')}: ${shown}`);
        counts.accepted++;
        accepted.push(name);
        sent.set(name, spec);
      }),
    );
    // Every accepted host is answered with a named condition.
    for (const name of accepted) {
      const condition = await waitFor(
        async () => {
          const host = (await custom.getNamespacedCustomObject({
            group: 'winfleet.io',
            version: 'v1alpha1',
            namespace,
            plural: 'windowshosts',
            name,
          })) as WindowsHost;
          return host.status?.conditions?.find((c) => c.reason);
        },
        { description: `a condition with a reason on ${name}`, timeoutMs: 60_000 },
      ).catch(async (error: unknown) => {
        const log = await readFile(operatorLog, 'utf8').catch(() => '');
        t.diagnostic(`${name}: ${JSON.stringify(sent.get(name))}`);
        t.diagnostic(`operator log, last lines:\n${log.split('\n').slice(-30).join('\n')}`);
        throw error;
      });
      reasons.set(condition.reason, (reasons.get(condition.reason) ?? 0) + 1);
      counts.answered++;
    }
    await healthy();
    for (const name of accepted) {
      await custom.deleteNamespacedCustomObject({
        group: 'winfleet.io',
        version: 'v1alpha1',
        namespace,
        plural: 'windowshosts',
        name,
      });
    }
  }
  // Still reconciling after everything: the deleted hosts go (their finalizer is released).
  await waitFor(
    async () =>
      (
        (await custom.listNamespacedCustomObject({
          group: 'winfleet.io',
          version: 'v1alpha1',
          namespace,
          plural: 'windowshosts',
        })) as { items: unknown[] }
      ).items.length === 0,
    { description: 'every accepted host deleted', timeoutMs: 120_000 },
  );
  await healthy();
  t.diagnostic(
    `seed ${seed}: ${samples.length} specs, ${counts.refused} refused naming the field, ${counts.accepted} accepted, ${counts.answered} answered (${[...reasons].map(([r, n]) => `${r} ${n}`).join(', ')})`,
  );
  assert.equal(counts.refused + counts.accepted, samples.length);
  assert.ok(counts.refused > 0 && counts.accepted > 0, 'both outcomes were exercised');
});
