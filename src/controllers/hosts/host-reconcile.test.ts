/**
 * reconcileHost driven over a stated cache (offline informers filled with the WindowsHosts and
 * Nodes of each case), with no watches: what it decides is read from the function fields of its
 * state, bound to recorders. The join pass itself runs for real over a kubeconfig nothing
 * listens on, so a pass that tried to reach a host (its SSH key Secret, the host) would fail.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  nodeCacheOf,
  offlineInformer,
  syntheticNode,
  unusedKubeConfig,
} from '../../../sim/testkit/synthetic-nodes.ts';
import { hostAnnotation } from '../../api/node-annotations.ts';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import {
  hostFinalizer,
  type WindowsHost,
  type WindowsHostStatus,
  windowsHostResource,
} from '../../api/windows-host.ts';
import { skipRemediationAnnotation } from '../../api/windows-node-pool.ts';
import { parseConfig } from '../../config/winfleet-config.ts';
import { everythingKey } from '../../controller-runtime/controller.ts';
import { silentLogger } from '../../log/logger.ts';
import type { LoadedPayload } from '../../payload/loaded-payload.ts';
import { type HostReconcileState, reconcileHost } from './host-controller.ts';
import { reconcileJoin } from './host-join.ts';
import type { JoinContext } from './join-context.ts';

type HostSpec = Partial<WindowsHost['spec']>;

function host(
  name: string,
  spec: HostSpec = {},
  extra: { status?: WindowsHostStatus; annotations?: Record<string, string> } = {},
): WindowsHost {
  return {
    apiVersion: windowsHostResource.apiVersion,
    kind: 'WindowsHost',
    metadata: {
      name,
      namespace: 'win',
      resourceVersion: '1',
      uid: `uid-${name}`,
      generation: 1,
      finalizers: [hostFinalizer],
      ...(extra.annotations ? { annotations: extra.annotations } : {}),
    },
    spec: { address: '127.0.0.1', username: 'admin', sshKeySecretRef: { name: 'key' }, ...spec },
    ...(extra.status ? { status: extra.status } : {}),
  } as WindowsHost;
}

/** The cache of one case: these hosts and Nodes. */
function cacheOf(hosts: WindowsHost[], nodes: k8s.V1Node[] = []) {
  const hostCache = offlineInformer<WindowsHost>(windowsHostResource);
  hostCache.replace(hosts);
  return { hosts: hostCache, nodes: nodeCacheOf(nodes) };
}

/** A state over `cache` whose every action is recorded; `join` runs the real join pass. */
function recordingState(cache: ReturnType<typeof cacheOf>) {
  const did: string[] = [];
  const statuses: WindowsHostStatus[] = [];
  const events: { reason: string; message: string }[] = [];
  const ctx: JoinContext = {
    kc: unusedKubeConfig(),
    operatorNamespace: 'winfleet-system',
    config: () => parseConfig(''),
    hosts: cache.hosts,
    nodes: cache.nodes,
    payload: async () =>
      ({
        manifest: { version: 'v1' },
        payload: { kubernetesVersion: 'v1.31.0' },
      }) as unknown as LoadedPayload,
    cluster: { apiServer: 'https://127.0.0.1:6443', caCertificate: '' },
    events: { record: (_host, _type, reason, message) => events.push({ reason, message }) },
    log: silentLogger,
    publish: async () => 'unused',
    apiServerVersion: async () => 'v1.31.0',
    writeStatus: async (_host, status) => {
      statuses.push(structuredClone(status));
    },
  };
  const state: HostReconcileState = {
    hosts: cache.hosts,
    enqueue: (key) => did.push(`enqueue ${key}`),
    addFinalizer: async (h) => {
      did.push(`finalizer ${h.metadata.name}`);
    },
    remove: async (h, pull) => {
      did.push(`remove ${h.metadata.name}${pull ? ' through its agent' : ' over SSH'}`);
      return {};
    },
    join: (h) => {
      did.push(`join ${h.metadata.name}`);
      return reconcileJoin(ctx, h);
    },
    pull: async (h) => {
      did.push(`pull ${h.metadata.name}`);
      return {};
    },
  };
  return { state, did, statuses, events };
}

const deleting = (h: WindowsHost): WindowsHost => ({
  ...h,
  metadata: { ...h.metadata, deletionTimestamp: new Date(0) as never },
});

