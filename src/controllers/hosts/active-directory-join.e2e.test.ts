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
import { writeSecret } from '../../../sim/testkit/secrets.ts';
import { sharedCluster, testNamespace } from '../../../sim/testkit/test-cluster.ts';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import { errorCode } from '../../errors/catalog.ts';
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
import { HostStatus } from './host-status.ts';

/** Non-ASCII too: Windows PowerShell reads stdin in the console code page (437), not UTF-8. */
const password = 'Pä€£55w0rd-only-in-memory!';

interface Sent {
  command: string;
  script: string;
  input: string | undefined;
}

/** A RemoteHost whose commands run on `machine`, each recorded. */
function remoteOn(machine: SimMachine, sent: Sent[]): RemoteHost {
  const session = {
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

/** The pools' Secret holds `secret`; the operator's other dependencies record its Events. */
async function depsWith(
  secret: Record<string, string>,
  events: string[],
): Promise<HostControllerDeps> {
  await writeSecret(admin, ns, 'ad-join', secret);
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
  spec: { address: '127.0.0.200', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
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
    '{"username":"corp.example.com\\\\joiner","password":"P\\u00e4\\u20ac\\u00a355w0rd-only-in-memory!"}\n',
    'plain ASCII: the same in every console code page',
  );
  await machine.reboot({ reason: 'test' });

  sent.length = 0;
  assert.equal(await pass(machine, hs, deps, sent), 'joined');
  assert.deepEqual(
    sent.map((s) => /# winfleet-script: (\S+)/.exec(s.script)?.[1]),
    ['host-facts'],
  );
  assert.ok(domain.computer(machine.hostname));

  // Removal leaves the domain with the same credentials, in memory.
  sent.length = 0;
  assert.equal(await leaveDomain(deps, host, remoteOn(machine, sent), ad), true);
  assert.equal(machine.domain, undefined);
  assert.equal(domain.computer(machine.hostname), undefined);
  assert.ok(events.some((e) => /^LeftDomain: Removed .* from domain corp\.example\.com/.test(e)));

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
