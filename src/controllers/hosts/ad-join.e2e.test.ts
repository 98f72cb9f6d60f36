/**
 * Active Directory join (issue 16, section 4) end to end: real API server, operator, SSH and
 * agent; simulated hosts that reach a fake domain accepting one set of credentials
 * (sim/hosts/active-directory.ts).
 *
 * - A host with a 20-character hostname in a pool with spec.activeDirectory is renamed to a
 *   generated 15-character-or-shorter name, restarted, joined, restarted, and registers its Node
 *   under that name; gMSA readiness sees the domain.
 * - spec.nodeName over 15 characters is refused before anything changes, quoting the limit.
 * - Wrong credentials: DomainJoinFailed naming the Secret and the domain, the host still in its
 *   workgroup with no Node and no kubelet; fixing the Secret lets the join finish.
 * - Each credentials Secret opts in to its pool; each host's key is pinned in spec.hostKey.
 * - Removing a host leaves the domain locally, without credentials; a Warning names the
 *   computer account left enabled.
 * - The password is in no operator log line, WindowsHost status, Event, host file or what
 *   PowerShell module logging would record on the hosts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { SimDomain } from '../../../sim/hosts/active-directory.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { createPool } from '../../../sim/testkit/pools.ts';
import { findLeaks, needlesFor, readTree } from '../../../sim/testkit/secret-scan.ts';
import { writeSecret } from '../../../sim/testkit/secrets.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import { hostReady, listWindowsHosts, windowsHostFor } from '../../../sim/testkit/windows-hosts.ts';
import { domainJoinPoolsAnnotation } from '../../api/active-directory.ts';
import { gmsaReadyLabel } from '../../api/node-annotations.ts';
import { ConditionReason, ConditionType, EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { createLogger } from '../../log/logger.ts';
import { netbiosNameMaxLength } from './ad-hostname.ts';

const domainName = 'corp.example.com';
const goodPassword = 'Corr3ct-Horse-Battery-Staple!';
const wrongPassword = 'Wr0ng-Horse-Battery-Staple!';

test('AD pools: a 20-character hostname becomes a renamed, domain-joined Ready node; wrong credentials fail by name and leave nothing half-joined; removal leaves the domain', async (t) => {
  const domain = new SimDomain({ name: domainName, username: 'joiner', password: goodPassword });
  const longName = 'winfleet-ad-host-a01';
  assert.equal(longName.length, 20);
  const world = await joinWorld(t, {
    releases: ['2022', '2022', '2022'],
    names: [longName, 'adhostb', 'adhostc'],
    activeDirectory: domain,
    startOperator: false,
  });
  const logLines: string[] = [];
  const operator = await startTestOperator(world.kc, {
    namespace: world.namespace,
    payloadDir: world.payloadDir,
    log: createLogger({ level: 'debug', write: (line) => logLines.push(line) }),
    config: { hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 } },
  });
  t.after(() => operator.stop());
  const { kc, namespace } = world;
  const [hostA, hostB, hostC] = world.fleet.hosts as [
    (typeof world.fleet.hosts)[0],
    (typeof world.fleet.hosts)[0],
    (typeof world.fleet.hosts)[0],
  ];

  // Each Secret opts in to the pool that uses it.
  const optIn = (pool: string) => ({ annotations: { [domainJoinPoolsAnnotation]: pool } });
  await writeSecret(
    kc,
    namespace,
    'ad-join',
    { username: 'joiner', password: goodPassword },
    optIn('corp'),
  );
  await writeSecret(
    kc,
    namespace,
    'ad-join-b',
    { username: 'CORP\\joiner', password: wrongPassword },
    optIn('corpb'),
  );
  await createPool(kc, namespace, 'corp', {
    selector: { matchLabels: { 'example.com/pool': 'corp' } },
    activeDirectory: {
      domain: domainName,
      organizationalUnit: 'OU=Kubernetes,DC=corp,DC=example,DC=com',
      credentialsSecretRef: { name: 'ad-join' },
    },
  });
  await createPool(kc, namespace, 'corpb', {
    selector: { matchLabels: { 'example.com/pool': 'corpb' } },
    activeDirectory: { domain: domainName, credentialsSecretRef: { name: 'ad-join-b' } },
  });
  // The operator's pool cache has both pools once the pool controller wrote their status.
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  await waitFor(
    async () => {
      const list = (await custom.listNamespacedCustomObject({
        group: 'winfleet.io',
        version: 'v1alpha1',
        namespace,
        plural: 'windowsnodepools',
      })) as { items: { status?: { observedGeneration?: number } }[] };
      return list.items.length === 2 && list.items.every((p) => p.status?.observedGeneration);
    },
    { description: 'both pools observed by the operator', timeoutMs: 30_000 },
  );

  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const create = (host: typeof hostA, pool: string, extra: Partial<WindowsHost['spec']> = {}) => {
    // The admin pins each host's key before first contact: only then does it get credentials.
    const object = windowsHostFor(host, namespace, { hostKey: host.hostKeyFingerprint, ...extra });
    object.metadata.labels = { 'example.com/pool': pool };
    return objects.create(object);
  };
  const bootC = hostC.machine.bootId;
  await create(hostA, 'corp');
  await create(hostB, 'corpb');
  await create(hostC, 'corp', { nodeName: 'a-node-name-of-24-chars' });

  const byAddress = async (address: string): Promise<WindowsHost | undefined> =>
    (await listWindowsHosts(kc, namespace)).find((h) => h.spec.address === address);
  const condition = (host: WindowsHost | undefined, type: string) =>
    host?.status?.conditions?.find((c) => c.type === type);
  const degradedWith = (address: string, reason: string) =>
    waitFor(
      async () => {
        const host = await byAddress(address);
        const degraded = condition(host, ConditionType.Degraded);
        return degraded?.reason === reason ? { host: host!, degraded } : undefined;
      },
      { description: `Degraded=${reason} for ${address}`, timeoutMs: 90_000 },
    );

  // spec.nodeName over 15 characters: refused, nothing changed on the host.
  const refused = await degradedWith(hostC.address, ConditionReason.ActiveDirectoryRefused);
  assert.match(
    refused.degraded.message,
    new RegExp(
      `spec\\.nodeName "a-node-name-of-24-chars" has 23 characters; a host joined to Active Directory needs a hostname of at most ${netbiosNameMaxLength} characters`,
    ),
  );
  assert.equal(hostC.machine.hostname, 'adhostc');
  assert.equal(hostC.machine.pendingHostname, 'adhostc');
  assert.equal(hostC.machine.domain, undefined);
  assert.equal(hostC.machine.bootId, bootC, 'not restarted');
  assert.equal(hostC.machine.scm.query('kubelet'), undefined, 'no kubelet');
  assert.equal(refused.host.status?.bootstrapTokenId, undefined, 'no bootstrap token');

  // Wrong credentials: named failure, host in its workgroup, no Node, no kubelet.
  const failed = await degradedWith(hostB.address, ConditionReason.DomainJoinFailed);
  assert.match(
    failed.degraded.message,
    /Joining .* \(adhostb\) to domain corp\.example\.com failed with the credentials of Secret winfleet-system\/ad-join-b: .*The user name or password is incorrect\..*the host stays in its workgroup/,
  );
  assert.equal(hostB.machine.domain, undefined, 'still in its workgroup');
  assert.equal(domain.computer('adhostb'), undefined, 'no computer account');
  assert.equal(hostB.machine.scm.query('kubelet'), undefined, 'no kubelet');
  assert.equal(failed.host.status?.bootstrapTokenId, undefined, 'no bootstrap token');
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const nodesBefore = await core.listNode();
  assert.ok(!nodesBefore.items.some((n) => n.metadata?.name === 'adhostb'), 'no Node for the host');

  // The 20-character host: renamed, joined, restarted, Ready under its new name.
  let last: WindowsHost | undefined;
  const readyA = await waitFor(
    async () => {
      last = await byAddress(hostA.address);
      return last && hostReady(last) ? last : undefined;
    },
    { description: 'the renamed host Ready', timeoutMs: 180_000 },
  ).catch((error: Error) => {
    throw new Error(`${error.message}; conditions: ${JSON.stringify(last?.status?.conditions)}`);
  });
  const newName = hostA.machine.hostname;
  assert.notEqual(newName, longName, 'renamed');
  assert.ok(newName.length <= netbiosNameMaxLength, `${newName} has at most 15 characters`);
  assert.match(newName, /^corp-[0-9a-z]{8}$/, 'pool name and a hash of the host uid');
  assert.equal(readyA.status?.nodeName, newName);
  assert.equal(readyA.status?.hostname, newName);
  assert.equal(hostA.machine.domain, domainName);
  assert.deepEqual(domain.computer(newName), {
    name: newName.toUpperCase(),
    dnsHostName: `${newName}.${domainName}`,
    organizationalUnit: 'OU=Kubernetes,DC=corp,DC=example,DC=com',
  });
  const node = await core.readNode({ name: newName });
  assert.equal(node.metadata?.labels?.['kubernetes.io/hostname'], newName);
  // gMSA readiness reads the same membership.
  await waitFor(
    async () =>
      (await core.readNode({ name: newName })).metadata?.labels?.[gmsaReadyLabel] === 'true',
    { description: 'the joined node gMSA-ready', timeoutMs: 60_000 },
  );

  // Fixing the Secret lets host B finish.
  await writeSecret(
    kc,
    namespace,
    'ad-join-b',
    { username: 'CORP\\joiner', password: goodPassword },
    optIn('corpb'),
  );
  await waitFor(
    async () => {
      last = await byAddress(hostB.address);
      return last && hostReady(last) ? last : undefined;
    },
    { description: 'host B Ready once its Secret is fixed', timeoutMs: 180_000 },
  ).catch((error: Error) => {
    throw new Error(`${error.message}; conditions: ${JSON.stringify(last?.status?.conditions)}`);
  });
  assert.equal(hostB.machine.domain, domainName);
  assert.equal(hostB.machine.hostname, 'adhostb', 'a valid name is kept');
  assert.ok(domain.computer('adhostb'));

  // Removal leaves the domain.
  await objects.delete(readyA);
  await waitFor(async () => ((await byAddress(hostA.address)) === undefined ? true : undefined), {
    description: 'host A removed',
    timeoutMs: 120_000,
  });
  await waitFor(() => (hostA.machine.domain === undefined ? true : undefined), {
    description: 'host A in its workgroup',
    timeoutMs: 10_000,
  });
  // Locally, without credentials: the domain saw no removal, and the account is left to an AD
  // admin, named in a Warning Event.
  assert.deepEqual(
    domain.attempts.filter((a) => a.operation === 'leave'),
    [],
  );
  assert.ok(domain.computer(newName), 'its computer account stays for an AD admin');
  const leftEnabled = (await core.listNamespacedEvent({ namespace })).items.filter(
    (e) => e.reason === EventReason.ComputerAccountLeftEnabled,
  );
  assert.equal(leftEnabled.length, 1);
  assert.match(leftEnabled[0]?.message ?? '', new RegExp(`${newName.toUpperCase()}\\$`));

  // The password is nowhere: operator logs, statuses, Events, host files.
  const hosts = await listWindowsHosts(kc, namespace);
  const events = await core.listNamespacedEvent({ namespace });
  const texts = new Map<string, string>([
    ['operator log', logLines.join('')],
    ['WindowsHost objects', JSON.stringify(hosts)],
    ['Events', JSON.stringify(events.items.map((e) => e.message))],
  ]);
  for (const h of world.fleet.hosts) {
    texts.set(
      `${h.name} PowerShell module log (4103)`,
      h.machine.powerShellModuleLog.map((e) => e.payload).join('\n'),
    );
  }
  for (const [path, content] of await readTree(world.fleet.dir)) {
    texts.set(path, content.toString('utf8'));
    texts.set(`${path} (UTF-16)`, content.toString('utf16le'));
  }
  assert.ok(logLines.length > 100, 'the operator logged at debug level');
  const needles = [
    ...needlesFor('good password', goodPassword),
    ...needlesFor('wrong password', wrongPassword),
  ];
  assert.deepEqual(findLeaks(texts, needles), []);
});
