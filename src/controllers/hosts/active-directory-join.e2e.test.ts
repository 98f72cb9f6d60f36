/**
 * The AD join step against a simulated machine (its catalog scripts run by the simulation, the
 * credentials read from the command's stdin), driven through a RemoteHost whose session records
 * every command line and input: the attacker's view of what crosses to the host. The
 * credentials Secret is read from the real API server: the pools live in a namespace of their
 * own, and the operator's namespace holds an `ad-join` Secret too, which a pool elsewhere must
 * never get.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { SimDomain } from '../../../sim/hosts/active-directory.ts';
import type { SimMachine } from '../../../sim/hosts/machine.ts';
import { createTestMachine, runOnHost } from '../../../sim/hosts/test-machine.ts';
import { escapeRegExp } from '../../../sim/testkit/regexp.ts';
import { findLeaks, needlesFor } from '../../../sim/testkit/secret-scan.ts';
import { writeSecret } from '../../../sim/testkit/secrets.ts';
import { sharedCluster, testNamespace } from '../../../sim/testkit/test-cluster.ts';
import { domainJoinPoolsAnnotation } from '../../api/active-directory.ts';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import { errorCode } from '../../errors/catalog.ts';
import { HostStatus } from '../../fleet/host-status.ts';
import { RemoteHost } from '../../hostaccess/remote-host.ts';
import type { SshSession } from '../../hostaccess/ssh-session.ts';
import { decodePowerShellCommandLine } from '../../powershell/powershell.ts';
import {
  adHostnamePlan,
  checkActiveDirectory,
  ensureDomainJoined,
  leaveDomain,
  type PoolActiveDirectory,
  poolActiveDirectory,
} from './active-directory-join.ts';
import { generatedHostname } from './ad-hostname.ts';
import type { HostControllerDeps } from './host-deps.ts';

/** Non-ASCII too: Windows PowerShell reads stdin in the console code page (437), not UTF-8. */
const password = 'Pä€£55w0rd-only-in-memory!';

interface Sent {
  command: string;
  script: string;
  input: string | undefined;
}

/** The host key the hosts of these tests present, and the one their WindowsHosts pin. */
const pinnedKey = `SHA256:${'k'.repeat(43)}`;

/** A RemoteHost whose commands run on `machine`, each recorded; its session presented `key`. */
function remoteOn(machine: SimMachine, sent: Sent[], key = pinnedKey): RemoteHost {
  const session = {
    fingerprint: key,
    exec: async (command: string, _timeout?: number, _max?: number, input?: string) => {
      sent.push({ command, script: decodePowerShellCommandLine(command) ?? '', input });
      return runOnHost(machine, command, input ?? '');
    },
  } as unknown as SshSession;
  return new RemoteHost(session, 10_000);
}

const { kc: admin } = await sharedCluster();
const core = admin.makeApiClient(k8s.CoreV1Api);
/** Where the pools and hosts of these tests live, with their `ad-join` Secret. */
const ns = await testNamespace(admin, 'ad-join');
/** The operator's own namespace: it holds an `ad-join` Secret too. */
const operatorNs = await testNamespace(admin, 'ad-operator');
/** Another team's namespace, with no Secret. */
const teamNs = await testNamespace(admin, 'team-a');
const nsPattern = escapeRegExp(ns);

await writeSecret(admin, operatorNs, 'ad-join', { username: 'joiner', password });

/**
 * The pools' Secret holds `secret` and opts in to pool corp (unless `annotations` says
 * otherwise); the operator's other dependencies record its Events.
 */
async function depsWith(
  secret: Record<string, string>,
  events: string[],
  annotations: Record<string, string> = { [domainJoinPoolsAnnotation]: 'corp' },
): Promise<HostControllerDeps> {
  await writeSecret(admin, ns, 'ad-join', secret, { annotations });
  return {
    kc: admin,
    operatorNamespace: operatorNs,
    events: {
      record: (_o: unknown, _t: string, reason: string, m: string) =>
        events.push(`${reason}: ${m}`),
    },
  } as unknown as HostControllerDeps;
}

const host: WindowsHost = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsHost',
  metadata: { name: 'a', namespace: ns, uid: 'uid-a', labels: { pool: 'corp' } },
  spec: {
    address: '127.0.0.200',
    username: 'Administrator',
    sshKeySecretRef: { name: 'k' },
    hostKey: pinnedKey,
  },
};

const pool: WindowsNodePool = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsNodePool',
  metadata: { name: 'corp', namespace: ns },
  spec: {
    selector: { matchLabels: { pool: 'corp' } },
    activeDirectory: { domain: 'corp.example.com', credentialsSecretRef: { name: 'ad-join' } },
  },
};

