/**
 * A Pull-mode host's whole life without SSH (issue 15, section D), against a real control plane,
 * the real docker-registry and simulated hosts: one that joins with only join-command's user
 * data (no SSH server: port 22 counts every connection made to it and resets it), beside one
 * SSH host in the same pool. The operator runs in-process with the payload from the registry.
 *
 * - joined: the Pull host becomes Ready with its pool label, its identity, its serving and
 *   kube-proxy certificates approved by the usual rules;
 * - upgraded: a new payload pushed to the registry rolls through the pool, one host at a time
 *   (maxUnavailable 1), the Pull host's agent pulling the new files (agent included) itself;
 * - rebooted: winfleet.io/reboot-requested rolls a reboot through it, by its agent;
 * - attacker side: its node credentials cannot make another Pull host's WindowsHost take its
 *   Node, cannot ask another node to deconfigure itself, and a forged report on its own Node
 *   does not end its removal;
 * - removed: drained, the agent deconfigures the host (services gone, C:\k gone at the next
 *   boot as its running executables are), the Node deleted, the WindowsHost gone.
 * No SSH connection is ever made to the Pull host.
 */
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { defaultMachineEnvironment } from '../../../sim/hosts/machine-environment.ts';
import { startUserDataHosts, type UserDataHost } from '../../../sim/hosts/userdata-hosts.ts';
import { startTestRegistry } from '../../../sim/registry/registry-process.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { nextBaseAddress } from '../../../sim/testkit/loopback-range.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import { pushTestPayloadArtifact } from '../../../sim/testkit/payload-artifact.ts';
import { createPool, labelHosts, sampleRollout } from '../../../sim/testkit/pools.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
  readWindowsHost,
} from '../../../sim/testkit/windows-hosts.ts';
import { runWinfleet } from '../../../sim/testkit/winfleet-cli.ts';
import { kubeletFirewallRule } from '../../agent/kubelet-firewall.ts';
import { nodeKubeConfig } from '../../agent/node-client.ts';
import { apiVersion } from '../../api/group-version.ts';
import {
  deconfiguredAnnotation,
  deconfigureRequestAnnotation,
  hostAnnotation,
  hostIdentity,
  poolNodeLabel,
  servicesVersionAnnotation,
} from '../../api/node-annotations.ts';
import { ConditionReason, EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { rebootRequestedAnnotation } from '../../api/windows-node-pool.ts';
import { httpStatus, isNotFound } from '../../kube/client.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { createLogger } from '../../log/logger.ts';
import type { Operator } from '../../operator/operator.ts';

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

test('a Pull-mode host joins, upgrades, reboots and is removed through its agent, never over SSH', {
  timeout: 1_500_000,
}, async (t) => {
  const world = await joinWorld(t, { releases: ['2022'], startOperator: false });
  const { kc, namespace } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const registry = await startTestRegistry();
  t.after(() => registry.stop());
  const repository = 'winfleet/payload';
  const v1 = await pushTestPayloadArtifact(
    registry.url,
    repository,
    world.payloadDir,
    world.payload,
  );
  const logLines: string[] = [];
  const config = {
    hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120, removalTimeoutSeconds: 240 },
  };
  const operatorFor = (digest: string) =>
    startTestOperator(kc, {
      namespace,
      config,
      payloadImage: { reference: `${registry.host}/${repository}@${digest}`, plainHttp: true },
      log: createLogger({ level: 'info', write: (line) => logLines.push(line) }),
    });
  let operator: Operator = await operatorFor(v1.digest);
  t.after(() => operator.stop());

  await createPool(kc, namespace, 'web', {
    selector: { matchLabels: { pool: 'web' } },
    join: { nodeNamePattern: '^web-[0-9]+$' },
    maxUnavailable: 1,
    health: {
      unhealthyConditions: [
        { type: 'Ready', status: 'False', timeout: '5m' },
        { type: 'FrequentServiceRestart', status: 'True', timeout: '0s' },
      ],
      remediation: { restartServiceTimeout: '30s', rebootstrapTimeout: '3m', rebootTimeout: '3m' },
    },
  });
  const [sshSim] = world.fleet.hosts;
  await createWindowsHosts(kc, namespace, world.fleet.hosts, { pool: 'web' });
  await labelHosts(kc, namespace, { pool: 'web' });
  const sshHostName = sshSim!.name.toLowerCase();

  // The join command, printed by the CLI from the operator's winfleet-join and the artifact.
  const made = await waitFor(
    async () => {
      const r = await runWinfleet([
        'join-command',
        '--kubeconfig',
        world.cluster.kubeconfigPath,
        '--pool',
        'web',
        '--format',
        'aws',
      ]);
      return r.code === 0 ? r : undefined;
    },
    {
      description: 'join-command once winfleet-join is published',
      timeoutMs: 120_000,
      intervalMs: 2000,
    },
  );
  const pullHosts = await startUserDataHosts({
    count: 1,
    names: ['web-1'],
    baseAddress: nextBaseAddress(),
    userData: made.stdout,
    countSshAttempts: true,
    joinTuning: {
      discoveryBackoff: { initialDelayMs: 500, maxDelayMs: 2000, maxElapsedMs: 120_000 },
      payloadBackoff: { initialDelayMs: 200, maxDelayMs: 400 },
    },
  });
  t.after(() => pullHosts.stop());
  const pull = pullHosts.hosts[0] as UserDataHost;

  const hostNamed = async (name: string) =>
    (await listWindowsHosts(kc, namespace)).find((h) => h.metadata.name === name);
  const bothReadyOn = (version: string) =>
    waitFor(
      async () => {
        const hosts = await listWindowsHosts(kc, namespace);
        return hosts.length === 2 &&
          hosts.every((h) => hostReady(h) && h.status?.servicesVersion === version)
          ? hosts
          : undefined;
      },
      { description: `both hosts Ready on ${version}`, timeoutMs: 300_000, intervalMs: 1000 },
    );
  const eventsOf = async (name: string, reason: string) =>
    (
      await core.listNamespacedEvent({
        namespace,
        fieldSelector: `involvedObject.name=${name},reason=${reason}`,
      })
    ).items;

  await t.test(
    'joined: Ready in its pool, with its identity and its certificates approved',
    async () => {
      const result = await pull.userData.done;
      assert.equal(result.exitCode, 0, result.output);
      const hosts = await bothReadyOn(world.payload.version);
      const host = hosts.find((h) => h.metadata.name === 'web-1')!;
      assert.equal(host.spec.mode, 'Pull');
      assert.equal(host.status?.nodeName, 'web-1');
      assert.deepEqual(host.metadata.finalizers, ['winfleet.io/deconfigure']);
      assert.equal(host.status?.windowsBuild, pull.build);
      assert.match(host.status?.windowsVersion ?? '', /^10\.0\.20348\.\d+$/);
      // Its node IP only: the Hostname its Node reported is never pinned (issue 33); the node
      // name is allowed anyway.
      assert.deepEqual(host.status?.servingAddresses, [pull.address]);
      const node = await core.readNode({ name: 'web-1' });
      assert.equal(node.metadata?.labels?.[poolNodeLabel], 'web');
      assert.equal(node.metadata?.annotations?.[hostAnnotation], hostIdentity(host));
      // The kubelet's serving certificate and kube-proxy's client certificate, by the usual rules.
      const certificates = kc.makeApiClient(k8s.CertificatesV1Api);
      const approved = await waitFor(
        async () => {
          const mine = (await certificates.listCertificateSigningRequest()).items.filter(
            (c) => c.spec.username === 'system:node:web-1',
          );
          const ok = (signer: string) =>
            mine.some(
              (c) =>
                c.spec.signerName === signer &&
                c.status?.conditions?.some((d) => d.type === 'Approved') &&
                c.status?.certificate,
            );
          return ok('kubernetes.io/kubelet-serving') && ok('kubernetes.io/kube-apiserver-client')
            ? mine
            : undefined;
        },
        { description: 'web-1’s serving and kube-proxy certificates', timeoutMs: 120_000 },
      );
      assert.ok(
        approved.every((c) => !c.status?.conditions?.some((d) => d.type === 'Denied')),
        'nothing of web-1’s denied',
      );
      assert.equal(pull.sshAttempts(), 0, 'no SSH connection to the Pull host');
    },
  );

  await t.test(
    'upgraded: a new payload pushed to the registry rolls through the pool, the Pull host pulling it',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'winfleet-payload-v2-'));
      // An older kubelet patch release (within the skew policy): every binary changes.
      const next = await writeStandInPayload(dir, {
        kubernetesVersion: 'v1.36.4',
        version: '1.36.4-wf.2',
      });
      const v2 = await pushTestPayloadArtifact(registry.url, repository, dir, next);
      const sampler = sampleRollout(kc, {
        nodeNames: () => ['web-1', sshHostName],
        intervalMs: 200,
      });
      // The new payload is the operator's: it is redeployed with the new digest.
      await operator.stop();
      operator = await operatorFor(v2.digest);
      await bothReadyOn(next.version);
      const samples = await sampler.stop();
      const worst = Math.max(...samples.map((s) => s.unavailable.length));
      t.diagnostic(`${samples.length} samples; at most ${worst} node(s) unavailable at once`);
      assert.ok(
        samples.some((s) => s.unavailable.includes('web-1')),
        'web-1 took its turn',
      );
      assert.ok(
        samples.some((s) => s.unavailable.includes(sshHostName)),
        'so did the SSH host',
      );
      assert.ok(worst <= 1, `maxUnavailable 1: at most one node down at a time (saw ${worst})`);
      const node = await core.readNode({ name: 'web-1' });
      assert.equal(node.metadata?.annotations?.[servicesVersionAnnotation], next.version);
      assert.equal(node.status?.nodeInfo?.kubeletVersion, 'v1.36.4', 'the pulled kubelet runs');
      const hostOS = pull.hostOS();
      assert.match((await hostOS.readFile('C:\\k\\kubelet.exe'))!.toString(), /v1\.36\.4/);
      assert.match(
        (await hostOS.readFile('C:\\k\\winfleet\\winfleet-agent.exe'))!.toString(),
        /1\.36\.4-wf\.2/,
        'the agent pulled its own new executable',
      );
      assert.ok((await eventsOf('web-1', EventReason.Upgrading)).length > 0);
      assert.equal(pull.sshAttempts(), 0, 'no SSH connection to the Pull host');
    },
  );

  await t.test('rebooted: a reboot request rolls through the Pull host, by its agent', async () => {
    const bootBefore = pull.machine.bootId;
    const nodeBootBefore = (await core.readNode({ name: 'web-1' })).status?.nodeInfo?.bootID;
    const requested = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await custom.patchNamespacedCustomObject(
      {
        group: 'winfleet.io',
        version: 'v1alpha1',
        namespace,
        plural: 'windowshosts',
        name: 'web-1',
        body: { metadata: { annotations: { [rebootRequestedAnnotation]: requested } } },
      },
      mergePatch,
    );
    const rebooted = await waitFor(
      async () => {
        const h = await hostNamed('web-1');
        const last = h?.status?.rollout?.lastRebootAt;
        return last && !h?.status?.rollout?.current && hostReady(h) ? h : undefined;
      },
      { description: 'web-1 rebooted and Ready again', timeoutMs: 240_000, intervalMs: 1000 },
    );
    assert.notEqual(pull.machine.bootId, bootBefore, 'the machine rebooted');
    const node = await core.readNode({ name: 'web-1' });
    assert.notEqual(node.status?.nodeInfo?.bootID, nodeBootBefore);
    assert.notEqual(node.spec?.unschedulable, true, 'uncordoned');
    assert.ok(rebooted.status?.rollout?.lastRebootAt);
    assert.equal(pull.sshAttempts(), 0, 'no SSH connection to the Pull host');
  });

  await t.test(
    'attacker: web-1’s node credentials cannot pass its Node off as another Pull host’s, nor ask another node to deconfigure',
    async () => {
      const nodeKc = await nodeKubeConfig(pull.hostOS());
      assert.ok(nodeKc, 'web-1’s own kubeconfig');
      const asNode = nodeKc.makeApiClient(k8s.CoreV1Api);
      // Another node's deconfigure, or a report on it: NodeRestriction refuses both.
      for (const annotation of [
        deconfigureRequestAnnotation,
        deconfiguredAnnotation,
        hostAnnotation,
      ]) {
        await assert.rejects(
          asNode.patchNode(
            { name: sshHostName, body: { metadata: { annotations: { [annotation]: 'x' } } } },
            mergePatch,
          ),
          (error: unknown) => httpStatus(error) === 403,
          `${annotation} on ${sshHostName}`,
        );
      }
      // A victim: another Pull host (its machine never came). web-1 puts its identity on itself.
      const victim = (await k8s.KubernetesObjectApi.makeApiClient(kc).create({
        apiVersion,
        kind: 'WindowsHost',
        metadata: { name: 'web-9', namespace, labels: { pool: 'web' } },
        spec: { mode: 'Pull', pool: 'web', nodeName: 'web-9' },
      } as WindowsHost)) as WindowsHost;
      await asNode.patchNode(
        {
          name: 'web-1',
          body: { metadata: { annotations: { [hostAnnotation]: hostIdentity(victim) } } },
        },
        mergePatch,
      );
      const refused = await waitFor(
        async () => {
          const h = await hostNamed('web-1');
          const c = h?.status?.conditions?.find((x) => x.type === 'Degraded');
          return c?.reason === ConditionReason.NodeNotOwned ? c : undefined;
        },
        { description: 'web-1 refusing its Node with another identity', timeoutMs: 60_000 },
      );
      assert.match(refused.message, /kubectl annotate node web-1 winfleet\.io\/host=/);
      const web9 = await readWindowsHost(kc, namespace, 'web-9');
      assert.equal(web9.status?.nodeName, undefined, 'web-9 did not take Node web-1');
      assert.ok(
        web9.status?.conditions?.some((c) => c.reason === ConditionReason.WaitingForNode),
        'web-9 still waits for its own Node',
      );
      const node = await core.readNode({ name: 'web-1' });
      assert.notEqual(node.spec?.unschedulable, true, 'nothing done to Node web-1 for web-9');
      // The administrator puts web-1's identity back, as the message says; web-9 goes.
      await core.patchNode(
        {
          name: 'web-1',
          body: {
            metadata: {
              annotations: { [hostAnnotation]: hostIdentity((await hostNamed('web-1'))!) },
            },
          },
        },
        mergePatch,
      );
      await k8s.KubernetesObjectApi.makeApiClient(kc).delete(victim);
      await waitFor(async () => hostReady((await hostNamed('web-1'))!), {
        description: 'web-1 Ready again',
        timeoutMs: 60_000,
      });
      assert.equal(pull.sshAttempts(), 0, 'no SSH connection to the Pull host');
    },
  );

  await t.test(
    'remediation: a kubelet that keeps failing skips the SSH rung, saying why, and goes on to Reboot',
    async () => {
      await pull.faults.crashLoop('kubelet');
      const skipped = await waitFor(
        async () => {
          const h = await hostNamed('web-1');
          return h?.status?.remediation?.lastActions?.find(
            (a) => a.rung === 'Rebootstrap' && a.result === 'Skipped',
          );
        },
        { description: 'Rebootstrap skipped on web-1', timeoutMs: 240_000, intervalMs: 1000 },
      );
      assert.match(
        skipped.message,
        /rung Rebootstrap skipped: the host is in Pull mode .* never reaches it over SSH.*; next: Reboot$/,
      );
      // The Event is recorded beside the status write, not before it: waited for.
      const [event] = await waitFor(
        async () => {
          const found = await eventsOf('web-1', EventReason.RemediationRungSkipped);
          return found.length > 0 ? found : undefined;
        },
        { description: 'the RemediationRungSkipped Event', timeoutMs: 30_000 },
      );
      assert.equal(event?.message, skipped.message);
      assert.equal(
        (await eventsOf('web-1', EventReason.RemediationRebootstrap)).length,
        0,
        'no re-bootstrap was asked for',
      );
      const ladder = (await hostNamed('web-1'))!.status!.remediation!.current;
      assert.equal(ladder?.rung, 'Reboot');
      // Put right by hand; the repair reboot asked for goes through the rollout, by the agent.
      pull.faults.clear();
      const healthy = await waitFor(
        async () => {
          const h = await hostNamed('web-1');
          const r = h?.status?.remediation;
          return h &&
            !r?.current &&
            r?.lastActions?.some((a) => a.rung === 'Reboot') &&
            hostReady(h)
            ? h
            : undefined;
        },
        { description: 'web-1 healthy again', timeoutMs: 400_000, intervalMs: 1000 },
      );
      t.diagnostic(
        `web-1 remediation: ${healthy.status!.remediation!.lastActions!.map((a) => `${a.rung}:${a.result}`).join(', ')}`,
      );
      assert.equal(pull.sshAttempts(), 0, 'no SSH connection to the Pull host');
    },
  );

  await t.test(
    'removed: drained, the agent deconfigures the host, the Node goes; a forged report changes nothing',
    async () => {
      const snapshotBefore = await pull.machine.snapshot();
      assert.ok(snapshotBefore.services.length >= 5, snapshotBefore.services.join(', '));
      // web-1's own credentials write a report for a request that is not the removal's.
      const nodeKc = (await nodeKubeConfig(pull.hostOS()))!;
      await nodeKc.makeApiClient(k8s.CoreV1Api).patchNode(
        {
          name: 'web-1',
          body: {
            metadata: {
              annotations: {
                [deconfiguredAnnotation]: JSON.stringify({
                  request: 'forged',
                  removedServices: [],
                  left: [],
                }),
              },
            },
          },
        },
        mergePatch,
      );
      const host = (await hostNamed('web-1'))!;
      await k8s.KubernetesObjectApi.makeApiClient(kc).delete(host);
      await waitFor(async () => (await hostNamed('web-1')) === undefined, {
        description: 'the WindowsHost gone',
        timeoutMs: 240_000,
        intervalMs: 1000,
      });
      await assert.rejects(core.readNode({ name: 'web-1' }), (e: unknown) => isNotFound(e));
      const [deconfigured] = await eventsOf('web-1', EventReason.Deconfigured);
      assert.match(
        deconfigured?.message ?? '',
        /^The agent on Node web-1 removed winfleet's services \(.*kubelet.*winfleet-agent\).* at the next boot .*winfleet-agent\.exe/,
      );
      assert.ok((await eventsOf('web-1', EventReason.DeconfigureRequested)).length > 0);
      // The agent went with its service; what it ran from goes at the next boot.
      await waitFor(async () => pull.machine.scm.names().length === 0, {
        description: 'every service of winfleet’s gone',
        timeoutMs: 30_000,
      });
      assert.deepEqual(pull.machine.hns.list(), []);
      await pull.machine.reboot();
      const after = await pull.machine.snapshot();
      assert.deepEqual(
        after.files.filter((f) => f.toLowerCase().startsWith('c:\\k')),
        [],
        'C:\\k is gone',
      );
      assert.deepEqual(after.services, []);
      assert.deepEqual(
        after.env,
        defaultMachineEnvironment,
        'no environment variables of winfleet’s',
      );
      assert.ok(
        !after.firewallRules.includes(kubeletFirewallRule.name),
        after.firewallRules.join(),
      );
      assert.equal(pull.sshAttempts(), 0, 'no SSH connection to the Pull host, first to last');
      assert.ok(
        !logLines.some((l) => /WF_INVARIANT|about to be reached over SSH/.test(l)),
        'the operator never tried to reach a Pull host over SSH',
      );
      // The SSH host beside it is untouched and Ready.
      assert.ok(hostReady((await hostNamed(sshHostName))!));
    },
  );
});
