/**
 * npm run bench:prepull — what pre-pull changes for the first pod of a node after an upgrade,
 * for an image of servercore's size, measured in process: the simulated containerd
 * (sim/hosts/containerd-images.ts) and the agent's own pulls (src/agent/pre-pull.ts
 * pullImages), with no control plane. The simulated kubelet and kwok do not pull a pod's
 * image (docs/fidelity-ledger.md), so the pod's own pull is played here by a pull of the same
 * store, as containerd's CRI would make it.
 *
 *   npm run bench:prepull [-- --image-gb 2.5 --pull-mbps 1000 --unpack-mbps 2000 --runs 3]
 *
 * 1. The simulated pull rate, measured: a pull of the image, timed (download + unpack).
 * 2. Without pre-pull: at Node Ready the pod is bound at once and waits for its image: Ready →
 *    first pod Running is the pull.
 * 3. With pre-pull: at Node Ready the agent pulls (the node tainted); the taint goes when the
 *    pull ended, the pod is bound then and finds its image: Ready → first pod Running is the
 *    agent's pull and the pod's start.
 * Each is the median of --runs, in the same run; the ratio is 3 over 2.
 */
import { parseArgs } from 'node:util';
import { SimContainerdImages } from '../sim/hosts/containerd-images.ts';
import type { HostOS } from '../src/agent/host-os.ts';
import { pullImages } from '../src/agent/pre-pull.ts';

const reference = 'mcr.microsoft.com/windows/servercore:ltsc2022';

const { values } = parseArgs({
  options: {
    'image-gb': { type: 'string', default: '2.5' },
    'pull-mbps': { type: 'string', default: '1000' },
    'unpack-mbps': { type: 'string', default: '2000' },
    runs: { type: 'string', default: '3' },
  },
});
const bytes = Number(values['image-gb']) * 1e9;
const pullBytesPerSecond = Number(values['pull-mbps']) * 1e6;
const unpackBytesPerSecond = Number(values['unpack-mbps']) * 1e6;
const runs = Number(values.runs);

function store(): SimContainerdImages {
  return new SimContainerdImages({
    registry: { [reference]: bytes },
    pullBytesPerSecond,
    unpackBytesPerSecond,
  });
}

/** The agent's HostOS, as far as pre-pull reaches it, over `images`. */
function hostOver(images: SimContainerdImages): HostOS {
  return {
    hasImage: async (r: string) => images.has(r),
    pullImage: (r: string, signal: AbortSignal) => images.pull(r, signal),
    freeDiskBytes: async () => 1e13,
  } as unknown as HostOS;
}

/** A pod's start on the node: its image's pull when missing (the CRI's), then Running. */
async function podRunning(images: SimContainerdImages): Promise<void> {
  if (!images.has(reference)) await images.pull(reference, new AbortController().signal);
}

async function withoutPrePull(): Promise<number> {
  const images = store();
  const ready = performance.now();
  await podRunning(images);
  return performance.now() - ready;
}

async function withPrePull(): Promise<number> {
  const images = store();
  const ready = performance.now();
  const outcome = await pullImages(hostOver(images), {
    images: [{ reference, bytes }],
    timeoutSeconds: 7200,
    maxParallel: 2,
  });
  if (outcome.reason !== 'PrePulled') throw new Error(`pre-pull: ${outcome.message}`);
  // The operator lifts the taint; the pod is bound and starts on the image that is there.
  await podRunning(images);
  return performance.now() - ready;
}

async function measuredRate(): Promise<number> {
  const images = store();
  const start = performance.now();
  await images.pull(reference, new AbortController().signal);
  return bytes / ((performance.now() - start) / 1000);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const rate = median(await sequence(runs, measuredRate));
  const without = median(await sequence(runs, withoutPrePull));
  const withPull = median(await sequence(runs, withPrePull));
  console.log(`image: ${reference}, ${(bytes / 1e9).toFixed(2)} GB compressed`);
  console.log(
    `simulated rates: download ${(pullBytesPerSecond / 1e6).toFixed(0)} MB/s, unpack ${(unpackBytesPerSecond / 1e6).toFixed(0)} MB/s; measured pull rate ${(rate / 1e6).toFixed(0)} MB/s (download + unpack)`,
  );
  console.log(`Node Ready → first pod Running, without pre-pull: ${(without / 1000).toFixed(2)} s`);
  console.log(
    `Node Ready → first pod Running, with pre-pull:    ${(withPull / 1000).toFixed(2)} s`,
  );
  console.log(
    `ratio (with / without): ${(withPull / without).toFixed(3)} (median of ${runs} runs each)`,
  );
}

async function sequence(n: number, run: () => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await run());
  return out;
}

await main();