const ad = poolActiveDirectory([pool], host) as PoolActiveDirectory;

async function pass(
  machine: SimMachine,
  hs: HostStatus,
  deps: HostControllerDeps,
  sent: Sent[],
  h: WindowsHost = host,
) {
  const remote = remoteOn(machine, sent);
  const facts = await remote.facts();
  const hostname = checkActiveDirectory(hs, facts, ad, adHostnamePlan(h, facts, ad));
  return ensureDomainJoined(deps, h, hs, remote, facts, ad, hostname);
}

test('a 20-character host: renamed, restarted, joined with stdin credentials, restarted; the password never in a command line', async (t) => {
  const domain = new SimDomain({ name: 'corp.example.com', username: 'joiner', password });
  const machine = await createTestMachine(t, {
    hostname: 'winfleet-ad-host-a01',
    activeDirectory: domain,
  });
  const events: string[] = [];
  const deps = await depsWith({ username: 'joiner', password }, events);
  const sent: Sent[] = [];
  const hs = new HostStatus(structuredClone(host));

  assert.equal(await pass(machine, hs, deps, sent), 'restarting');
  assert.equal(machine.pendingHostname, generatedHostname('corp', 'uid-a'));
  assert.match(machine.pendingHostname, /^corp-[0-9a-z]{8}$/);
  assert.equal(machine.hostname, 'winfleet-ad-host-a01', 'the rename waits for the boot');
  assert.ok(hs.status.activeDirectoryRestartAt);
  assert.equal(hs.condition(ConditionType.Ready)?.reason, ConditionReason.JoiningDomain);
  assert.deepEqual(
    sent.map((s) => /# winfleet-script: (\S+)/.exec(s.script)?.[1]),
    ['host-facts', 'rename-computer', 'restart-host'],
  );
  await machine.reboot({ reason: 'test' });

  sent.length = 0;
  assert.equal(await pass(machine, hs, deps, sent), 'restarting');
  assert.equal(machine.domain, 'corp.example.com');
  assert.deepEqual(
    sent.map((s) => /# winfleet-script: (\S+)/.exec(s.script)?.[1]),
    ['host-facts', 'join-domain', 'restart-host'],
  );
  const join = sent[1]!;
  assert.equal(
    join.input,
    `${Buffer.from('corp.example.com\\joiner').toString('base64')}\n${Buffer.from(password).toString('base64')}\n`,
    'plain ASCII (base64 of UTF-8): the same in every console code page',
  );
  await machine.reboot({ reason: 'test' });

  sent.length = 0;
  assert.equal(await pass(machine, hs, deps, sent), 'joined');
  assert.deepEqual(
    sent.map((s) => /# winfleet-script: (\S+)/.exec(s.script)?.[1]),
    ['host-facts'],
  );
  assert.ok(domain.computer(machine.hostname));

  // Removal leaves the domain locally, without credentials; the computer account stays for an
  // AD admin, and a Warning names it.
  sent.length = 0;
  assert.equal(await leaveDomain(deps, host, remoteOn(machine, sent), ad), true);
  assert.equal(machine.domain, undefined);
  assert.ok(domain.computer(machine.hostname), 'the computer account is left to an AD admin');
  assert.deepEqual(
    sent.map((s) => [/# winfleet-script: (\S+)/.exec(s.script)?.[1], s.input]),
    [
      ['host-facts', undefined],
      ['leave-domain', undefined],
      ['restart-host', undefined],
    ],
    'nothing on any stdin',
  );
  assert.ok(events.some((e) => /^LeftDomain: Removed .* from domain corp\.example\.com/.test(e)));
  assert.ok(
    events.some((e) =>
      new RegExp(
        `^ComputerAccountLeftEnabled: The computer account ${machine.hostname.toUpperCase()}\\$ .*Disable-ADAccount`,
      ).test(e),
    ),
  );

  // The attacker's view: no command line, decoded script or event carries the password.
  for (const record of [...sent, join]) {
    assert.ok(!record.command.includes(password));
    assert.ok(!record.script.includes(password));
    assert.ok(
      !Buffer.from(record.command)
        .toString('base64')
        .includes(Buffer.from(password).toString('base64')),
    );
  }
  assert.ok(!events.join('\n').includes(password));
  assert.ok(!JSON.stringify(hs.status).includes(password));
  // What PowerShell module logging (event 4103) would record: Add-Computer bound a
  // PSCredential; no cmdlet was bound to the password or to text holding it.
  const logged = machine.powerShellModuleLog.map((e) => e.payload).join('\n');
  assert.match(logged, /CommandInvocation\(Add-Computer\)/, 'the model saw the join');
  assert.deepEqual(
    findLeaks(new Map([['module log 4103', logged]]), needlesFor('password', password)),
    [],
  );
});

test('wrong credentials: DomainJoinFailed naming the Secret and the domain, still in the workgroup, no restart', async (t) => {
  const domain = new SimDomain({ name: 'corp.example.com', username: 'joiner', password });
  const machine = await createTestMachine(t, { hostname: 'web-1', activeDirectory: domain });
  const sent: Sent[] = [];
  const hs = new HostStatus(structuredClone(host));
  const deps = await depsWith({ username: 'CORP\\joiner', password: 'not-it' }, []);
  const error = await pass(machine, hs, deps, sent).then(
    () => assert.fail('joined with wrong credentials'),
    (e: unknown) => e,
  );
  assert.equal(errorCode(error), 'WF_HOST_DOMAIN_JOIN_FAILED');
  const degraded = hs.condition(ConditionType.Degraded);
  assert.equal(degraded?.reason, ConditionReason.DomainJoinFailed);
  assert.match(
    degraded?.message ?? '',
    new RegExp(
      `^Joining 127\\.0\\.0\\.200 \\(web-1\\) to domain corp\\.example\\.com failed with the credentials of Secret ${nsPattern}/ad-join: .*The user name or password is incorrect\\..*the host stays in its workgroup`,
    ),
  );
  assert.ok(!(degraded?.message ?? '').includes('not-it'), 'the password is not quoted');
  assert.equal(machine.domain, undefined);
  assert.deepEqual(
    sent.map((s) => /# winfleet-script: (\S+)/.exec(s.script)?.[1]),
    ['host-facts', 'join-domain'],
    'no restart',
  );
  assert.equal(hs.status.lastError?.step, 'active-directory');
});

test('refused before anything changes: a long spec.nodeName, another domain, a missing Secret key', async (t) => {
  const domain = new SimDomain({ name: 'corp.example.com', username: 'joiner', password });
  const machine = await createTestMachine(t, { hostname: 'web-1', activeDirectory: domain });
  const sent: Sent[] = [];
  const long = { ...host, spec: { ...host.spec, nodeName: 'a-node-name-of-24-chars' } };
  const hs = new HostStatus(structuredClone(long));
  const error = await pass(
    machine,
    hs,
    await depsWith({ username: 'u', password }, []),
    sent,
    long,
  ).catch((e: unknown) => e);
  assert.equal(errorCode(error), 'WF_HOST_AD_REFUSED');
  assert.match(hs.condition(ConditionType.Degraded)?.message ?? '', /at most 15 characters/);
  assert.deepEqual(
    sent.map((s) => /# winfleet-script: (\S+)/.exec(s.script)?.[1]),
    ['host-facts'],
  );

  machine.domain = 'other.example.com';
  const hs2 = new HostStatus(structuredClone(host));
  await pass(machine, hs2, await depsWith({ username: 'u', password }, []), []).catch(() => {});
  assert.match(
    hs2.condition(ConditionType.Degraded)?.message ?? '',
    /joined to domain other\.example\.com, not corp\.example\.com.*does not move hosts between domains/,
  );
  machine.domain = undefined;

  const hs3 = new HostStatus(structuredClone(host));
  const sent3: Sent[] = [];
  await pass(machine, hs3, await depsWith({ username: 'u' }, []), sent3).catch(() => {});
  assert.match(
    hs3.condition(ConditionType.Degraded)?.message ?? '',
    new RegExp(
      `Secret ${nsPattern}/ad-join \\(pool corp, spec\\.activeDirectory\\.credentialsSecretRef\\) has no password; add the key password`,
    ),
  );
  assert.deepEqual(
    sent3.map((s) => /# winfleet-script: (\S+)/.exec(s.script)?.[1]),
    ['host-facts'],
  );
});

test('attacker side: a pool in another namespace naming the operator’s AD Secret gets no credentials, and nothing is sent to its host', async (t) => {
  const domain = new SimDomain({ name: 'corp.example.com', username: 'joiner', password });
  const machine = await createTestMachine(t, {
    hostname: 'attacker-host',
    activeDirectory: domain,
  });
  const rogueHost: WindowsHost = {
    ...host,
    metadata: { ...host.metadata, namespace: teamNs, uid: 'uid-rogue' },
  };
  const roguePool: WindowsNodePool = { ...pool, metadata: { name: 'corp', namespace: teamNs } };
  const rogue = poolActiveDirectory([roguePool], rogueHost) as PoolActiveDirectory;
  assert.equal(rogue.namespace, teamNs);
  // The operator's namespace does hold the account the rogue pool names.
  const kept = await core.readNamespacedSecret({ name: 'ad-join', namespace: operatorNs });
  assert.equal(Buffer.from(kept.data?.password ?? '', 'base64').toString(), password);
  const sent: Sent[] = [];
  const hs = new HostStatus(rogueHost);
  const remote = remoteOn(machine, sent);
  const facts = await remote.facts();
  const hostname = checkActiveDirectory(hs, facts, rogue, adHostnamePlan(rogueHost, facts, rogue));
  await assert.rejects(
    ensureDomainJoined(
      await depsWith({ username: 'joiner', password }, []),
      rogueHost,
      hs,
      remote,
      facts,
      rogue,
      hostname,
    ),
    new RegExp(
      `Secret ${escapeRegExp(teamNs)}/ad-join \\(pool corp, spec\\.activeDirectory\\.credentialsSecretRef\\) does not exist`,
    ),
  );
  assert.ok(!sent.some((s) => s.input?.includes(password)), 'the password never reaches the host');
  assert.deepEqual(
    sent.map((s) => /# winfleet-script: (\S+)/.exec(s.script)?.[1]),
    ['host-facts'],
    'no join was attempted',
  );
  assert.equal(machine.domain, undefined);
  assert.deepEqual(domain.computers, []);
});

/** A machine in its workgroup whose hostname is already the planned one: the join comes next. */
async function joinReady(t: Parameters<typeof createTestMachine>[0]) {
  const domain = new SimDomain({ name: 'corp.example.com', username: 'joiner', password });
  const machine = await createTestMachine(t, { hostname: 'web-1', activeDirectory: domain });
  return { domain, machine };
}

const scripts = (sent: Sent[]) => sent.map((s) => /# winfleet-script: (\S+)/.exec(s.script)?.[1]);

test('attacker side: a pool naming a Secret that does not opt in to it (a basic-auth Secret, another pool’s, "*", a spaced list) gets nothing read or sent', async (t) => {
  const { domain, machine } = await joinReady(t);
  // Any kubernetes.io/basic-auth Secret has exactly the keys a pool reads.
  const cases: [string, Record<string, string> | undefined, RegExp][] = [
    ['no annotation', undefined, /has no winfleet\.io\/domain-join-pools/],
    ['another pool', { [domainJoinPoolsAnnotation]: 'corp-gpu' }, /lists corp-gpu/],
    ['a wildcard', { [domainJoinPoolsAnnotation]: '*' }, /"\*" is not one; "\*" is no wildcard/],
    ['a spaced list', { [domainJoinPoolsAnnotation]: 'gpu, corp' }, /" corp" is not one/],
    ['a prefix', { [domainJoinPoolsAnnotation]: 'corporate' }, /lists corporate/],
  ];
  for (const [what, annotations, why] of cases) {
    await writeSecret(
      admin,
      ns,
      'web-basic-auth',
      { username: 'joiner', password },
      {
        type: 'kubernetes.io/basic-auth',
        ...(annotations ? { annotations } : {}),
      },
    );
    const harvest: PoolActiveDirectory = {
      ...ad,
      spec: { ...ad.spec, credentialsSecretRef: { name: 'web-basic-auth' } },
    };
    const sent: Sent[] = [];
    const hs = new HostStatus(structuredClone(host));
    const remote = remoteOn(machine, sent);
    const facts = await remote.facts();
    const hostname = checkActiveDirectory(hs, facts, harvest, adHostnamePlan(host, facts, harvest));
    const deps = { kc: admin, events: { record: () => {} } } as unknown as HostControllerDeps;
    const error = await ensureDomainJoined(deps, host, hs, remote, facts, harvest, hostname).then(
      () => assert.fail(`${what}: joined`),
      (e: unknown) => e,
    );
    assert.equal(errorCode(error), 'WF_HOST_AD_SECRET_NOT_OPTED_IN', what);
    const degraded = hs.condition(ConditionType.Degraded);
    assert.equal(degraded?.reason, ConditionReason.DomainCredentialsNotOptedIn, what);
    assert.match(degraded?.message ?? '', why, what);
    assert.match(
      degraded?.message ?? '',
      new RegExp(
        `kubectl annotate secret -n ${nsPattern} web-basic-auth --overwrite winfleet\\.io/domain-join-pools=`,
      ),
    );
    assert.deepEqual(scripts(sent), ['host-facts'], `${what}: no join attempted`);
    assert.ok(!sent.some((s) => s.input !== undefined), `${what}: nothing on stdin`);
  }
  assert.equal(machine.domain, undefined);
  assert.deepEqual(domain.attempts, []);
});

test('attacker side: a host of the AD pool whose key was trusted on first use (no spec.hostKey), or that presents another key, gets no credentials and is not even renamed', async (t) => {
  const { domain, machine } = await joinReady(t);
  const deps = await depsWith({ username: 'joiner', password }, []);
  const tofu: WindowsHost = {
    ...host,
    spec: { address: '127.0.0.200', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
  };
  const attackerKey = `SHA256:${'a'.repeat(43)}`;
  for (const [what, h, key, why] of [
    ['TOFU, hostname planned', tofu, attackerKey, /was trusted on first use/],
    [
      'pinned, another key',
      host,
      attackerKey,
      /presented SSH host key SHA256:a+, not spec\.hostKey/,
    ],
  ] as const) {
    const sent: Sent[] = [];
    const hs = new HostStatus(structuredClone(h));
    const remote = remoteOn(machine, sent, key);
    const facts = await remote.facts();
    const hostname = checkActiveDirectory(hs, facts, ad, adHostnamePlan(h, facts, ad));
    const error = await ensureDomainJoined(deps, h, hs, remote, facts, ad, hostname).catch(
      (e: unknown) => e,
    );
    assert.equal(errorCode(error), 'WF_HOST_KEY_NOT_PINNED', what);
    assert.equal(hs.condition(ConditionType.Degraded)?.reason, ConditionReason.HostKeyNotPinned);
    assert.match(hs.condition(ConditionType.Degraded)?.message ?? '', why, what);
    assert.deepEqual(scripts(sent), ['host-facts'], what);
    assert.ok(!sent.some((s) => s.input !== undefined), `${what}: nothing on stdin`);
  }
  // A host whose name is not the planned one is not renamed either.
  const renameMachine = await createTestMachine(t, {
    hostname: 'winfleet-ad-host-a01',
    activeDirectory: domain,
  });
  const sent: Sent[] = [];
  const hs = new HostStatus(structuredClone(tofu));
  const remote = remoteOn(renameMachine, sent, attackerKey);
  const facts = await remote.facts();
  const hostname = checkActiveDirectory(hs, facts, ad, adHostnamePlan(tofu, facts, ad));
  await assert.rejects(ensureDomainJoined(deps, tofu, hs, remote, facts, ad, hostname));
  assert.deepEqual(scripts(sent), ['host-facts']);
  assert.equal(renameMachine.pendingHostname, 'winfleet-ad-host-a01');
  assert.equal(machine.domain, undefined);
  assert.deepEqual(domain.attempts, []);
});

test('attacker side: a joined host being removed (often a compromised one) gets no credentials; what module logging records of a join holds no password', async (t) => {
  const { domain, machine } = await joinReady(t);
  const deps = await depsWith({ username: 'joiner', password }, []);
  const sent: Sent[] = [];
  const hs = new HostStatus(structuredClone(host));
  assert.equal(await pass(machine, hs, deps, sent), 'restarting');
  assert.equal(machine.domain, 'corp.example.com');
  await machine.reboot({ reason: 'test' });

  sent.length = 0;
  const events: string[] = [];
  const removal = {
    ...deps,
    events: {
      record: (_o: unknown, _t: string, r: string, m: string) => events.push(`${r}: ${m}`),
    },
  } as unknown as HostControllerDeps;
  assert.equal(await leaveDomain(removal, host, remoteOn(machine, sent), ad), true);
  assert.ok(
    sent.every((s) => s.input === undefined),
    'no stdin at all',
  );
  assert.deepEqual(
    domain.attempts.map((a) => a.operation),
    ['join'],
    'the domain saw no removal with credentials',
  );
  assert.equal(machine.domain, undefined);
  assert.ok(!events.join('\n').includes(password));

  // The 4103 trail of every script run on the host.
  const logged = machine.powerShellModuleLog.map((e) => e.payload).join('\n');
  assert.match(logged, /ParameterBinding\(Add-Computer\)/);
  assert.match(logged, /CommandInvocation\(Invoke-CimMethod\)/, 'the removal ran');
  assert.deepEqual(
    findLeaks(new Map([['module log 4103', logged]]), [
      ...needlesFor('password', password),
      ...needlesFor('password (base64)', Buffer.from(password).toString('base64')),
    ]),
    [],
  );
});
