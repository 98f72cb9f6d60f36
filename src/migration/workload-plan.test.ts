import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  type ImageLookup,
  planWorkload,
  type WorkloadObjects,
  windowsWorkloads,
} from './workload-plan.ts';

const v2019 = '10.0.17763.6054';
const v2022 = '10.0.20348.2582';
const target = { build: '10.0.20348', name: '2022' };
const runtimeClasses = (name: string) =>
  ({
    'windows-2019': {
      'kubernetes.io/os': 'windows',
      'node.kubernetes.io/windows-build': '10.0.17763',
    },
    'windows-2022': {
      'kubernetes.io/os': 'windows',
      'node.kubernetes.io/windows-build': '10.0.20348',
    },
  })[name];

const windowsSpec = (images: string[], extra: Partial<k8s.V1PodSpec> = {}): k8s.V1PodSpec => ({
  nodeSelector: { 'kubernetes.io/os': 'windows', ...extra.nodeSelector },
  containers: images.map((image, i) => ({ name: `c${i}`, image })),
  ...extra,
  ...(extra.nodeSelector
    ? { nodeSelector: { 'kubernetes.io/os': 'windows', ...extra.nodeSelector } }
    : {}),
});

const deployment = (name: string, spec: k8s.V1PodSpec, namespace = 'apps'): k8s.V1Deployment => ({
  metadata: { name, namespace },
  spec: { selector: {}, template: { spec } },
});

const empty: WorkloadObjects = {
  deployments: [],
  statefulSets: [],
  daemonSets: [],
  jobs: [],
  cronJobs: [],
  pods: [],
};

const lookups = new Map<string, ImageLookup>([
  ['web:2019', { state: 'resolved', windowsVersions: [v2019] }],
  ['web:2022', { state: 'resolved', windowsVersions: [v2022] }],
  ['web:multi', { state: 'resolved', windowsVersions: [v2019, v2022] }],
  ['linux:only', { state: 'resolved', windowsVersions: [] }],
  ['private:x', { state: 'unknown', reason: 'registry answered 401' }],
]);

test('only workloads whose pods are Windows pods, each once, owned ones under their owner', () => {
  const objects: WorkloadObjects = {
    ...empty,
    deployments: [
      deployment('win', windowsSpec(['web:2022'])),
      deployment('lnx', { containers: [{ name: 'c', image: 'nginx' }] }),
    ],
    cronJobs: [
      {
        metadata: { name: 'nightly', namespace: 'apps' },
        spec: {
          schedule: '@daily',
          jobTemplate: { spec: { template: { spec: windowsSpec(['web:2022']) } } },
        },
      },
    ],
    jobs: [
      {
        metadata: {
          name: 'nightly-1',
          namespace: 'apps',
          ownerReferences: [
            {
              apiVersion: 'batch/v1',
              kind: 'CronJob',
              name: 'nightly',
              uid: 'u',
              controller: true,
            },
          ],
        },
        spec: { template: { spec: windowsSpec(['web:2022']) } },
      },
    ],
    pods: [
      {
        metadata: { name: 'bare', namespace: 'apps' },
        spec: { ...windowsSpec(['web:2019']), runtimeClassName: 'windows-2019', nodeSelector: {} },
      },
      {
        metadata: {
          name: 'win-abc',
          namespace: 'apps',
          ownerReferences: [
            {
              apiVersion: 'apps/v1',
              kind: 'ReplicaSet',
              name: 'win-1',
              uid: 'u',
              controller: true,
            },
          ],
        },
        spec: windowsSpec(['web:2022']),
      },
    ],
  };
  assert.deepEqual(
    windowsWorkloads(objects, runtimeClasses).map((w) => `${w.kind}/${w.name}`),
    ['Deployment/win', 'CronJob/nightly', 'Pod/bare'],
  );
});

