import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { servicesVersionAnnotation } from '../../api/node-annotations.ts';
import {
  type PrePullSpec,
  parsePrePullCommand,
  prePullAnnotation,
  prePullProblems,
  prePullRunMark,
  prePullTaint,
} from '../../api/pre-pull.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import { CommandSigner, registerCommandSigner } from '../../fleet/command-signer.ts';
import type { JoinContext } from './join-context.ts';
import { autoListKept, createWorkloadImages, windowsWorkloadImages } from './pre-pull-auto.ts';
import { keepPrePull } from './pre-pull-node.ts';

const t0 = Date.UTC(2026, 10, 29, 0, 0, 0);
const ref = (name: string) => `docker.io/library/${name}`;

function pod(nodeName: string, images: string[], phase = 'Running'): k8s.V1Pod {
  return {
    spec: { nodeName, containers: images.map((image, i) => ({ name: `c${i}`, image })) },
    status: { phase },
  };
}
const winNode = (name: string): k8s.V1Node => ({
  metadata: { name, labels: { 'kubernetes.io/os': 'windows' } },
});
const linuxNode = (name: string): k8s.V1Node => ({
  metadata: { name, labels: { 'kubernetes.io/os': 'linux' } },
});

test('spec.prePull.auto: images or auto required, auto a boolean', () => {
  assert.deepEqual(prePullProblems({ auto: true }), []);
  assert.deepEqual(prePullProblems({ auto: true, images: [] }), []);
  assert.match(prePullProblems({}).join(), /spec\.prePull\.images: .*spec\.prePull\.auto: true/);
  assert.match(prePullProblems({ auto: false }).join(), /list at least one image/);
  assert.equal(
    prePullProblems({ auto: 'yes', images: ['a:1'] } as unknown as PrePullSpec).join(),
    'spec.prePull.auto: write true or false',
  );
  assert.match(
    prePullProblems({ auto: true, images: 'a:1' } as unknown as PrePullSpec).join(),
    /spec\.prePull\.images: write a list/,
  );
});

test('the Windows workloads’ images: Running pods on Windows nodes, counted, most used first', () => {
  const nodes = [winNode('w1'), winNode('w2'), linuxNode('l1')];
  const pods = [
    pod('w1', ['b:1', 'a:1']),
    pod('w2', ['b:1']),
    pod('w2', ['c:1']),
    pod('l1', ['linux-only:1', 'linux-only:1']),
    pod('w1', ['pending:1'], 'Pending'),
    pod('w1', ['NOT A REFERENCE']),
  ];
  assert.deepEqual(windowsWorkloadImages(pods, nodes), [ref('b:1'), ref('a:1'), ref('c:1')]);
});

test('the pod list is cluster-wide, made once per TTL; a failed list gives none', async () => {
  let now = t0;
  let lists = 0;
  let fail = false;
  const warnings: unknown[] = [];
  const workloads = createWorkloadImages({
    listPods: async () => {
      lists += 1;
      if (fail) throw new Error('forbidden');
      return [pod('w1', ['a:1'])];
    },
    nodes: () => [winNode('w1')],
    log: { warn: (...args: unknown[]) => warnings.push(args) } as never,
    ttlMs: 300_000,
    now: () => now,
  });
  assert.deepEqual(await workloads.images(), [ref('a:1')]);
  assert.deepEqual(await workloads.images(), [ref('a:1')]);
  assert.equal(lists, 1);
  now += 300_001;
  fail = true;
  assert.deepEqual(await workloads.images(), []);
  assert.equal(lists, 2);
  assert.equal(warnings.length, 1);
});

