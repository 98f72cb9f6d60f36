import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectedSimHost } from '../../../sim/testkit/ssh-host.ts';
import { offlineNodeInformer, syntheticNode } from '../../../sim/testkit/synthetic-nodes.ts';
import { hostAnnotation, hostIdentity } from '../../api/node-annotations.ts';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import { rejoinAnnotation, type WindowsHost, windowsHostResource } from '../../api/windows-host.ts';
import { errorCode } from '../../errors/catalog.ts';
import { HostStatus } from '../../fleet/host-status.ts';
import { hostPaths } from '../../servicesmanifest/host-paths.ts';
import type { HostControllerDeps } from './host-deps.ts';
import { clearStaleNode } from './rebuilt-host.ts';

const host = {
  apiVersion: windowsHostResource.apiVersion,
  kind: 'WindowsHost',
  metadata: { name: 'rebuilt', namespace: 'win', uid: 'uid-rebuilt', generation: 1 },
  spec: { address: '127.0.0.187', username: 'Administrator', sshKeySecretRef: { name: 'key' } },
  status: { nodeName: 'win-1' },
} as WindowsHost;

test('a host whose Node exists but which lost its node credentials is WF_HOST_REBUILT, giving the rejoin command', async (t) => {
  const { host: simHost, remote } = await connectedSimHost(t, { address: '127.0.0.187' });
  const nodes = offlineNodeInformer();
  const node = syntheticNode('win-1');
  node.metadata!.annotations = {
    ...node.metadata!.annotations,
    [hostAnnotation]: hostIdentity(host),
  };
  nodes.replace([node]);
  const deps = { nodes } as unknown as HostControllerDeps;

  const hs = new HostStatus(host);
  const error = await clearStaleNode(deps, host, hs, remote, 'win-1').then(
    () => assert.fail('the rebuilt host was not refused'),
    (e: unknown) => e,
  );
  assert.equal(errorCode(error), 'WF_HOST_REBUILT');
  assert.match(
    (error as Error).message,
    new RegExp(
      `has no credentials for it .*kubectl annotate windowshost -n win rebuilt ${rejoinAnnotation}=true`,
    ),
  );
  assert.equal(
    hs.condition(ConditionType.NodeRegistered)?.reason,
    ConditionReason.NodeExistsRebuilt,
  );

  // With its node credentials the host was not rebuilt: nothing is refused or deleted.
  await simHost.machine.fs.writeFileAtomic(hostPaths.kubeconfig, 'apiVersion: v1\nkind: Config\n');
  await clearStaleNode(deps, host, new HostStatus(host), remote, 'win-1');
  // Nor is a Node that is not this host's (another check refuses that name).
  nodes.replace([syntheticNode('win-1')]);
  await simHost.machine.fs.remove(hostPaths.kubeconfig);
  await clearStaleNode(deps, host, new HostStatus(host), remote, 'win-1');
});
