/**
 * The agent pulls its payload from the registry itself, so that the operator sends no
 * binaries and its bandwidth does not grow with the fleet. For every file of a services
 * manifest (and any extra payload file asked for, such as the agent's service shim) whose
 * staged copy under C:\k\winfleet\payload is missing or has another SHA-256, the file's layer
 * is streamed from the payload artifact by digest — from the mirrors first, then the registry
 * — hashed and counted as it arrives, into a temporary file that is renamed to the file's name
 * only when it is whole and verified. No payload file is held in memory, and nothing
 * unverified is ever left under a file's name.
 *
 * The artifact's manifest and payload.json are read first (by the digest the winfleet-join
 * ConfigMap pins, and verified strictly, src/payload/oci): a file is pulled only when the
 * artifact carries it under the SHA-256 the services manifest gives, and no larger than the
 * artifact says. A registry that is down or refuses is WF_PAYLOAD_DOWNLOAD, which the caller
 * retries; content that does not match its digest is WF_PAYLOAD_INVALID, which it does not.
 */
import { WinfleetError } from '../errors/catalog.ts';
import type { DockerConfigSource } from '../images/docker-config.ts';
import type { JoinPayloadSource } from '../join/join-info.ts';
import type { PayloadLayer } from '../payload/oci/payload-manifest.ts';
import { parsePinnedReference } from '../payload/oci/payload-reference.ts';
import { PayloadRegistry } from '../payload/oci/payload-registry.ts';
import { payloadTargets } from '../payload/oci/payload-targets.ts';
import { pullLayer, resolvePayload } from '../payload/oci/resolve-payload.ts';
import type { Payload } from '../payload/payload.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import type { HostOS } from './host-os.ts';

export interface PayloadPullOptions {
  /**
   * The decoded `.dockerconfigjson` of the payload pull secret (JoinPayloadSource
   * pullSecretName), with credentials for the registry and its mirrors. None: anonymous.
   */
  pullSecret?: DockerConfigSource;
  /** PEM CA certificates trusted for the registry and its mirrors, besides Node's roots. */
  caBundle?: string;
  /** Payload files to stage besides the manifest's, by name (e.g. "winfleet-service.exe"). */
  extraFiles?: readonly string[];
  signal?: AbortSignal;
  /** A connection silent this long fails (default 60 s). */
  idleTimeoutMs?: number;
}

/** What a pull did. */
export interface PayloadPullResult {
  /** The files downloaded, by name (the others were staged already). */
  downloaded: string[];
  /** Bytes downloaded. */
  bytes: number;
  /** payload.json of the artifact. */
  payload: Payload;
}

/** What the agent's messages say about the payload pull secret. */
const wording = {
  given: 'the payload pull secret credentials',
  missing: 'the payload pull secret has none for it',
  fix: "name a kubernetes.io/dockerconfigjson Secret with credentials for it as the operator's payload pull secret (--payload-pull-secret; chart: payload.registry.pullSecret)",
};

