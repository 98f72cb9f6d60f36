/**
 * Reading a pinned payload artifact through its targets (payload-targets.ts): its manifest and
 * payload.json, verified against the digest, and each file's blob as a verified stream.
 */
import type { Payload } from '../payload.ts';
import type { PayloadLayer, PayloadManifest } from './payload-manifest.ts';
import { formatPinnedReference, type PinnedPayloadReference } from './payload-reference.ts';
import type { PayloadRegistry, PayloadTarget } from './payload-registry.ts';
import { firstThatWorks } from './payload-targets.ts';

/** A payload artifact read and verified. */
export interface ResolvedPayload {
  reference: PinnedPayloadReference;
  payload: Payload;
  manifest: PayloadManifest;
  /** payload.json's exact bytes. */
  config: Buffer;
}

/**
 * The payload at `ref` from the first target that serves it whole and verified: the manifest
 * by digest, then payload.json from the same target. Throws WF_PAYLOAD_DOWNLOAD or
 * WF_PAYLOAD_INVALID naming every target tried.
 */
export function resolvePayload(
  registry: PayloadRegistry,
  targets: readonly PayloadTarget[],
  ref: PinnedPayloadReference,
  signal?: AbortSignal,
): Promise<ResolvedPayload> {
  const document = `payload artifact ${formatPinnedReference(ref)}`;
  return firstThatWorks(targets, document, async (target) => {
    const manifest = await registry.fetchManifest(target, ref.digest, document, signal);
    const { payload, bytes } = await registry.fetchConfig(target, manifest, document, signal);
    return { reference: ref, payload, manifest, config: bytes };
  });
}

/**
 * Streams one file of the payload at `ref` into `consume`, from the first target that serves
 * it whole and verified; `consume` must keep nothing unless the chunks end without an error.
 * Its own failures (a full disk) end the pull at once, without trying another target.
 */
export function pullLayer<T>(
  registry: PayloadRegistry,
  targets: readonly PayloadTarget[],
  ref: PinnedPayloadReference,
  layer: PayloadLayer,
  consume: (chunks: AsyncGenerator<Buffer>) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  return firstThatWorks(
    targets,
    `payload file ${layer.name} (${layer.digest}) of ${formatPinnedReference(ref)}`,
    async (target) => consume(await registry.openBlob(target, layer, signal)),
  );
}