test('verdicts: process isolation is ready, an older image needs Hyper-V, a newer or Linux-only image blocks, an unknown lookup is unknown', () => {
  const plan = (images: string[], extra?: Partial<k8s.V1PodSpec>) =>
    planWorkload(
      windowsWorkloads(
        { ...empty, deployments: [deployment('w', windowsSpec(images, extra))] },
        runtimeClasses,
      )[0]!,
      lookups,
      target,
      runtimeClasses,
    );
  const ready = plan(['web:2022', 'web:multi']);
  assert.equal(ready.verdict, 'ready');
  assert.deepEqual(
    ready.images.map((i) => [i.image, i.verdict, i.osVersion]),
    [
      ['web:2022', 'process', v2022],
      ['web:multi', 'process', v2022],
    ],
  );
  assert.equal(plan(['web:2019']).verdict, 'hyperv');
  const linux = plan(['web:2022', 'linux:only']);
  assert.equal(linux.verdict, 'blocked');
  assert.match(
    linux.blockers.join('\n'),
    /spec\.containers\[1\] image linux:only has no Windows variant/,
  );
  const unknown = plan(['private:x']);
  assert.equal(unknown.verdict, 'unknown');
  assert.equal(unknown.images[0]!.reason, 'registry answered 401');
  // A 2022 image planned for 2019 is newer than the target: blocked, naming the fix.
  const back = planWorkload(
    windowsWorkloads(
      { ...empty, deployments: [deployment('w', windowsSpec(['web:2022']))] },
      runtimeClasses,
    )[0]!,
    lookups,
    { build: '10.0.17763', name: '2019' },
    runtimeClasses,
  );
  assert.equal(back.verdict, 'blocked');
  assert.match(
    back.blockers[0]!,
    /is for 10\.0\.20348\.2582, newer than 2019 \(10\.0\.17763\): use a tag built for 2019 or older/,
  );
});

test('a node selector, RuntimeClass or required affinity pinned to another build blocks, naming the field; HostProcess and gMSA are notes', () => {
  const one = (spec: k8s.V1PodSpec) =>
    planWorkload(
      windowsWorkloads({ ...empty, deployments: [deployment('w', spec)] }, runtimeClasses)[0]!,
      lookups,
      target,
      runtimeClasses,
    );
  const selector = one(
    windowsSpec(['web:multi'], {
      nodeSelector: { 'node.kubernetes.io/windows-build': '10.0.17763' },
    }),
  );
  assert.equal(selector.verdict, 'blocked');
  assert.match(
    selector.blockers[0]!,
    /^nodeSelector node\.kubernetes\.io\/windows-build pins it to 10\.0\.17763: set it to 10\.0\.20348 or remove it/,
  );
  const runtime = one({ ...windowsSpec(['web:multi']), runtimeClassName: 'windows-2019' });
  assert.match(
    runtime.blockers[0]!,
    /^runtimeClassName windows-2019 \(node\.kubernetes\.io\/windows-build\) pins it to 10\.0\.17763/,
  );
  // Pinned to the target itself: nothing to change.
  assert.equal(
    one({ ...windowsSpec(['web:multi']), runtimeClassName: 'windows-2022' }).verdict,
    'ready',
  );
  const affinity = one({
    ...windowsSpec(['web:multi']),
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            {
              matchExpressions: [
                { key: 'node.kubernetes.io/windows-build', operator: 'In', values: ['10.0.17763'] },
              ],
            },
          ],
        },
      },
    },
  });
  assert.match(
    affinity.blockers[0]!,
    /^required node affinity node\.kubernetes\.io\/windows-build pins it to 10\.0\.17763/,
  );
  const notes = one({
    ...windowsSpec(['web:2022']),
    securityContext: { windowsOptions: { hostProcess: true, gmsaCredentialSpecName: 'webapp1' } },
    hostNetwork: true,
  });
  assert.equal(notes.verdict, 'ready');
  assert.equal(notes.notes.length, 2);
  assert.match(notes.notes.join('\n'), /HostProcess containers run on the host/);
  assert.match(
    notes.notes.join('\n'),
    /gMSA credential spec webapp1: the 2022 hosts must be domain-joined/,
  );
});
