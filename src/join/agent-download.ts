/**
 * Where a join script downloads winfleet-agent.exe from, and the SHA-256 it checks: the layer
 * of that name in the payload artifact winfleet-join names (a layer's digest is its file's
 * SHA-256), at the registry's blob URL, or at `--agent-url` with the same hash.
 *
 * The artifact's manifest is read by the digest winfleet-join carries and its bytes are
 * checked against it before anything in it is used: a registry (or anyone between) cannot
 * hand over another agent's hash. Read anonymously; the script downloads anonymously too, so a
 * registry that needs credentials for the blob needs --agent-url.
 */
import { createHash } from 'node:crypto';
import { WinfleetError } from '../errors/catalog.ts';
import { agentFileName } from '../payload/payload.ts';
import type { JoinPayloadSource } from './join-info.ts';

/** The media types of winfleet's payload artifact (issue 15, section A). */
const manifestMediaType = 'application/vnd.oci.image.manifest.v1+json';
const artifactType = 'application/vnd.winfleet.payload.v1';
const fileMediaType = 'application/vnd.winfleet.payload.file.v1';
const titleAnnotation = 'org.opencontainers.image.title';
const maxManifestBytes = 4 * 1024 * 1024;

export interface AgentDownload {
  url: string;
  /** 64 lower-case hex digits. */
  sha256: string;
}

function fail(message: string): WinfleetError {
  return new WinfleetError('WF_PAYLOAD_DOWNLOAD', message);
}

/** "https://host[:port]/v2/<path>" of a "host[:port]/path" repository. */
function repositoryUrl(source: JoinPayloadSource): string {
  const slash = source.repository.indexOf('/');
  const host = source.repository.slice(0, slash);
  const path = source.repository.slice(slash + 1);
  return `${source.insecure ? 'http' : 'https'}://${host}/v2/${path}`;
}

/** The agent's layer digest from the manifest's bytes, checked strictly. */
export function agentLayerDigest(bytes: Buffer, source: JoinPayloadSource): string {
  const where = `payload artifact ${source.repository}@${source.digest}`;
  const actual = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  if (actual !== source.digest) {
    throw fail(
      `The registry served a manifest whose digest is ${actual}, not ${where}'s; refusing it`,
    );
  }
  let manifest: {
    mediaType?: unknown;
    artifactType?: unknown;
    layers?: { mediaType?: unknown; digest?: unknown; annotations?: Record<string, unknown> }[];
  };
  try {
    manifest = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw fail(`${where}: its manifest is not JSON`);
  }
  if (manifest.mediaType !== manifestMediaType || manifest.artifactType !== artifactType) {
    throw fail(
      `${where} is not a winfleet payload (artifactType ${JSON.stringify(manifest.artifactType)}); push one with winfleet payload push`,
    );
  }
  const layers = (Array.isArray(manifest.layers) ? manifest.layers : []).filter(
    (layer) => layer?.annotations?.[titleAnnotation] === agentFileName,
  );
  const digest = layers[0]?.digest;
  if (
    layers.length !== 1 ||
    layers[0]?.mediaType !== fileMediaType ||
    typeof digest !== 'string' ||
    !/^sha256:[0-9a-f]{64}$/.test(digest)
  ) {
    throw fail(
      `${where} has ${layers.length === 1 ? 'no usable' : layers.length} ${agentFileName} layer${layers.length === 1 ? '' : 's'}; the payload must carry the agent once`,
    );
  }
  return digest;
}

/** The response body, refused past maxManifestBytes without reading further. */
async function boundedBody(response: Response, url: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.length;
    if (size > maxManifestBytes) {
      // Leaving the loop cancels the stream: nothing more is read.
      throw fail(`${url} is more than ${maxManifestBytes} bytes, too large for a manifest`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/**
 * The agent's download for a join script: `agentUrl` when given, else the registry's blob URL;
 * the hash from the artifact's manifest either way.
 */
export async function agentDownload(
  source: JoinPayloadSource,
  options: { agentUrl?: string; signal?: AbortSignal } = {},
): Promise<AgentDownload> {
  const base = repositoryUrl(source);
  const url = `${base}/manifests/${source.digest}`;
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: manifestMediaType },
      signal: options.signal ?? AbortSignal.timeout(30_000),
    });
  } catch (error) {
    throw fail(`Cannot reach the payload registry at ${url}: ${(error as Error).message}`);
  }
  if (response.status === 401 || response.status === 403) {
    throw fail(
      `The payload registry asks for credentials to read ${url} (HTTP ${response.status}); winfleet join-command reads the payload anonymously, as the join script downloads the agent: allow anonymous pulls of ${source.repository}, or give --agent-url`,
    );
  }
  if (!response.ok) throw fail(`The payload registry answered HTTP ${response.status} for ${url}`);
  const digest = agentLayerDigest(await boundedBody(response, url), source);
  return {
    url: options.agentUrl ?? `${base}/blobs/${digest}`,
    sha256: digest.slice('sha256:'.length),
  };
}