/** Pulls the files of `manifest` (and `extraFiles`) that are not staged; see the module comment. */
export async function pullPayload(
  host: HostOS,
  manifest: ServicesManifest,
  source: JoinPayloadSource,
  options: PayloadPullOptions = {},
): Promise<PayloadPullResult> {
  let ref: ReturnType<typeof parsePinnedReference>;
  try {
    ref = parsePinnedReference(`${source.repository}@${source.digest}`, 'winfleet-join payload');
  } catch (error) {
    throw new WinfleetError(
      'WF_JOIN_INFO_INVALID',
      `${(error as Error).message}; the operator writes it: check its --payload-image`,
    );
  }
  const caBundle = options.caBundle;
  const targets = payloadTargets(ref, {
    mirrors: source.mirrors.map((m) => ({ ...m, ...(caBundle ? { caBundle } : {}) })),
    ...(source.insecure ? { plainHttp: true } : {}),
    ...(caBundle ? { caBundle } : {}),
    ...(options.pullSecret ? { credentials: [options.pullSecret] } : {}),
    wording,
  });
  const registry = new PayloadRegistry({
    trustedOrigins: targets.map((t) => t.endpoint.origin),
    userAgent: 'winfleet-agent',
    ...(options.idleTimeoutMs ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
  });
  try {
    const resolved = await resolvePayload(registry, targets, ref, options.signal);
    const wanted = layersFor(manifest, options.extraFiles ?? [], resolved.manifest.layers, ref);
    const missing: PayloadLayer[] = [];
    for (const layer of wanted) {
      const staged = `${hostPaths.payload}\\${layer.name}`;
      if (`sha256:${await host.fileSha256(staged)}` !== layer.digest) missing.push(layer);
    }
    await checkFreeSpace(host, missing);
    const result: PayloadPullResult = { downloaded: [], bytes: 0, payload: resolved.payload };
    for (const layer of missing) {
      const staged = `${hostPaths.payload}\\${layer.name}`;
      await removeLeftovers(host, layer.name);
      result.bytes += await pullLayer(
        registry,
        targets,
        ref,
        layer,
        (chunks) => host.writeFileFromStream(staged, chunks),
        options.signal,
      );
      result.downloaded.push(layer.name);
    }
    return result;
  } finally {
    registry.close();
  }
}

/**
 * The layers to stage: each manifest file's, which must carry the SHA-256 the manifest gives,
 * and each extra file's. Throws WF_PAYLOAD_INVALID when the artifact lacks one.
 */
function layersFor(
  manifest: ServicesManifest,
  extraFiles: readonly string[],
  layers: readonly PayloadLayer[],
  ref: { registry: string; repository: string; digest: string },
): PayloadLayer[] {
  const byName = new Map(layers.map((l) => [l.name, l]));
  const artifact = `the payload artifact ${ref.registry}/${ref.repository}@${ref.digest}`;
  const fix =
    "the operator publishes both from one payload: check that the operator's --payload-image is the payload this services manifest came from";
  const wanted = new Map<string, PayloadLayer>();
  for (const file of manifest.files) {
    const layer = byName.get(file.payload);
    if (!layer || layer.digest !== `sha256:${file.sha256}`) {
      throw new WinfleetError(
        'WF_PAYLOAD_INVALID',
        `Services manifest ${manifest.version} names payload file ${file.payload} with SHA-256 ${file.sha256}, and ${artifact} ${layer ? `has it with ${layer.digest}` : 'has no such file'}; ${fix}`,
      );
    }
    wanted.set(layer.name, layer);
  }
  for (const name of extraFiles) {
    const layer = byName.get(name);
    if (!layer)
      throw new WinfleetError(
        'WF_PAYLOAD_INVALID',
        `${artifact} has no payload file ${name}; rebuild the payload with make payload and push it again`,
      );
    wanted.set(layer.name, layer);
  }
  return [...wanted.values()];
}

/** Refuses a pull that cannot fit on the payload's volume, before a byte is written. */
async function checkFreeSpace(host: HostOS, layers: readonly PayloadLayer[]): Promise<void> {
  const need = layers.reduce((sum, l) => sum + l.size, 0);
  if (need === 0) return;
  const free = await host.freeDiskBytes(hostPaths.payload);
  if (free < need)
    throw new WinfleetError(
      'WF_HOST_DISK_FULL',
      `The payload files to pull take ${need} bytes and the volume of ${hostPaths.payload} has ${free} free; free some space on it`,
    );
}

/** Temporary files of an earlier pull of `name` that did not finish (the agent was stopped). */
async function removeLeftovers(host: HostOS, name: string): Promise<void> {
  const prefix = `${name.toLowerCase()}.`;
  for (const entry of (await host.listDirectory(hostPaths.payload)) ?? []) {
    const lower = entry.toLowerCase();
    if (lower.startsWith(prefix) && lower.endsWith('.tmp'))
      await host.removeFileIfUnused(`${hostPaths.payload}\\${entry}`);
  }
}
