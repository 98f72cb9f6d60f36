import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { signatureAnnotation } from '../../api/node-commands.ts';
import { prePullAnnotation, prePullTaint } from '../../api/pre-pull.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import { CommandSigner, registerCommandSigner } from '../../fleet/command-signer.ts';
import { HostStatus } from '../../fleet/host-status.ts';
import type { JoinContext } from './join-context.ts';
import {
  keepPrePull,
  poolPrePull,
  prePullAnnotations,
  prePullRetryMs,
  prePullTaintDone,
  recordPrePull,
  syncPrePullTaint,
} from './pre-pull-node.ts';

const spec = { images: ['example.test/app:1'], timeoutSeconds: 60 };
const t0 = Date.UTC(2026, 10, 29, 0, 0, 0);

function node(extra: Partial<k8s.V1Node> = {}, conditions: k8s.V1NodeCondition[] = []): k8s.V1Node {
  return {
    metadata: { name: 'win-1', uid: 'uid-1', resourceVersion: '7', annotations: {} },
    spec: { taints: [{ ...prePullTaint }, { key: 'os', value: 'windows', effect: 'NoSchedule' }] },
    status: {
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionTime: new Date(t0) as unknown as Date },
        ...conditions,
      ],
    },
    ...extra,
  };
}

test('the pool governing a host gives its spec.prePull; a bad one never reaches a node', () => {
  const host = {
    metadata: { name: 'h', namespace: 'ns', labels: { pool: 'a' } },
    spec: {},
  } as unknown as WindowsHost;
  const pool = (prePull: unknown) =>
    ({
      metadata: { name: 'a', namespace: 'ns' },
      spec: { selector: { matchLabels: { pool: 'a' } }, prePull },
    }) as unknown as WindowsNodePool;
  assert.deepEqual(poolPrePull([pool(spec)], host), spec);
  assert.equal(poolPrePull([pool({ images: ['169.254.169.254/x:1'] })], host), undefined);
  assert.equal(poolPrePull([], host), undefined);
});

test('the operator signs the list for the Node, re-signs what another wrote, removes it with the spec', () => {
  const signer = new CommandSigner(generateKeyPairSync('ed25519').privateKey);
  const bare = node();
  const patch = prePullAnnotations(signer, bare, spec);
  assert.match(patch[prePullAnnotation]!, /"example.test\/app:1"/);
  const signed = node({
    metadata: { ...bare.metadata, annotations: patch as Record<string, string> },
  });
  assert.deepEqual(prePullAnnotations(signer, signed, spec), {});
  // An attacker's list beside the operator's signature is replaced by the operator's.
  const tampered = node({
    metadata: {
      ...bare.metadata,
      annotations: { ...(patch as Record<string, string>), [prePullAnnotation]: '{"images":[]}' },
    },
  });
  assert.equal(
    prePullAnnotations(signer, tampered, spec)[prePullAnnotation],
    patch[prePullAnnotation],
  );
  assert.deepEqual(prePullAnnotations(signer, signed, undefined), {
    [prePullAnnotation]: null,
    [signatureAnnotation(prePullAnnotation)]: null,
  });
  assert.deepEqual(prePullAnnotations(signer, bare, undefined), {});
});

test('the taint goes once the condition ended, the spec went, or the timeout and grace passed', () => {
  const condition = (reason: string) => [
    { type: 'ImagesPrePulled', status: reason === 'PrePulled' ? 'True' : 'False', reason },
  ];
  assert.equal(prePullTaintDone(node({}, condition('PrePulling')), spec, t0 + 1000), false);
  assert.equal(prePullTaintDone(node(), spec, t0 + 1000), false);
  for (const reason of ['PrePulled', 'PrePullFailed', 'PrePullNoSpace', 'PrePullTimedOut'])
    assert.equal(prePullTaintDone(node({}, condition(reason)), spec, t0 + 1000), true, reason);
  assert.equal(prePullTaintDone(node(), undefined, t0), true);
  assert.equal(prePullTaintDone(node({}, condition('PrePulling')), spec, t0 + 181_000), true);
});