// keepPrePull on an auto pool, with the operator's signer, a Node of build 10.0.20348 and a
// resolver that finds a variant for the images in `runs` (pre-pull-sizes.ts's answer).
function harness(spec: PrePullSpec, workload: () => string[], runs: Set<string>) {
  const signer = new CommandSigner(generateKeyPairSync('ed25519').privateKey);
  const host = {
    metadata: { name: 'h', namespace: 'ns', labels: { pool: 'a' } },
    spec: {},
  } as unknown as WindowsHost;
  const pool = {
    metadata: { name: 'a', namespace: 'ns' },
    spec: { selector: { matchLabels: { pool: 'a' } }, prePull: spec },
  } as unknown as WindowsNodePool;
  const patches: { metadata?: { annotations: Record<string, string | null> } }[] = [];
  let served: k8s.V1Node | undefined;
  const core = {
    patchNode: async (request: {
      body: { metadata?: { annotations: Record<string, string | null> } };
    }) => {
      patches.push(request.body);
      return served!;
    },
    readNode: async () => served!,
  };
  const kc = { makeApiClient: () => core };
  registerCommandSigner(kc as unknown as k8s.KubeConfig, signer);
  const warnings: unknown[] = [];
  const ctx = {
    kc,
    pools: { list: () => [pool] },
    prePullWorkloads: { images: async () => workload() },
    prePullSizes: {
      sizes: async (images: readonly string[], build: string | undefined) => {
        assert.equal(build, '10.0.20348');
        return new Map(images.filter((i) => runs.has(i)).map((i) => [i, 1000]));
      },
    },
    log: { warn: (...args: unknown[]) => warnings.push(args) },
  } as unknown as JoinContext;
  const keep = async (node: k8s.V1Node) => {
    served = node;
    patches.length = 0;
    await keepPrePull(ctx, host, node, t0 + 1000);
    assert.deepEqual(warnings, []);
    return patches;
  };
  return { signer, keep };
}

function autoNode(
  boot: string,
  annotations: Record<string, string> = {},
  ran?: string,
  taints: k8s.V1Taint[] = [],
): k8s.V1Node {
  return {
    metadata: {
      name: 'win-1',
      uid: 'uid-1',
      labels: { 'node.kubernetes.io/windows-build': '10.0.20348' },
      annotations: { [servicesVersionAnnotation]: 'v1', ...annotations },
    },
    spec: { taints },
    status: {
      nodeInfo: { bootID: boot } as k8s.V1NodeSystemInfo,
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionTime: new Date(t0) as unknown as Date },
        ...(ran
          ? [
              {
                type: 'ImagesPrePulled',
                status: 'True',
                reason: 'PrePulled',
                message: `All 3 images were there ${ran}`,
              },
            ]
          : []),
      ],
    },
  };
}

const listed = (patch: { metadata?: { annotations: Record<string, string | null> } }) =>
  parsePrePullCommand(patch.metadata!.annotations[prePullAnnotation]!).images.map(
    (i) => i.reference,
  );

test('auto: a new Node gets the listed images, then the workload images its build runs', async () => {
  const spec = { images: ['mcr.microsoft.com/windows/nanoserver:ltsc2022'], auto: true };
  const runs = new Set([ref('x:1'), ref('z:1'), '10.1.2.3/private:1']);
  const { keep } = harness(
    spec,
    () => [ref('x:1'), ref('y:1'), '10.1.2.3/private:1', ref('z:1')],
    runs,
  );
  const patches = await keep(autoNode('boot-1'));
  assert.equal(patches.length, 1);
  // y:1 has no variant build 20348 runs; the private address the policy refuses is left out.
  assert.deepEqual(listed(patches[0]!), [
    'mcr.microsoft.com/windows/nanoserver:ltsc2022',
    ref('x:1'),
    ref('z:1'),
  ]);
});

test('auto: workloads that change on a running Node leave its list and taints as they are; a reboot or an upgrade takes the new ones', async () => {
  const spec: PrePullSpec = { auto: true };
  let workload = [ref('x:1')];
  const runs = new Set([ref('x:1'), ref('evil:1')]);
  const { signer, keep } = harness(spec, () => workload, runs);
  const first = await keep(autoNode('boot-1'));
  assert.deepEqual(listed(first[0]!), [ref('x:1')]);
  const value = first[0]!.metadata!.annotations[prePullAnnotation]!;
  const base = autoNode('boot-1');
  const signed = signer.annotations(base, prePullAnnotation, value) as Record<string, string>;
  // The agent ran for this boot and version; then a pod creator starts pods of evil:1.
  workload = [ref('evil:1'), ref('evil:1'), ref('x:1')];
  const running = autoNode('boot-1', signed, prePullRunMark('boot-1', 'v1'));
  assert.deepEqual(await keep(running), [], 'no list change, no taint');
  // While it pulls too.
  const pulling = autoNode('boot-1', signed);
  pulling.status!.conditions!.push({
    type: 'ImagesPrePulled',
    status: 'False',
    reason: 'PrePulling',
    message: `0 of 1 images done ${prePullRunMark('boot-1', 'v1')}`,
  });
  pulling.spec!.taints = [{ ...prePullTaint }];
  assert.deepEqual(await keep(pulling), []);
  // After a reboot: the run mark is an old boot's, the list is computed afresh.
  const rebooted = autoNode('boot-2', signed, prePullRunMark('boot-1', 'v1'));
  const after = await keep(rebooted);
  assert.deepEqual(listed(after[0]!), [ref('evil:1'), ref('x:1')]);
  // After an upgrade (another services version) as well.
  const upgraded = autoNode('boot-1', signed, prePullRunMark('boot-1', 'v0'));
  assert.deepEqual(listed((await keep(upgraded))[0]!), [ref('evil:1'), ref('x:1')]);
});

