/**
 * Pull-mode hosts that do not answer (issue 15, section D), against a real control plane with
 * the operator in-process and short join and removal timeouts:
 * - a Pull host whose Node never registers is reported (NodeNeverRegistered: conditions, one
 *   Warning Event, the command that removes it) and nothing is deleted; removed, it goes at
 *   once, with an Event saying the machine was not deconfigured;
 * - a pull-joined host whose machine is switched off: its removal asks the agent, which never
 *   answers, so Ready says RemovalBlocked with the skip-deconfigure annotation; with it, the
 *   Node and the WindowsHost go.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { startUserDataHosts } from '../../../sim/hosts/userdata-hosts.ts';
import { startTestRegistry } from '../../../sim/registry/registry-process.ts';
import { nextBaseAddress } from '../../../sim/testkit/loopback-range.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import { pushTestPayloadArtifact } from '../../../sim/testkit/payload-artifact.ts';
import { createPool } from '../../../sim/testkit/pools.ts';
import { freshCluster } from '../../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import { hostReady, listWindowsHosts } from '../../../sim/testkit/windows-hosts.ts';
import { apiVersion } from '../../api/group-version.ts';
import { deconfigureRequestAnnotation } from '../../api/node-annotations.ts';
import { ConditionReason, EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { isNotFound } from '../../kube/client.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { skipDeconfigureAnnotation } from './host-removal.ts';

const cli = join(import.meta.dirname, '..', '..', 'cli', 'main.ts');

function joinCommand(kubeconfig: string): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env.KUBECONFIG;
    const child = spawn(
      process.execPath,
      [cli, 'join-command', '--kubeconfig', kubeconfig, '--pool', 'web', '--format', 'aws'],
      { env, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

test('Pull hosts that never answer: a Node that never registers is reported, not deleted; an agent that never reports blocks its removal until skip-deconfigure', {
  timeout: 600_000,
}, async (t) => {
  const cluster = await freshCluster(t);
  const { kc } = cluster;
  const namespace = 'winfleet-system';
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const registry = await startTestRegistry();
  t.after(() => registry.stop());
  const payloadDir = await mkdtemp(join(tmpdir(), 'winfleet-payload-'));
  const artifact = await pushTestPayloadArtifact(
    registry.url,
    'winfleet/payload',
    payloadDir,
    await writeStandInPayload(payloadDir),
  );
  const operator = await startTestOperator(kc, {
    namespace,
    config: {
      hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 10, removalTimeoutSeconds: 10 },
    },
    payloadImage: {
      reference: `${registry.host}/winfleet/payload@${artifact.digest}`,
      plainHttp: true,
    },
  });
  t.after(() => operator.stop());
  await createPool(kc, namespace, 'web', {
    selector: { matchLabels: { pool: 'web' } },
    join: { nodeNamePattern: '^web-[0-9]+$' },
  });
  const hostNamed = async (name: string) =>
    (await listWindowsHosts(kc, namespace)).find((h) => h.metadata.name === name);
  const eventsOf = async (name: string, reason: string) =>
    (
      await core.listNamespacedEvent({
        namespace,
        fieldSelector: `involvedObject.name=${name},reason=${reason}`,
      })
    ).items;

  await t.test(
    'a Node that never registers: reported with the command that removes it, nothing deleted',
    async () => {
      const lost = (await objects.create({
        apiVersion,
        kind: 'WindowsHost',
        metadata: { name: 'web-9', namespace, labels: { pool: 'web' } },
        spec: { mode: 'Pull', pool: 'web', nodeName: 'web-9' },
      } as WindowsHost)) as WindowsHost;
      const degraded = await waitFor(
        async () => {
          const c = (await hostNamed('web-9'))?.status?.conditions?.find(
            (x) => x.type === 'Degraded',
          );
          return c?.reason === ConditionReason.NodeNeverRegistered ? c : undefined;
        },
        { description: 'web-9 NodeNeverRegistered', timeoutMs: 60_000 },
      );
      assert.equal(degraded.status, 'True');
      assert.match(
        degraded.message,
        /^Node web-9 has not registered in \d+s .*winfleet deletes nothing .*kubectl delete windowshost web-9 -n /,
      );
      const h = (await hostNamed('web-9'))!;
      for (const type of ['NodeRegistered', 'Ready']) {
        assert.equal(
          h.status?.conditions?.find((c) => c.type === type)?.reason,
          ConditionReason.NodeNeverRegistered,
        );
      }
      assert.equal((await eventsOf('web-9', EventReason.NodeNeverRegistered)).length, 1);
      // Removed, it goes at once: no Node, no agent to ask; an Event says what may be left.
      await objects.delete(lost);
      await waitFor(async () => (await hostNamed('web-9')) === undefined, {
        description: 'web-9 gone',
        timeoutMs: 30_000,
      });
      const events = await eventsOf('web-9', EventReason.NodeNeverRegistered);
      assert.ok(
        events.some((e) =>
          /^Removed without deconfiguring the machine: Node web-9 never registered/.test(
            e.message ?? '',
          ),
        ),
        events.map((e) => e.message).join('\n'),
      );
    },
  );

  await t.test(
    'an agent that never answers: RemovalBlocked, then skip-deconfigure finishes the removal',
    async () => {
      const made = await waitFor(
        async () => {
          const r = await joinCommand(cluster.kubeconfigPath);
          return r.code === 0 ? r : undefined;
        },
        { description: 'join-command', timeoutMs: 120_000, intervalMs: 2000 },
      );
      const pulled = await startUserDataHosts({
        count: 1,
        names: ['web-1'],
        baseAddress: nextBaseAddress(),
        userData: made.stdout,
        joinTuning: { payloadBackoff: { initialDelayMs: 200, maxDelayMs: 400 } },
      });
      t.after(() => pulled.stop());
      const machine = pulled.hosts[0]!.machine;
      const host = await waitFor(
        async () => {
          const h = await hostNamed('web-1');
          return h && hostReady(h) ? h : undefined;
        },
        { description: 'web-1 Ready', timeoutMs: 180_000, intervalMs: 1000 },
      );
      await machine.holdPowerOff('switched off for good');
      await objects.delete(host);
      const blocked = await waitFor(
        async () => {
          const c = (await hostNamed('web-1'))?.status?.conditions?.find((x) => x.type === 'Ready');
          return c?.reason === ConditionReason.RemovalBlocked ? c : undefined;
        },
        { description: 'web-1 RemovalBlocked', timeoutMs: 120_000, intervalMs: 500 },
      );
      assert.match(
        blocked.message,
        /^Removal has not heard from the agent on Node web-1 in \d+s: .*winfleet\.io\/skip-deconfigure=true$/,
      );
      const node = await core.readNode({ name: 'web-1' });
      assert.equal(node.metadata?.annotations?.[deconfigureRequestAnnotation], host.metadata.uid);
      assert.equal(node.spec?.unschedulable, true, 'cordoned');
      await objects.patch(
        {
          apiVersion,
          kind: 'WindowsHost',
          metadata: {
            name: 'web-1',
            namespace,
            annotations: { [skipDeconfigureAnnotation]: 'true' },
          },
        },
        undefined,
        undefined,
        undefined,
        undefined,
        k8s.PatchStrategy.MergePatch,
      );
      await waitFor(async () => (await hostNamed('web-1')) === undefined, {
        description: 'web-1 gone',
        timeoutMs: 30_000,
      });
      await assert.rejects(core.readNode({ name: 'web-1' }), (e: unknown) => isNotFound(e));
    },
  );
});
