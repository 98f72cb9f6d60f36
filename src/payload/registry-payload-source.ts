/**
 * The payload the operator serves from an OCI registry (--payload-image): the artifact pinned
 * by digest, its manifest and payload.json read and verified once (src/payload/oci) — the
 * digest pins the content, so it never changes — and the services manifest built from it as
 * from a payload directory. The files themselves are fetched only when a host must be sent one
 * over SFTP (hosts that reach the registry pull their own): each blob is streamed into the
 * download cache, verified, once, and handed out from there.
 *
 * The registry's host is looked up through winfleet-config `images.mirrors` as images are
 * (mirrors first, then the registry), with the credentials of the payload pull secret.
 */

import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import { WinfleetError } from '../errors/catalog.ts';
import { nodeHostSettings } from '../hostsettings/node-host-settings.ts';
import type { DockerConfigSource } from '../images/docker-config.ts';
import { canonicalRegistry } from '../images/image-reference.ts';
import type { NodeNetwork } from '../servicesmanifest/node-network.ts';
import type { LoadedPayload } from './loaded-payload.ts';
import { servicesManifestFor } from './node-services.ts';
import type { PinnedPayloadReference } from './oci/payload-reference.ts';
import { formatPinnedReference } from './oci/payload-reference.ts';
import { PayloadRegistry, type PayloadTarget, saveVerified } from './oci/payload-registry.ts';
import { payloadTargets } from './oci/payload-targets.ts';
import { pullLayer, type ResolvedPayload, resolvePayload } from './oci/resolve-payload.ts';
import type { PayloadFile } from './payload.ts';
import { knownHash, type PayloadFileOnDisk } from './payload-file.ts';

export interface RegistryPayloadSourceOptions {
  reference: PinnedPayloadReference;
  config: () => WinfleetConfig;
  /**
   * The API server URL the hosts use; with it the configuration's host settings (proxy, CAs,
   * mirrors: node-host-settings.ts) are in the manifest.
   */
  apiServer?: () => string;
  /** The pod network the manifest carries (routed when it gives none). */
  network?: () => NodeNetwork | undefined;
  /** Where fetched files are kept (one file per SHA-256); created when missing. */
  cacheDir: string;
  /** Reach the registry itself over plain HTTP (loopback registries). */
  plainHttp?: boolean;
  /** PEM CA certificates trusted for the registry, besides the system roots. */
  caBundle?: string;
  /** The payload pull secret's name, for the record (hosts read the same Secret). */
  pullSecretName?: string;
  /** Reads the payload pull secret (decoded .dockerconfigjson), each time it is needed. */
  pullSecret?: () => Promise<DockerConfigSource | undefined>;
}

/** What messages say about the operator's payload credentials. */
const wording = {
  given: 'the payload pull secret credentials',
  missing: 'the operator has no payload pull secret with credentials for it',
  fix: 'name a kubernetes.io/dockerconfigjson Secret of the operator namespace with --payload-pull-secret (chart: payload.registry.pullSecret)',
};

/** What one registry payload source keeps between loads. */
interface SourceState {
  options: RegistryPayloadSourceOptions;
  ref: PinnedPayloadReference;
  /** The pinned reference as text, for messages. */
  reference: string;
  resolving: Promise<ResolvedPayload> | undefined;
  built: { key: string; value: LoadedPayload } | undefined;
  fetching: Map<string, Promise<PayloadFileOnDisk>>;
  /** `reachRegistry` of every LoadedPayload this source builds. */
  reachRegistry: () => Promise<void>;
}

/** A source of LoadedPayload for `options.reference`; see the module comment. */
export function registryPayloadSource(
  options: RegistryPayloadSourceOptions,
): () => Promise<LoadedPayload> {
  const state: SourceState = {
    options,
    ref: options.reference,
    reference: formatPinnedReference(options.reference),
    resolving: undefined,
    built: undefined,
    fetching: new Map(),
    reachRegistry: () => reachRegistry(state),
  };
  return function loadRegistryPayload(): Promise<LoadedPayload> {
    return loadPayload(state);
  };
}

