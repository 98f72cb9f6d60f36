/**
 * The agent's pre-pull: from the attacker's side first (a list that is not the operator's,
 * signed for this Node, is never acted on), then the pulls: bounded parallelism, the disk
 * checked before any pull, a missing image, a timeout — each a named condition, none stuck.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { SimContainerdImages } from '../../sim/hosts/containerd-images.ts';
import { signatureAnnotation } from '../api/node-commands.ts';
import {
  formatPrePullCommand,
  type PrePullCommand,
  prePullAnnotation,
  prePullCommand,
} from '../api/pre-pull.ts';
import { PrePullReason } from '../api/reasons.ts';
import { CommandSigner } from '../fleet/command-signer.ts';
import type { AgentConfig } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import { commandView } from './command-check.ts';
import type { HostOS } from './host-os.ts';
import { pullImages, syncPrePull } from './pre-pull.ts';

const value = formatPrePullCommand(prePullCommand({ images: ['example.test/app:1'] }));

function world() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const files = new Map<string, Buffer>();
  const log: string[] = [];
  const context = {
    hostOS: {
      readFile: async (path: string) => files.get(path),
      writeFile: async (path: string, data: string) => void files.set(path, Buffer.from(data)),
    },
    stderr: (text: string) => log.push(text),
  } as unknown as AgentContext;
  const config = { nodeName: 'win-1', operatorNamespace: 'winfleet-system' } as AgentConfig;
  const signer = new CommandSigner(privateKey);
  const node = (annotations: Record<string, string>, name = 'win-1'): k8s.V1Node => ({
    metadata: { name, uid: 'uid-1', annotations },
    status: { nodeInfo: { bootID: 'boot-1' } as k8s.V1NodeSystemInfo },
  });
  const view = async (n: k8s.V1Node) =>
    (await commandView(context, async () => pem, config, n)).metadata?.annotations ?? {};
  return { signer, node, view, log };
}

test('a pre-pull list a patch-nodes principal wrote is not in the agent’s view', async () => {
  const w = world();
  const good = w.signer.annotations(w.node({}), prePullAnnotation, value) as Record<string, string>;
  assert.equal((await w.view(w.node(good)))[prePullAnnotation], value);
  const attacker = formatPrePullCommand(prePullCommand({ images: ['evil.test/miner:1'] }));
  const cases: [string, Record<string, string>][] = [
    ['unsigned', { [prePullAnnotation]: attacker }],
    [
      'forged',
      {
        [prePullAnnotation]: attacker,
        [signatureAnnotation(prePullAnnotation)]:
          `v1.${Math.floor(Date.now() / 1000)}.${'A'.repeat(86)}`,
      },
    ],
    [
      'signed for another node',
      w.signer.annotations(w.node({}, 'win-2'), prePullAnnotation, value) as Record<string, string>,
    ],
    ['another list under the operator’s signature', { ...good, [prePullAnnotation]: attacker }],
  ];
  for (const [what, annotations] of cases) {
    assert.equal((await w.view(w.node(annotations)))[prePullAnnotation], undefined, what);
  }
  assert.ok(w.log.every((line) => !line.includes(good[signatureAnnotation(prePullAnnotation)]!)));
});

/** A HostOS of containerd's images only, over the simulated store, counting pulls at once. */
function imageHost(images: SimContainerdImages, freeBytes = 1e12) {
  let now = 0;
  let most = 0;
  const host = {
    hasImage: async (reference: string) => images.has(reference),
    pullImage: async (reference: string, signal: AbortSignal) => {
      most = Math.max(most, ++now);
      try {
        await images.pull(reference, signal);
      } finally {
        now--;
      }
    },
    freeDiskBytes: async () => freeBytes,
  } as unknown as HostOS;
  return { host, most: () => most };
}

function command(references: string[], bytes: number, maxParallel = 2): PrePullCommand {
  return {
    images: references.map((reference) => ({ reference, bytes })),
    timeoutSeconds: 900,
    maxParallel,
  };
}

test('pulls at most maxParallel at once and reports progress up to PrePulled', async () => {
  const refs = ['a.test/1:1', 'a.test/2:1', 'a.test/3:1', 'a.test/4:1', 'a.test/5:1'];
  const images = new SimContainerdImages({
    registry: Object.fromEntries(refs.map((r) => [r, 1e6])),
    pullBytesPerSecond: 1e8,
  });
  const { host, most } = imageHost(images);
  const progress: number[] = [];
  const outcome = await pullImages(host, command(refs, 1e6, 2), {
    onProgress: (done) => progress.push(done),
  });
  assert.equal(outcome.reason, PrePullReason.PrePulled);
  assert.equal(outcome.status, 'True');
  assert.equal(most(), 2);
  assert.deepEqual(progress, [1, 2, 3, 4, 5]);
  // Once there, nothing is pulled again.
  assert.equal((await pullImages(host, command(refs, 1e6))).message, 'All 5 images were there');
});

test('a missing image is PrePullFailed naming it with containerd’s error; the others are pulled', async () => {
  const images = new SimContainerdImages({ registry: { 'a.test/ok:1': 1e6 } });
  const { host } = imageHost(images);
  const outcome = await pullImages(host, command(['a.test/ok:1', 'a.test/missing:1'], 1e6));
  assert.equal(outcome.reason, PrePullReason.PrePullFailed);
  assert.match(outcome.message, /a\.test\/missing:1: .*failed to resolve reference .*not found/);
  assert.equal(images.has('a.test/ok:1'), true);
});

