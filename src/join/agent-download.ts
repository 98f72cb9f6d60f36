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
import { WinfleetError } from '../errors/catalog.ts';
import { isRefusedStatus } from '../net/http-status.ts';
import { payloadLimits, payloadMediaTypes } from '../payload/oci/media-types.ts';
import { parsePayloadManifest } from '../payload/oci/payload-manifest.ts';
import { agentFileName } from '../payload/payload.ts';
import type { JoinPayloadSource } from './join-info.ts';

const { maxManifestBytes } = payloadLimits;

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

/**
 * The agent's layer digest from the manifest's bytes, parsed by the agents' own strict parser
 * (parsePayloadManifest: the bytes must hash to the pinned digest, every field be what
 * winfleet writes, each title unique); WF_PAYLOAD_INVALID when it fails, WF_PAYLOAD_DOWNLOAD
 * when the artifact carries no agent.
 * @package
 */
export function agentLayerDigest(bytes: Buffer, source: JoinPayloadSource): string {
  const where = `payload artifact ${source.repository}@${source.digest}`;
  const manifest = parsePayloadManifest(bytes, source.digest, where);
  const layer = manifest.layers.find((l) => l.name === agentFileName);
  if (!layer) {
    throw fail(`${where} has no ${agentFileName} layer; push a payload that carries the agent`);
  }
  return layer.digest;
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
      headers: { accept: payloadMediaTypes.manifest },
      signal: options.signal ?? AbortSignal.timeout(30_000),
    });
  } catch (error) {
    throw fail(`Cannot reach the payload registry at ${url}: ${(error as Error).message}`);
  }
  if (isRefusedStatus(response.status)) {
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
