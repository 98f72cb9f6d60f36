/**
 * payload.json as the config of a payload artifact: its bytes must be the ones the manifest
 * pins (size and digest), it must be a valid payload.json (payload.ts, the same checks as a
 * payload directory's), and it must list exactly the manifest's layers: each file's name is a
 * layer's title and its SHA-256 that layer's digest. So a layer payload.json does not list, a
 * file with no layer, or a layer with other bytes than payload.json says is refused.
 */
import { invalidDocument } from '../../schema/validator.ts';
import { type Payload, parsePayload } from '../payload.ts';
import type { PayloadManifest } from './payload-manifest.ts';
import { sha256Digest } from './payload-manifest.ts';

/**
 * Parses the config blob `bytes` of `manifest`; `document` names the artifact in messages.
 * Throws WF_PAYLOAD_INVALID listing every problem.
 * @package
 */
export function parsePayloadConfig(
  bytes: Uint8Array,
  manifest: PayloadManifest,
  document: string,
): Payload {
  const where = `payload.json of ${document}`;
  if (bytes.length !== manifest.config.size) {
    throw invalidDocument('WF_PAYLOAD_INVALID', where, [
      `(top level): has ${bytes.length} bytes, the manifest says ${manifest.config.size}`,
    ]);
  }
  const actual = sha256Digest(bytes);
  if (actual !== manifest.config.digest) {
    throw invalidDocument('WF_PAYLOAD_INVALID', where, [
      `(top level): hashes to ${actual}, the manifest says ${manifest.config.digest}`,
    ]);
  }
  const payload = parsePayload(
    Buffer.from(bytes).toString('utf8'),
    where,
    'push the payload again with winfleet payload push',
  );
  const layers = new Map(manifest.layers.map((l) => [l.name, l]));
  const problems: string[] = [];
  for (const [i, file] of payload.files.entries()) {
    const layer = layers.get(file.name);
    if (!layer) {
      problems.push(`files.${i}: "${file.name}" has no layer titled so in the manifest`);
      continue;
    }
    layers.delete(file.name);
    if (layer.digest !== `sha256:${file.sha256}`)
      problems.push(
        `files.${i}: "${file.name}" has SHA-256 ${file.sha256}, its layer the digest ${layer.digest}`,
      );
  }
  for (const name of layers.keys())
    problems.push(`files: the manifest has a layer "${name}" that payload.json does not list`);
  if (problems.length > 0) throw invalidDocument('WF_PAYLOAD_INVALID', where, problems);
  return payload;
}