/** The payload with its services manifest for the configuration as it is now (built once per key). */
async function loadPayload(state: SourceState): Promise<LoadedPayload> {
  const { options, ref, fetching } = state;
  const resolved = await resolve(state);
  const priority = options.config().hosts.kubelet.priorityClass;
  const hostSettings = options.apiServer
    ? nodeHostSettings(options.config(), options.apiServer())
    : undefined;
  const nodeNetwork = options.network?.();
  const key = `${priority}:${JSON.stringify(hostSettings)}:${JSON.stringify(nodeNetwork)}`;
  if (state.built?.key === key) return state.built.value;
  const { payload } = resolved;
  const value: LoadedPayload = {
    // Where hosts that reach the registry pull it (published in winfleet-join).
    registry: {
      repository: `${ref.registry}/${ref.repository}`,
      digest: ref.digest,
      ...(options.plainHttp ? { insecure: true } : {}),
      ...(options.pullSecretName ? { pullSecretName: options.pullSecretName } : {}),
    },
    payload,
    manifest: servicesManifestFor(payload, {
      kubeletPriorityClass: priority,
      ...(hostSettings ? { hostSettings } : {}),
      ...(nodeNetwork ? { network: nodeNetwork } : {}),
    }),
    totalBytes: resolved.manifest.layers.reduce((sum, l) => sum + l.size, 0),
    reachRegistry: state.reachRegistry,
    // One fetch per file at a time, however many hosts need it at once.
    fileOnDisk: (file) => {
      let fetch = fetching.get(file.sha256);
      if (!fetch) {
        fetch = fetchFile(state, resolved, file).finally(() => fetching.delete(file.sha256));
        fetching.set(file.sha256, fetch);
      }
      return fetch;
    },
  };
  state.built = { key, value };
  return value;
}

/** The targets and a client for them, with the mirrors and credentials as they are now. */
async function connect(
  state: SourceState,
): Promise<{ registry: PayloadRegistry; targets: PayloadTarget[] }> {
  const { options, ref } = state;
  const secret = await options.pullSecret?.();
  const mirrors = options.config().images.mirrors;
  const own = Object.entries(mirrors).find(([host]) => canonicalRegistry(host) === ref.registry);
  const targets = payloadTargets(ref, {
    ...(own ? { mirrors: own[1] } : {}),
    ...(options.plainHttp ? { plainHttp: true } : {}),
    ...(options.caBundle ? { caBundle: options.caBundle } : {}),
    ...(secret ? { credentials: [secret] } : {}),
    wording,
  });
  const registry = new PayloadRegistry({
    trustedOrigins: targets.map((t) => t.endpoint.origin),
    userAgent: 'winfleet-operator',
  });
  return { registry, targets };
}

/** The artifact resolved and verified (once; a failure is tried again next call). */
function resolve(state: SourceState): Promise<ResolvedPayload> {
  state.resolving ??= resolveAndPrune(state);
  const resolving = state.resolving;
  // A failure is not kept: the next call asks the registry again.
  resolving.catch(() => {
    state.resolving = undefined;
  });
  return resolving;
}

/** Resolves the artifact and prunes the cache of other payloads' files. */
async function resolveAndPrune(state: SourceState): Promise<ResolvedPayload> {
  const { registry, targets } = await connect(state);
  try {
    const resolved = await resolvePayload(registry, targets, state.ref);
    await pruneCache(state.options.cacheDir, new Set(resolved.payload.files.map((f) => f.sha256)));
    return resolved;
  } finally {
    registry.close();
  }
}

/** One payload file in the download cache: there already, or pulled and verified into it. */
async function fetchFile(
  state: SourceState,
  resolved: ResolvedPayload,
  file: PayloadFile,
): Promise<PayloadFileOnDisk> {
  const { options, ref, reference } = state;
  const layer = resolved.manifest.layers.find((l) => l.name === file.name);
  if (!layer)
    throw new WinfleetError('WF_PAYLOAD_INVALID', `${reference} has no payload file ${file.name}`);
  const path = join(options.cacheDir, file.sha256);
  const done: PayloadFileOnDisk = {
    path,
    size: layer.size,
    sha256: file.sha256,
    release: async () => {},
  };
  const cached = await knownHash(path).catch(() => undefined);
  if (cached?.sha256 === file.sha256) return done;
  await mkdir(options.cacheDir, { recursive: true }).catch((error: Error) => {
    throw new WinfleetError(
      'WF_PAYLOAD_DOWNLOAD',
      `Cannot create the payload cache ${options.cacheDir}: ${error.message}; give --payload-cache-dir a writable directory with room for the payload`,
    );
  });
  const { registry, targets } = await connect(state);
  try {
    await pullLayer(registry, targets, ref, layer, (chunks) => saveVerified(chunks, path));
  } catch (error) {
    if (error instanceof WinfleetError) throw error;
    throw new WinfleetError(
      'WF_PAYLOAD_DOWNLOAD',
      `Cannot keep payload file ${file.name} in the payload cache ${options.cacheDir}: ${(error as Error).message}; give --payload-cache-dir a writable directory with room for the payload`,
      { cause: error },
    );
  } finally {
    registry.close();
  }
  return done;
}

/** Whether the registry answers for the artifact now (resolves it afresh). */
async function reachRegistry(state: SourceState): Promise<void> {
  const { registry, targets } = await connect(state);
  try {
    await resolvePayload(registry, targets, state.ref);
  } finally {
    registry.close();
  }
}

/** Removes cached files of other payloads, and temporary files of fetches that did not end. */
async function pruneCache(dir: string, keep: ReadonlySet<string>): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch {
    return;
  }
  for (const entry of entries) {
    if (!keep.has(entry)) await rm(join(dir, entry), { force: true, recursive: true });
  }
}
