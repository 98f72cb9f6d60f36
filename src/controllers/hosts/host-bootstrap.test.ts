import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectedSimHost } from '../../../sim/testkit/ssh-host.ts';
import {
  offlineInformer,
  offlineNodeInformer,
  syntheticNode,
} from '../../../sim/testkit/synthetic-nodes.ts';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import { type WindowsHost, windowsHostResource } from '../../api/windows-host.ts';
import { errorCode } from '../../errors/catalog.ts';
import { HostStatus } from '../../fleet/host-status.ts';
import type { HostFacts } from '../../hostaccess/remote-scripts.ts';
import type { LoadedPayload } from '../../payload/loaded-payload.ts';
import { acceptFacts, refuseTakenName } from './host-bootstrap.ts';
import type { JoinContext } from './join-context.ts';

function windowsHost(name: string, status?: WindowsHost['status'], nodeName?: string): WindowsHost {
  return {
    apiVersion: windowsHostResource.apiVersion,
    kind: 'WindowsHost',
    metadata: {
      name,
      namespace: 'win',
      uid: `uid-${name}`,
      resourceVersion: '1',
      generation: 1,
      creationTimestamp: new Date('2026-01-01T00:00:00Z'),
    },
    spec: {
      address: '127.0.0.186',
      username: 'Administrator',
      sshKeySecretRef: { name: 'key' },
      ...(nodeName ? { nodeName } : {}),
    },
    ...(status ? { status } : {}),
  } as WindowsHost;
}

const payload = { totalBytes: 1024 } as LoadedPayload;

/** What a simulated Windows Server host reports, as the host controller reads it. */
async function simulatedFacts(t: { after(fn: () => unknown): void }): Promise<HostFacts> {
  const { remote } = await connectedSimHost(t, { address: '127.0.0.186' });
  return remote.facts();
}

test('a host older than Windows Server 2019 is WF_HOST_UNSUPPORTED and Degraded', async (t) => {
  const facts = await simulatedFacts(t);
  const host = windowsHost('old');
  assert.equal(typeof acceptFacts(host, new HostStatus(host), facts, payload), 'string');
  const hs = new HostStatus(host);
  const server2016 = {
    ...facts,
    osVersion: { ...facts.osVersion, build: 14393, productName: 'Windows Server 2016 Datacenter' },
  };
  assert.throws(
    () => acceptFacts(host, hs, server2016, payload),
    (error: Error) => {
      assert.equal(errorCode(error), 'WF_HOST_UNSUPPORTED');
      assert.match(error.message, /build 14393\) is older than Windows Server 2019 \(17763\)/);
      return true;
    },
  );
  assert.equal(hs.condition(ConditionType.Degraded)?.reason, ConditionReason.UnsupportedWindows);
});

test('a host that now has another name than the node it joined as is WF_HOST_NODE_NAME_CHANGED', async (t) => {
  const facts = await simulatedFacts(t);
  const host = windowsHost('renamed', { nodeName: 'win-before' });
  const hs = new HostStatus(host);
  assert.throws(() => acceptFacts(host, hs, { ...facts, hostname: 'WIN-AFTER' }, payload), {
    code: 'WF_HOST_NODE_NAME_CHANGED',
    message: /calls itself win-after, but it joined as win-before; set spec\.nodeName: win-before/,
  });
  assert.equal(hs.condition(ConditionType.Degraded)?.reason, ConditionReason.NodeNameChanged);
});

test('a node name another host holds is WF_HOST_NODE_NAME_TAKEN; a Node not this host’s is WF_HOST_NODE_NOT_OWNED', async (t) => {
  const facts = await simulatedFacts(t);
  const hosts = offlineInformer<WindowsHost>(windowsHostResource);
  const holder = windowsHost('holder', { nodeName: 'win-1' }, 'win-1');
  const attacker = {
    ...windowsHost('attacker', undefined, 'win-1'),
    metadata: {
      ...holder.metadata,
      name: 'attacker',
      uid: 'uid-attacker',
      creationTimestamp: new Date('2026-02-01T00:00:00Z'),
    },
  } as WindowsHost;
  hosts.replace([holder, attacker]);
  const nodes = offlineNodeInformer();
  nodes.replace([syntheticNode('linux-1', { os: 'linux' })]);
  const ctx = { hosts, nodes } as unknown as JoinContext;

  const taken = new HostStatus(attacker);
  assert.throws(() => refuseTakenName(ctx, attacker, taken, 'win-1', facts), {
    code: 'WF_HOST_NODE_NAME_TAKEN',
    message: /held by WindowsHost win\/holder/,
  });
  assert.equal(
    taken.condition(ConditionType.NodeRegistered)?.reason,
    ConditionReason.NodeNameTaken,
  );

  const notOwned = new HostStatus(attacker);
  assert.throws(() => refuseTakenName(ctx, attacker, notOwned, 'linux-1', facts), {
    code: 'WF_HOST_NODE_NOT_OWNED',
    message: /Node linux-1 exists/,
  });
  assert.equal(notOwned.status.nodeName, undefined, 'the name is never on record');
  // The holder keeps its name.
  refuseTakenName(ctx, holder, new HostStatus(holder), 'win-1', facts);
});
