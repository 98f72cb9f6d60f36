/**
 * What the pool controller believes of a Node's Windows Update report (passHost over the Node
 * cache, slimmed as the operator's is): only a report made in the Node's current boot, only in
 * the shape the operator knows, and only for the host whose identity the Node carries. A
 * forged or stale report counts for nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { nodeCacheOf, syntheticNode } from '../../sim/testkit/synthetic-nodes.ts';
import { apiVersion } from '../api/group-version.ts';
import {
  cordonedByAnnotation,
  hostAnnotation,
  hostIdentity,
  servicesVersionAnnotation,
  windowsUpdatesAnnotation,
} from '../api/node-annotations.ts';
import { prePullAnnotation, prePullConditionType, prePullRunMark } from '../api/pre-pull.ts';
import { PrePullReason } from '../api/reasons.ts';
import type { WindowsHost } from '../api/windows-host.ts';
import { formatWindowsUpdateReport } from '../api/windows-updates.ts';
import { observedPrePull, passHost } from './pool-observe.ts';

/** A WindowsHost as the API server returns it: `a` and `b` in one namespace. */
const hostNamed = (name: string, status?: WindowsHost['status']): WindowsHost => ({
  apiVersion,
  kind: 'WindowsHost',
  metadata: { name, namespace: 'pool-actions-1a2b3c', uid: `uid-${name}`, resourceVersion: '7' },
  spec: { address: '10.1.42.7', username: 'Administrator', sshKeySecretRef: { name: 'none' } },
  ...(status ? { status } : {}),
});

const nodeName = 'actions-1a2b3c';
/** As a kubelet reports it (a kwok Node has none). */
const bootId = 'b5a3a8f2-6d1c-4d8e-9a51-3c1f0e2d4b77';
const host = hostNamed('a', { nodeName });
const other = hostNamed('b');

const report = (boot: string) =>
  formatWindowsUpdateReport({
    bootId: boot,
    searchedAt: '2025-06-07T01:00:00Z',
    available: [{ kb: 'KB5040437', title: 'Cumulative Update', categories: ['Security Updates'] }],
    installed: [],
    failed: [],
    rebootPending: true,
  });

/** a's Node in its current boot, carrying `text` as the agent's report. */
function nodeWithReport(text: string): k8s.V1Node {
  const node = syntheticNode(nodeName, {
    build: '10.0.20348',
    annotations: { [hostAnnotation]: hostIdentity(host), [windowsUpdatesAnnotation]: text },
  });
  return {
    ...node,
    status: { ...node.status, nodeInfo: { bootID: bootId } as k8s.V1NodeSystemInfo },
  };
}

test('a Node’s Windows Update report: only from its own node, its current boot, and well-formed', () => {
  const seenWith = (text: string) => {
    const nodes = nodeCacheOf([nodeWithReport(text)]);
    return { nodes, seen: passHost(host, nodes, []) };
  };
  // Made in the current boot: believed (the cache keeps the boot id it is checked against).
  let { nodes, seen } = seenWith(report(bootId));
  assert.equal(nodes.get(nodeName)?.status?.nodeInfo?.bootID, bootId);
  assert.equal(seen.observed.facts.rebootPending, true);
  assert.deepEqual(
    seen.observed.facts.availableUpdates.map((u) => u.kb),
    ['KB5040437'],
  );
  // Made before a reboot (another boot id): a pending reboot from then must not ask again.
  ({ seen } = seenWith(report('0f0f0f0f-0000-4000-8000-000000000000')));
  assert.equal(seen.observed.facts.rebootPending, false);
  assert.deepEqual(seen.observed.facts.availableUpdates, []);
  // Forged shape (an extra key the operator does not know): refused whole, and told.
  ({ nodes, seen } = seenWith(report(bootId).replace('{', '{"rebootNow":true,')));
  assert.equal(seen.observed.facts.rebootPending, false);
  assert.match(seen.reportProblem ?? '', /unknown key "rebootNow"/);
  // The other host (no Node of its own) does not see this Node's report, even named by it.
  const stranger = passHost({ ...other, status: { nodeName } }, nodes, []);
  assert.equal(stranger.observed.node, undefined, 'not its node: the identity is a’s');
  assert.deepEqual(stranger.observed.facts.availableUpdates, []);
  // Nor a report a itself believes.
  ({ nodes } = seenWith(report(bootId)));
  const named = passHost({ ...other, status: { nodeName } }, nodes, []);
  assert.equal(named.observed.node, undefined);
  assert.deepEqual(named.observed.facts.availableUpdates, []);
  assert.equal(named.observed.facts.rebootPending, false);
});

test('winfleet’s cordon is the annotation with the rollout’s record, never the annotation alone', () => {
  const cordoned = (annotations: Record<string, string>) => {
    const node = syntheticNode(nodeName, {
      build: '10.0.20348',
      annotations: { [hostAnnotation]: hostIdentity(host), ...annotations },
    });
    return nodeCacheOf([{ ...node, spec: { ...node.spec, unschedulable: true } }]);
  };
  const marked = cordoned({ [cordonedByAnnotation]: 'winfleet' });
  // A node (or a patch-nodes principal) marks an admin's cordon as winfleet's: not winfleet's.
  assert.equal(passHost(host, marked, []).observed.node?.cordonedByWinfleet, false);
  // The record of the rollout's own cordon, in status, names the Node: winfleet's.
  const recorded = hostNamed('a', { nodeName, rollout: { cordoned: nodeName } });
  assert.equal(passHost(recorded, marked, []).observed.node?.cordonedByWinfleet, true);
  // The record alone, with the annotation gone (someone else's cordon now): not winfleet's.
  assert.equal(passHost(recorded, cordoned({}), []).observed.node?.cordonedByWinfleet, false);
});

test('pre-pull as the rollout sees it: nothing to pull is ended; otherwise only a run of this boot and version counts', () => {
  const node = (annotations: Record<string, string>, message?: string): k8s.V1Node => ({
    metadata: { name: 'n', annotations: { [servicesVersionAnnotation]: 'v2', ...annotations } },
    status: {
      nodeInfo: { bootID: 'boot-1' } as k8s.V1NodeSystemInfo,
      ...(message === undefined
        ? {}
        : {
            conditions: [
              {
                type: prePullConditionType,
                status: 'False',
                reason: PrePullReason.PrePulling,
                message,
              },
            ],
          }),
    },
  });
  const list = { [prePullAnnotation]: '{"images":[]}' };
  // An auto pool's Node with no image for its build carries no list: no report will come.
  assert.equal(observedPrePull(node({})), 'ended');
  assert.equal(observedPrePull(node(list)), undefined, 'a list, no run yet: wait');
  assert.equal(
    observedPrePull(node(list, `0 of 1 images done ${prePullRunMark('boot-1', 'v2')}`)),
    'pulling',
  );
  assert.equal(
    observedPrePull(node(list, `0 of 1 images done ${prePullRunMark('boot-1', 'v1')}`)),
    undefined,
    'a run of the version before does not count',
  );
});