test('images that do not fit the disk are PrePullNoSpace before any pull', async () => {
  const images = new SimContainerdImages({ registry: { 'a.test/big:1': 4e9 } });
  const { host, most } = imageHost(images, 10e9);
  const outcome = await pullImages(host, command(['a.test/big:1'], 4e9));
  assert.equal(outcome.reason, PrePullReason.PrePullNoSpace);
  assert.match(
    outcome.message,
    /a\.test\/big:1 \(3\.7 GiB\) need about 11\.2 GiB .* 9\.3 GiB free; nothing was pulled/,
  );
  assert.equal(most(), 0);
});

test('pulls that outlast the timeout are PrePullTimedOut, and stop', async () => {
  const images = new SimContainerdImages({
    registry: { 'a.test/slow:1': 1e9 },
    pullBytesPerSecond: 1e6,
  });
  const { host } = imageHost(images);
  const outcome = await pullImages(host, command(['a.test/slow:1'], 1e9), { timeoutMs: 50 });
  assert.equal(outcome.reason, PrePullReason.PrePullTimedOut);
  assert.equal(outcome.status, 'False');
  assert.equal(images.has('a.test/slow:1'), false);
});

/**
 * What syncPrePull runs against: a host with one image in its registry and a file store, a Node
 * (boot-1) carrying the signed list, and the conditions it reports.
 */
function syncFixture(hostOverrides: Record<string, unknown> = {}) {
  const images = new SimContainerdImages({ registry: { 'example.test/app:1': 1e6 } });
  const { host } = imageHost(images);
  const files = new Map<string, Buffer>();
  Object.assign(host, {
    readFile: async (path: string) => files.get(path),
    writeFile: async (path: string, data: string) => void files.set(path, Buffer.from(data)),
    ...hostOverrides,
  });
  const conditions: k8s.V1NodeCondition[] = [];
  const core = {
    patchNodeStatus: async (request: { body: { status: { conditions: k8s.V1NodeCondition[] } } }) =>
      void conditions.push(...request.body.status.conditions),
  } as unknown as k8s.CoreV1Api;
  const context = { hostOS: host, stderr: () => {} } as unknown as AgentContext;
  const node: k8s.V1Node = {
    metadata: { name: 'win-1', annotations: { [prePullAnnotation]: value } },
    status: { nodeInfo: { bootID: 'boot-1' } as k8s.V1NodeSystemInfo },
  };
  const pass = { context, nodeName: 'win-1', core, node, servicesVersion: 'v1' };
  return { conditions, node, pass };
}

test('syncPrePull runs once per boot, version and list, and writes the condition', async () => {
  const { conditions, node, pass } = syncFixture();
  const started = await syncPrePull(pass);
  assert.ok(started);
  assert.equal(await syncPrePull(pass), undefined, 'not twice while it runs');
  await started.done;
  assert.deepEqual(
    conditions.map((c) => [c.type, c.status, c.reason]),
    [
      ['ImagesPrePulled', 'False', 'PrePulling'],
      ['ImagesPrePulled', 'False', 'PrePulling'],
      ['ImagesPrePulled', 'True', 'PrePulled'],
    ],
  );
  // Every report names the boot and services version it is for (prePullState reads it).
  for (const c of conditions) assert.match(c.message ?? '', / \[boot boot-1, services v1\]$/);
  assert.equal(await syncPrePull(pass), undefined, 'not again for the same boot');
  const rebooted = { ...node, status: { nodeInfo: { bootID: 'boot-2' } as k8s.V1NodeSystemInfo } };
  conditions.length = 0;
  const again = await syncPrePull({ ...pass, node: rebooted });
  assert.ok(again, 'again after a reboot');
  await again.done;
  assert.equal(conditions[0]?.reason, PrePullReason.PrePulling, 'PrePulling first, every run');
  assert.match(conditions.at(-1)?.message ?? '', / \[boot boot-2, services v1\]$/);
  const upgraded = await syncPrePull({ ...pass, node: rebooted, servicesVersion: 'v2' });
  assert.ok(upgraded, 'again after an upgrade');
  await upgraded.done;
  assert.match(conditions.at(-1)?.message ?? '', / \[boot boot-2, services v2\]$/);
  // A list that is not the operator's canonical form is a named condition, never a pull.
  conditions.length = 0;
  const bad = {
    ...node,
    metadata: { ...node.metadata, annotations: { [prePullAnnotation]: '{}' } },
  };
  assert.equal(await syncPrePull({ ...pass, node: bad }), undefined);
  assert.equal(conditions[0]?.reason, PrePullReason.PrePullFailed);
});

test('a run that failed is not started again in the same boot, version and list', async () => {
  const { conditions, pass } = syncFixture({
    // The disk check cannot be read: the run throws (pullImages has no outcome for it).
    freeDiskBytes: async () => {
      throw new Error('Get-Volume failed');
    },
  });
  const started = await syncPrePull(pass);
  assert.ok(started);
  await started.done;
  assert.equal(conditions.at(-1)?.reason, PrePullReason.PrePullFailed);
  assert.match(conditions.at(-1)?.message ?? '', /Get-Volume failed/);
  assert.equal(await syncPrePull(pass), undefined, 'not again: the node may have taken pods');
  const upgraded = await syncPrePull({ ...pass, servicesVersion: 'v2' });
  assert.ok(upgraded, 'again after an upgrade');
  await upgraded.done;
});
