/**
 * A newcomer's mistakes, as the user sees them: each failure has its own reason on the Ready
 * condition (and in `kubectl get windowshosts`), a message with the fix, and a Warning Event
 * whose count goes up while it repeats — and following the printed fix joins the host at once,
 * because the Secrets hosts name are watched.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { generateTestKey } from '../../../sim/hosts/ssh-test-client.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { hostReady, windowsHostFor } from '../../../sim/testkit/windows-hosts.ts';
import { ConditionReason, ConditionType, EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { waitFor } from '../../kube/wait-for.ts';

const run = promisify(execFile);

test('a newcomer sees each failure with its reason and fix, and the fix joins the host at once', async (t) => {
  const world = await joinWorld(t, { releases: ['2022', '2022'] });
  const { kc, namespace } = world;
  const kubectl = (...args: string[]) =>
    run('kubectl', ['--kubeconfig', world.cluster.kubeconfigPath, ...args]).then((r) => r.stdout);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const [simA, simB] = world.fleet.hosts;
  const named = (name: string, sim: typeof simA, spec: Partial<WindowsHost['spec']>) => {
    const host = windowsHostFor(sim!, namespace, spec);
    host.metadata.name = name;
    return host;
  };
  const writeSecret = (name: string, key: string, value: string) =>
    core.createNamespacedSecret({
      namespace,
      body: { metadata: { name, namespace }, stringData: { [key]: value } },
    });
  const readHost = async (name: string) =>
    (await objects.read({
      apiVersion: 'winfleet.io/v1alpha1',
      kind: 'WindowsHost',
      metadata: { name, namespace },
    })) as WindowsHost;
  const ready = (host: WindowsHost) =>
    host.status?.conditions?.find((c) => c.type === ConditionType.Ready);
  /** The Ready condition once its reason is `reason`. */
  const readyWith = (name: string, reason: string) =>
    waitFor(
      async () => {
        const c = ready(await readHost(name));
        return c?.reason === reason ? c : undefined;
      },
      { description: `WindowsHost ${name} Ready=False ${reason}`, timeoutMs: 30_000 },
    );
  const eventsOf = async (name: string) =>
    (
      await core.listNamespacedEvent({
        namespace,
        fieldSelector: `involvedObject.kind=WindowsHost,involvedObject.name=${name}`,
      })
    ).items;
  const describe = async (name: string) =>
    t.diagnostic(
      `kubectl describe windowshost ${name}:\n${await kubectl('describe', 'windowshost', '-n', namespace, name)}`,
    );

  // The newcomer's Secret does not exist yet; the bad key is not a key; the foreign key is not
  // authorized; nothing listens on port 1.
  await writeSecret('bad-key', 'ssh-privatekey', 'not a key\n');
  await writeSecret('foreign-key', 'ssh-privatekey', generateTestKey().privateKey);
  await objects.create(named('newcomer', simA, { sshKeySecretRef: { name: 'newcomer-key' } }));
  await objects.create(named('bad-key', simB, { sshKeySecretRef: { name: 'bad-key' } }));
  await objects.create(named('refused', simA, { sshKeySecretRef: { name: 'foreign-key' } }));
  await objects.create(named('unreachable', simA, { port: 1 }));

  const missing = await readyWith('newcomer', ConditionReason.SecretNotFound);
  assert.equal(missing.status, 'False');
  const fix = /kubectl create secret generic (\S+) -n (\S+) --from-file=([\w.-]+)=<key file>/.exec(
    missing.message,
  );
  assert.ok(fix, `the message prints the fix with -n: ${missing.message}`);
  assert.deepEqual(fix.slice(1), ['newcomer-key', namespace, 'ssh-privatekey']);

  const badKey = await readyWith('bad-key', ConditionReason.KeyInvalid);
  assert.match(badKey.message, new RegExp(`key "ssh-privatekey" of Secret ${namespace}/bad-key`));
  assert.match(badKey.message, /cannot be parsed \(Unsupported key format\)/);

  const refused = await readyWith('refused', ConditionReason.AuthRefused);
  assert.match(refused.message, /refused the SSH key.*check spec\.username \("Administrator"\)/);
  assert.match(refused.message, new RegExp(`Secret ${namespace}/foreign-key`));

  const unreachable = await readyWith('unreachable', ConditionReason.Unreachable);
  assert.match(unreachable.message, /:1 over SSH.*check spec\.address and spec\.port/);

  // kubectl shows why.
  const table = await kubectl('get', 'windowshosts', '-n', namespace);
  t.diagnostic(`kubectl get windowshosts:\n${table}`);
  assert.match(table, /^newcomer\s.*\sFalse\s+SecretNotFound\s/m);
  assert.match(table, /^bad-key\s.*\sFalse\s+KeyInvalid\s/m);

  // Each failure is a Warning Event; a repeating one is one Event whose count goes up.
  for (const [name, reason] of [
    ['newcomer', EventReason.SecretNotFound],
    ['bad-key', EventReason.KeyInvalid],
    ['refused', EventReason.AuthRefused],
  ] as const) {
    const events = await waitFor(
      async () => (await eventsOf(name)).filter((e) => e.reason === reason),
      { description: `a ${reason} Event on ${name}`, timeoutMs: 10_000 },
    );
    assert.ok(events.length >= 1 && events.every((e) => e.type === 'Warning'));
  }
  const repeated = await waitFor(
    async () => {
      const events = (await eventsOf('unreachable')).filter(
        (e) => e.reason === EventReason.Unreachable,
      );
      return events.length === 1 && (events[0]!.count ?? 0) >= 3 ? events[0] : undefined;
    },
    { description: 'one Unreachable Event counted three times or more', timeoutMs: 30_000 },
  );
  assert.ok(new Date(repeated.lastTimestamp!) > new Date(repeated.firstTimestamp!));
  for (const name of ['newcomer', 'bad-key', 'unreachable']) await describe(name);

  // Following the printed fix joins the host at once: the missing-Secret error is not retried
  // on a timer (it is terminal), only the Secret's watch brings the host back.
  const [, name, , key] = fix;
  const fixedAt = Date.now();
  await writeSecret(name!, key!, world.key.privateKey);
  await waitFor(async () => hostReady(await readHost('newcomer')), {
    description: 'the newcomer host Ready after its Secret was created',
    timeoutMs: 30_000,
    intervalMs: 250,
  });
  t.diagnostic(`Ready ${Date.now() - fixedAt} ms after the Secret was created`);
  const joined = await readHost('newcomer');
  assert.equal(joined.status?.lastError, undefined, 'lastError clears on success');
  assert.equal(ready(joined)?.reason, ConditionReason.NodeReady);
  // The Events in between, oldest first (NodeReady is written just after the status).
  const story = await waitFor(
    async () => {
      const events = (await eventsOf('newcomer'))
        .sort(
          (a, b) => new Date(a.firstTimestamp!).getTime() - new Date(b.firstTimestamp!).getTime(),
        )
        .map((e) => `${e.type} ${e.reason}`);
      return events.includes(`Normal ${EventReason.NodeReady}`) ? events : undefined;
    },
    { description: 'the NodeReady Event of the newcomer host', timeoutMs: 10_000 },
  );
  t.diagnostic(`newcomer Events: ${story.join(', ')}`);
  assert.equal(story[0], `Warning ${EventReason.SecretNotFound}`);
  for (const expected of [EventReason.HostKeyPinned, EventReason.Bootstrapped]) {
    assert.ok(story.includes(`Normal ${expected}`), `${expected} in ${story.join(', ')}`);
  }

  // Fixing the bad key in place (an update of the Secret) does the same.
  await core.replaceNamespacedSecret({
    name: 'bad-key',
    namespace,
    body: {
      metadata: { name: 'bad-key', namespace },
      stringData: { 'ssh-privatekey': world.key.privateKey },
    },
  });
  await waitFor(async () => hostReady(await readHost('bad-key')), {
    description: 'the bad-key host Ready after its Secret was fixed',
    timeoutMs: 30_000,
    intervalMs: 250,
  });
});