test('lifting keeps the other taints and is conditional on the taints read', async () => {
  const patches: unknown[] = [];
  const done = node({}, [{ type: 'ImagesPrePulled', status: 'True', reason: 'PrePulled' }]);
  const core = {
    patchNode: async (request: unknown) => void patches.push(request),
    readNode: async () => done,
  } as unknown as k8s.CoreV1Api;
  assert.equal(await syncPrePullTaint(core, done, spec), 'removed');
  assert.deepEqual(patches, [
    {
      name: 'win-1',
      body: [
        { op: 'test', path: '/spec/taints', value: done.spec!.taints },
        {
          op: 'replace',
          path: '/spec/taints',
          value: [{ key: 'os', value: 'windows', effect: 'NoSchedule' }],
        },
      ],
    },
  ]);
  assert.equal(await syncPrePullTaint(core, node({ spec: {} }), spec), undefined);
});

test('a Node that exists already (upgrade, reboot) gets the taint while its agent pulls', async () => {
  const patches: { body: { op: string; value: k8s.V1Taint[] }[] }[] = [];
  const pulling = node({ spec: {} }, [
    { type: 'ImagesPrePulled', status: 'False', reason: 'PrePulling' },
  ]);
  const core = {
    patchNode: async (request: (typeof patches)[number]) => void patches.push(request),
    readNode: async () => pulling,
  } as unknown as k8s.CoreV1Api;
  assert.equal(await syncPrePullTaint(core, pulling, spec, t0 + 1000), 'added');
  assert.deepEqual(patches[0]?.body, [
    { op: 'add', path: '/spec/taints', value: [{ ...prePullTaint }] },
  ]);
  // Not before the agent says it pulls, not without a spec, not past the timeout.
  assert.equal(await syncPrePullTaint(core, node({ spec: {} }), spec, t0 + 1000), undefined);
  assert.equal(await syncPrePullTaint(core, pulling, undefined, t0 + 1000), undefined);
  assert.equal(await syncPrePullTaint(core, pulling, spec, t0 + 181_000), undefined);
  assert.equal(patches.length, 1);
});

test('an administrator’s own taints and cordon are never touched, adding or lifting', async () => {
  const theirs: k8s.V1Taint[] = [
    { key: 'example.com/maintenance', value: 'disk', effect: 'NoExecute' },
    { key: 'os', value: 'windows', effect: 'NoSchedule' },
  ];
  const patches: { body: { op: string; path: string; value: unknown }[] }[] = [];
  let onServer: k8s.V1Node;
  const core = {
    patchNode: async (request: (typeof patches)[number]) => void patches.push(request),
    readNode: async () => onServer,
  } as unknown as k8s.CoreV1Api;
  // The operator's cache keeps winfleet's taints only (slimNode): it decides on that, and
  // changes the taints of the Node as the API server has them.
  const cordoned = (taints: k8s.V1Taint[], condition: string) =>
    node({ spec: { unschedulable: true, taints } }, [
      { type: 'ImagesPrePulled', status: 'False', reason: condition },
    ]);
  onServer = cordoned(theirs, 'PrePulling');
  assert.equal(await syncPrePullTaint(core, cordoned([], 'PrePulling'), spec, t0 + 1000), 'added');
  onServer = cordoned([...theirs, { ...prePullTaint }], 'PrePullFailed');
  assert.equal(
    await syncPrePullTaint(core, cordoned([{ ...prePullTaint }], 'PrePullFailed'), spec, t0),
    'removed',
  );
  assert.deepEqual(
    patches.map((p) => p.body.map((op) => [op.op, op.path, op.value])),
    [
      [
        ['test', '/spec/taints', theirs],
        ['replace', '/spec/taints', [...theirs, { ...prePullTaint }]],
      ],
      [
        ['test', '/spec/taints', [...theirs, { ...prePullTaint }]],
        ['replace', '/spec/taints', theirs],
      ],
    ],
    'only /spec/taints, only the pre-pull taint changed, never spec.unschedulable',
  );
});

test('the wait counts from the agent’s last PrePulling report when that came after Ready', () => {
  const pulling = node({}, [
    {
      type: 'ImagesPrePulled',
      status: 'False',
      reason: 'PrePulling',
      lastTransitionTime: new Date(t0 + 600_000) as unknown as Date,
    },
  ]);
  // spec.timeoutSeconds 60 and 120 s of grace: 180 s after the last report, not after Ready.
  assert.equal(prePullTaintDone(pulling, spec, t0 + 700_000), false);
  assert.equal(prePullTaintDone(pulling, spec, t0 + 781_000), true);
});