test('auto, from the attacker’s side: a forged list is not kept, a list is capped, the policy holds', async () => {
  const spec: PrePullSpec = { images: ['example.test/app:1'], auto: true, timeoutSeconds: 60 };
  const many = Array.from({ length: 40 }, (_, i) => ref(`img${i}:1`));
  const runs = new Set([...many, '169.254.169.254/metadata:1', '127.0.0.1:5000/local:1']);
  const { signer, keep } = harness(
    spec,
    () => ['169.254.169.254/metadata:1', '127.0.0.1:5000/local:1', ...many],
    runs,
  );
  // A `patch nodes` principal writes its own list (unsigned, or a signature of another value)
  // on a Node whose agent ran for this boot: the operator replaces it, it does not keep it.
  const forged = JSON.stringify({
    images: [{ reference: 'example.test/app:1' }, { reference: ref('evil:1') }],
    timeoutSeconds: 60,
    maxParallel: 2,
  });
  const mark = prePullRunMark('boot-1', 'v1');
  const unsigned = autoNode('boot-1', { [prePullAnnotation]: forged }, mark);
  const otherSigned = signer.annotations(
    unsigned,
    prePullAnnotation,
    forged.replace('evil', 'good'),
  ) as Record<string, string>;
  for (const node of [
    unsigned,
    autoNode('boot-1', { ...otherSigned, [prePullAnnotation]: forged }, mark),
  ]) {
    assert.equal(autoListKept(node, spec, undefined), false);
    const patches = await keep(node);
    const images = listed(patches[0]!);
    assert.equal(images.length, 32, 'at most prePullLimits.maxImages in all');
    assert.equal(images[0], 'example.test/app:1');
    assert.equal(images.includes(ref('evil:1')), false);
    assert.equal(
      images.some((i) => i.startsWith('169.254.') || i.startsWith('127.')),
      false,
      'no registry the address policy refuses',
    );
  }
});

test('auto: the administrator’s own change recomputes a running Node’s list; nothing to pull means no list and no taint', async () => {
  const mark = prePullRunMark('boot-1', 'v1');
  const { signer, keep } = harness(
    { images: ['example.test/b:1'], auto: true },
    () => [],
    new Set(),
  );
  const old = JSON.stringify({
    images: [{ reference: 'example.test/a:1' }, { reference: ref('x:1') }],
    timeoutSeconds: 900,
    maxParallel: 2,
  });
  const base = autoNode('boot-1');
  const signed = signer.annotations(base, prePullAnnotation, old) as Record<string, string>;
  assert.equal(
    autoListKept(
      autoNode('boot-1', signed, mark),
      { images: ['example.test/a:1'], auto: true },
      old,
    ),
    true,
  );
  assert.equal(
    autoListKept(
      autoNode('boot-1', signed, mark),
      { images: ['example.test/b:1'], auto: true },
      old,
    ),
    false,
  );
  assert.equal(
    autoListKept(
      autoNode('boot-1', signed, mark),
      { images: ['example.test/a:1'], auto: true, maxParallel: 3 },
      old,
    ),
    false,
  );
  const patches = await keep(autoNode('boot-1', signed, mark));
  assert.deepEqual(listed(patches[0]!), ['example.test/b:1']);
  // An auto pool with nothing its build runs: no list on the Node, the registered taint lifted.
  const empty = harness({ auto: true }, () => [ref('y:1')], new Set());
  const tainted = autoNode('boot-1', {}, undefined, [{ ...prePullTaint }]);
  const lifted = await empty.keep(tainted);
  assert.equal(lifted.length, 1);
  assert.deepEqual(lifted[0], [
    { op: 'test', path: '/spec/taints', value: [{ ...prePullTaint }] },
    { op: 'replace', path: '/spec/taints', value: [] },
  ]);
});
