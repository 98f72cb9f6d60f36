/**
 * A payload directory pushed to a test registry as winfleet's payload artifact (issue 15,
 * section A: payload.json as the config, one layer per file titled with its name), with plain
 * HTTP requests — for tests of what reads the artifact (join-command's agent hash), without the
 * push code under test. Returns the pinned repository and digest.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Payload } from '../../src/payload/payload.ts';

const digestOf = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

async function pushBlob(base: string, bytes: Buffer): Promise<string> {
  const digest = digestOf(bytes);
  const start = await fetch(`${base}/blobs/uploads/`, { method: 'POST' });
  if (start.status !== 202) throw new Error(`POST blob upload: HTTP ${start.status}`);
  const location = new URL(start.headers.get('location')!, base);
  location.searchParams.set('digest', digest);
  const put = await fetch(location, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream' },
    body: bytes,
  });
  if (put.status !== 201) throw new Error(`PUT blob ${digest}: HTTP ${put.status}`);
  return digest;
}

/** Pushes `dir` (payload.json and its files) to `registryUrl`/`repository`; its manifest digest. */
export async function pushTestPayloadArtifact(
  registryUrl: string,
  repository: string,
  dir: string,
  payload: Payload,
): Promise<{ digest: string; manifest: Buffer }> {
  const base = `${registryUrl}/v2/${repository}`;
  const config = await readFile(join(dir, 'payload.json'));
  const configDigest = await pushBlob(base, config);
  const layers = [];
  for (const file of payload.files) {
    const bytes = await readFile(join(dir, file.name));
    const digest = await pushBlob(base, bytes);
    layers.push({
      mediaType: 'application/vnd.winfleet.payload.file.v1',
      digest,
      size: bytes.length,
      annotations: { 'org.opencontainers.image.title': file.name },
    });
  }
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      artifactType: 'application/vnd.winfleet.payload.v1',
      config: {
        mediaType: 'application/vnd.winfleet.payload.config.v1+json',
        digest: configDigest,
        size: config.length,
      },
      layers,
    }),
  );
  const put = await fetch(`${base}/manifests/${payload.version}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
    body: manifest,
  });
  if (put.status !== 201) throw new Error(`PUT manifest: HTTP ${put.status} ${await put.text()}`);
  return { digest: digestOf(manifest), manifest };
}
