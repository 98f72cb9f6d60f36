/**
 * bench:join's payloads and how the operator is told to deliver them (issue 15): pushed by the
 * operator over SFTP from a directory (--payload-dir), or pulled by the hosts from a registry
 * (--payload-image: a real docker-registry holding the artifact, pushed with winfleet payload
 * push's code; the operator then copies only the agent, its service shim and the config).
 * A payload is the stand-in (files of a few bytes) or one of N MiB in all, split between its
 * files as a real payload is (kubelet 33 %, the agent 15 %, …; sparse on the operator's disk).
 */
import { join } from 'node:path';
import { startTestRegistry, type TestRegistry } from '../sim/registry/registry-process.ts';
import type { OperatorProcessOptions } from '../sim/testkit/operator-process.ts';
import { realPayloadSizes, writeStandInPayload } from '../sim/testkit/payload.ts';
import { pushPayload } from '../src/payload/oci/push-payload.ts';

export type Delivery = 'push' | 'pull';
export const deliveryKinds: readonly Delivery[] = ['push', 'pull'];

/** A payload the bench joins hosts with: on disk, and (for pull runs) in the registry. */
export interface BenchPayload {
  /** "stand-in" or "N MiB". */
  name: string;
  dir: string;
  /** The pinned reference `winfleet payload push` printed (once published). */
  reference?: string;
  /** Bytes of the agent and its service shim: what a pulling host is sent besides config. */
  ownBytes: number;
}

const mib = 1024 * 1024;
const ownFiles = ['winfleet-agent.exe', 'winfleet-service.exe'];

/** Writes the stand-in payload under `scratch`, padded to `totalMiB` in all if given. */
export async function preparePayload(scratch: string, totalMiB?: number): Promise<BenchPayload> {
  const name = totalMiB === undefined ? 'stand-in' : `${totalMiB} MiB`;
  const dir = join(scratch, totalMiB === undefined ? 'stand-in' : 'sized');
  const sizes = totalMiB === undefined ? undefined : realPayloadSizes(totalMiB * mib);
  const payload = await writeStandInPayload(dir, sizes ? { sizes } : {});
  const ownBytes = payload.files
    .filter((f) => ownFiles.includes(f.name))
    .reduce(
      (sum, f) =>
        sum +
        (sizes?.[f.name] ??
          `winfleet-standin ${f.name.replace(/\.exe$/, '')} ${f.version}\n`.length),
      0,
    );
  return { name, dir, ownBytes };
}

/** Starts a registry storing under `storageDir` and pushes each payload to it (sets `reference`). */
export async function publishPayloads(
  payloads: BenchPayload[],
  storageDir: string,
): Promise<TestRegistry> {
  const registry = await startTestRegistry({ storageDir });
  for (const p of payloads) {
    const repository = `bench/${p.dir.split('/').at(-1)}`;
    const pushed = await pushPayload(
      p.dir,
      { registry: registry.host, repository, tag: 'v1' },
      { plainHttp: true },
    );
    p.reference = pushed.reference;
    console.error(`[bench] pushed the ${p.name} payload: ${p.reference}`);
  }
  return registry;
}

/** The operator's options for `delivery` of `payload`; a pulling operator caches in `cacheDir`. */
export function deliveryOptions(
  delivery: Delivery,
  payload: BenchPayload,
  cacheDir: string,
): Pick<OperatorProcessOptions, 'payloadDir' | 'args'> {
  if (delivery === 'push') return { payloadDir: payload.dir };
  if (!payload.reference) throw new Error(`The ${payload.name} payload was not published`);
  return {
    args: [
      '--payload-image',
      payload.reference,
      '--payload-plain-http',
      '--payload-cache-dir',
      cacheDir,
    ],
  };
}