test('the everything key queues every host in the cache, and does nothing else', async () => {
  const { state, did } = recordingState(cacheOf([host('a'), host('b', { mode: 'Pull' })]));
  assert.equal(await reconcileHost(state, everythingKey), undefined);
  assert.deepEqual(did.sort(), ['enqueue win/a', 'enqueue win/b']);
});

test('a host no longer in the cache is left alone', async () => {
  const { state, did } = recordingState(cacheOf([host('a')]));
  assert.equal(await reconcileHost(state, 'win/gone'), undefined);
  assert.deepEqual(did, []);
});

test('a host being deleted goes to removal: over SSH, or through its agent for a Pull host', async () => {
  const { state, did } = recordingState(
    cacheOf([deleting(host('ssh')), deleting(host('agent', { mode: 'Pull' }))]),
  );
  await reconcileHost(state, 'win/ssh');
  await reconcileHost(state, 'win/agent');
  assert.deepEqual(did, ['remove ssh over SSH', 'remove agent through its agent']);
});

test('a host without the finalizer only gets it: the update event brings it back', async () => {
  const bare = host('new');
  bare.metadata.finalizers = ['someone.else/keep'];
  const { state, did } = recordingState(cacheOf([bare]));
  assert.equal(await reconcileHost(state, 'win/new'), undefined);
  assert.deepEqual(did, ['finalizer new']);
});

test('a Pull host is run through its agent, never the SSH join', async () => {
  const { state, did } = recordingState(cacheOf([host('pulled', { mode: 'Pull' })]));
  await reconcileHost(state, 'win/pulled');
  assert.deepEqual(did, ['pull pulled']);
});

test('a host claiming a node name another host holds is refused NodeNameTaken, and nothing is connected', async () => {
  const holder = host('holder', {}, { status: { nodeName: 'win-1' } });
  const node = syntheticNode('win-1', {
    annotations: { [hostAnnotation]: 'win/holder/uid-holder' },
  });
  const { state, did, statuses, events } = recordingState(
    cacheOf([holder, host('claimant', { nodeName: 'win-1' })], [node]),
  );
  // Over this kubeconfig any connection (the SSH key Secret's read) fails: the pass resolving
  // shows none was tried.
  const result = await reconcileHost(state, 'win/claimant');
  assert.ok(result?.requeueAfterMs, 'looked at again later: the holder may go');
  assert.deepEqual(did, ['join claimant']);
  const written = statuses.at(-1);
  const ready = written?.conditions?.find((c) => c.type === ConditionType.Ready);
  assert.equal(ready?.reason, ConditionReason.NodeNameTaken);
  assert.equal(written?.nodeName, undefined);
  assert.deepEqual(
    events.map((e) => e.reason),
    [ConditionReason.NodeNameTaken],
  );
});

/** A joined host whose Node has been NotReady far longer than the join timeout. */
function longNotReady(annotations?: Record<string, string>) {
  const joined = host(
    'joined',
    {},
    {
      status: { nodeName: 'win-3', servicesVersion: 'v1', hostKeyFingerprint: 'SHA256:x' },
      ...(annotations ? { annotations } : {}),
    },
  );
  const node = syntheticNode('win-3', {
    ready: false,
    annotations: { [hostAnnotation]: 'win/joined/uid-joined' },
  });
  node.status!.conditions![0]!.lastTransitionTime = new Date('2020-01-01T00:00:00Z');
  return cacheOf([joined], [node]);
}

test('a joined host marked skip-remediation is left alone while its Node is NotReady', async () => {
  const { state, statuses } = recordingState(
    longNotReady({ [skipRemediationAnnotation]: 'maintenance' }),
  );
  const result = await reconcileHost(state, 'win/joined');
  assert.ok(result?.requeueAfterMs);
  const ready = statuses.at(-1)?.conditions?.find((c) => c.type === ConditionType.Ready);
  assert.equal(ready?.reason, ConditionReason.NodeNotReady);
});

test('the same host without skip-remediation is configured again (it reaches for the host)', async () => {
  const { state, statuses } = recordingState(longNotReady());
  await assert.rejects(reconcileHost(state, 'win/joined'));
  const ready = statuses.at(-1)?.conditions?.find((c) => c.type === ConditionType.Ready);
  assert.notEqual(ready?.reason, ConditionReason.NodeNotReady);
});