test('keepPrePull: nothing asked of the API server without spec.prePull; with it, the list signed and a look again when the wait ends', async () => {
  const host = {
    metadata: { name: 'h', namespace: 'ns', labels: { pool: 'a' } },
    spec: {},
  } as unknown as WindowsHost;
  const pool = {
    metadata: { name: 'a', namespace: 'ns' },
    spec: { selector: { matchLabels: { pool: 'a' } }, prePull: spec },
  } as unknown as WindowsNodePool;
  const warnings: unknown[] = [];
  const context = (kc: unknown, pools: WindowsNodePool[]) =>
    ({
      kc,
      pools: { list: () => pools },
      log: { warn: (...args: unknown[]) => warnings.push(args) },
    }) as unknown as JoinContext;
  const noApi = {
    makeApiClient: () => {
      throw new Error('no API client expected');
    },
  };
  const plain = node({ spec: { taints: [{ key: 'os', value: 'windows', effect: 'NoSchedule' }] } });
  assert.equal(await keepPrePull(context(noApi, []), host, plain, t0), undefined);
  assert.deepEqual(warnings, []);
  // A Node registered with the taint, its agent silent so far: the list is signed onto it, the
  // taint stays, and the host is looked at again when the timeout and grace have passed.
  const patches: unknown[] = [];
  const registered = node();
  const core = {
    patchNode: async (request: {
      body: { metadata?: { annotations: Record<string, string> } };
    }) => {
      patches.push(request.body);
      return {
        ...registered,
        metadata: { ...registered.metadata, annotations: request.body.metadata?.annotations },
      };
    },
    readNode: async () => registered,
  };
  const kc = { makeApiClient: () => core };
  registerCommandSigner(
    kc as unknown as k8s.KubeConfig,
    new CommandSigner(generateKeyPairSync('ed25519').privateKey),
  );
  assert.equal(await keepPrePull(context(kc, [pool]), host, registered, t0 + 1000), 180_000);
  assert.equal(patches.length, 1, 'one patch: the signed list');
  assert.match(JSON.stringify(patches[0]), /winfleet\.io\/pre-pull/);
  assert.deepEqual(warnings, []);
});

test('recordPrePull: the Node’s ImagesPrePulled condition on the host’s status, gone with it', () => {
  const host = { metadata: { name: 'h', namespace: 'ns' }, spec: {} } as unknown as WindowsHost;
  const hs = new HostStatus(host);
  const node = (conditions: k8s.V1NodeCondition[]) => ({ status: { conditions } });
  recordPrePull(
    hs,
    node([
      {
        type: 'ImagesPrePulled',
        status: 'False',
        reason: 'PrePulling',
        message: '1 of 2 images done [boot b, services v]',
      },
    ]),
  );
  assert.deepEqual(hs.status.prePull, {
    status: 'False',
    reason: 'PrePulling',
    message: '1 of 2 images done [boot b, services v]',
    imagesDone: 1,
    imagesTotal: 2,
  });
  recordPrePull(hs, node([{ type: 'Ready', status: 'True' }]));
  assert.equal('prePull' in hs.status, false);
});

test('keepPrePull: an update the API server refused (the taints changed meanwhile) is tried again in seconds, not at the healthy recheck', async () => {
  const host = {
    metadata: { name: 'h', namespace: 'ns', labels: { pool: 'a' } },
    spec: {},
  } as unknown as WindowsHost;
  const pool = {
    metadata: { name: 'a', namespace: 'ns' },
    spec: { selector: { matchLabels: { pool: 'a' } }, prePull: spec },
  } as unknown as WindowsNodePool;
  const signer = new CommandSigner(generateKeyPairSync('ed25519').privateKey);
  const bare = node();
  const value = prePullAnnotations(signer, bare, spec) as Record<string, string>;
  // Pulled: the taint is to go, and the JSON patch's test of the taints fails (422).
  const pulled = node({ metadata: { ...bare.metadata, annotations: value } }, [
    {
      type: 'ImagesPrePulled',
      status: 'True',
      reason: 'PrePulled',
      message: 'All 1 images were there',
    },
  ]);
  const core = {
    readNode: async () => pulled,
    patchNode: async () => {
      throw new Error('HTTP-Code: 422 the test operation failed');
    },
  };
  const kc = { makeApiClient: () => core };
  registerCommandSigner(kc as unknown as k8s.KubeConfig, signer);
  const warnings: unknown[] = [];
  const ctx = {
    kc,
    pools: { list: () => [pool] },
    log: { warn: (...args: unknown[]) => warnings.push(args) },
  } as unknown as JoinContext;
  assert.equal(await keepPrePull(ctx, host, pulled, t0 + 1000), prePullRetryMs);
  assert.equal(warnings.length, 1);
});
