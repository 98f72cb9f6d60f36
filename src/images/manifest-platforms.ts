/**
 * Reading OCI and Docker manifests: an image index / manifest list names a platform
 * (os, architecture, os.version) per entry; an image manifest points at a config blob that
 * carries the same fields. Pure functions over bytes: anything that is not a well-formed
 * manifest fails with reason "invalid-manifest" and a message naming the field.
 */
import { checkDigest } from './image-reference.ts';
import { type RegistryLookupError, registryLookupError } from './registry-lookup-error.ts';

/** @package */
export const mediaTypes = {
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  dockerManifestList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  ociConfig: 'application/vnd.oci.image.config.v1+json',
  dockerConfig: 'application/vnd.docker.container.image.v1+json',
} as const;

const indexTypes = new Set<string>([mediaTypes.ociIndex, mediaTypes.dockerManifestList]);
const manifestTypes = new Set<string>([mediaTypes.ociManifest, mediaTypes.dockerManifest]);

/** The Accept header for manifests: indexes first, then single-platform manifests. */
export const manifestAccept = [
  mediaTypes.ociIndex,
  mediaTypes.dockerManifestList,
  mediaTypes.ociManifest,
  mediaTypes.dockerManifest,
].join(', ');

/** The platform an image (or one entry of an index) runs on. */
export interface ImagePlatform {
  os: string;
  architecture: string;
  /** Windows build with revision, e.g. "10.0.20348.2582"; absent when the image does not say. */
  osVersion?: string;
  variant?: string;
  /** Digest of the single-platform manifest this platform came from. */
  manifestDigest?: string;
}

/** A content descriptor: what a manifest points to. */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}

/** An index entry with the platform it declares, if any. */
export interface IndexEntry extends Descriptor {
  platform?: ImagePlatform;
  /** Provenance/SBOM attestations and other non-runnable entries, which are skipped. */
  attestation: boolean;
}

export type ParsedManifest =
  | { kind: 'index'; mediaType: string; entries: IndexEntry[] }
  | { kind: 'image'; mediaType: string; config: Descriptor; layers: Descriptor[] };

function bad(what: string, problem: string): RegistryLookupError {
  return registryLookupError('invalid-manifest', `Invalid ${what}: ${problem}`);
}

function parseJsonObject(body: Uint8Array, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(body).toString('utf8'));
  } catch {
    // JSON.parse quotes the text around the error: the registry's words, which end up in
    // admission warnings, so only the fact is reported.
    throw bad(what, 'not JSON');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw bad(what, 'not a JSON object');
  }
  return value as Record<string, unknown>;
}

function field<T extends 'string' | 'number' | 'object'>(
  record: Record<string, unknown>,
  name: string,
  type: T,
  what: string,
  required: boolean,
):
  | (T extends 'string' ? string : T extends 'number' ? number : Record<string, unknown>)
  | undefined {
  const value = record[name];
  if (value === undefined || value === null) {
    if (required) throw bad(what, `"${name}" is missing`);
    return undefined;
  }
  const ok =
    type === 'object' ? typeof value === 'object' && !Array.isArray(value) : typeof value === type;
  if (!ok)
    throw bad(
      what,
      `"${name}" must be a ${type === 'object' ? 'JSON object' : type}, got ${Array.isArray(value) ? 'an array' : `a ${typeof value}`}`,
    );
  return value as never;
}

function parseDescriptor(record: Record<string, unknown>, what: string): Descriptor {
  const mediaType = field(record, 'mediaType', 'string', what, true)!;
  const digest = field(record, 'digest', 'string', what, true)!;
  const size = field(record, 'size', 'number', what, true)!;
  try {
    checkDigest(digest);
  } catch {
    throw bad(what, `"digest" "${digest}" is not "sha256:<64 hex>" (or sha384/sha512)`);
  }
  if (!Number.isSafeInteger(size) || size < 0)
    throw bad(what, `"size" ${size} is not a byte count`);
  return { mediaType, digest, size };
}

/** Reads os, architecture, os.version and variant from a platform object or image config. */
export function parsePlatform(record: Record<string, unknown>, what: string): ImagePlatform {
  const os = field(record, 'os', 'string', what, true)!;
  const architecture = field(record, 'architecture', 'string', what, true)!;
  const osVersion = field(record, 'os.version', 'string', what, false);
  const variant = field(record, 'variant', 'string', what, false);
  if (os === '') throw bad(what, '"os" is empty');
  if (architecture === '') throw bad(what, '"architecture" is empty');
  return {
    os,
    architecture,
    ...(osVersion ? { osVersion } : {}),
    ...(variant ? { variant } : {}),
  };
}

/**
 * Parses a manifest body. The media type is the body's own "mediaType", else the Content-Type
 * it was served with, else what its fields say; Docker schema 1 and unknown types are refused.
 * @package
 */
export function parseManifest(
  body: Uint8Array,
  contentType: string | undefined,
  what = 'manifest',
): ParsedManifest {
  const doc = parseJsonObject(body, what);
  const declared = field(doc, 'mediaType', 'string', what, false);
  const served = contentType?.split(';')[0]?.trim().toLowerCase();
  const schemaVersion = doc.schemaVersion;
  if (schemaVersion !== 2) {
    throw bad(
      what,
      `"schemaVersion" is ${JSON.stringify(schemaVersion)}; only schema 2 (OCI and Docker v2) manifests are supported`,
    );
  }
  let mediaType = declared ?? served ?? '';
  if (!indexTypes.has(mediaType) && !manifestTypes.has(mediaType)) {
    // OCI allows omitting mediaType; some registries serve a generic Content-Type.
    if (declared !== undefined)
      throw bad(what, `media type "${declared}" is not an image index or manifest`);
    if (Array.isArray(doc.manifests)) mediaType = mediaTypes.ociIndex;
    else if (doc.config !== undefined) mediaType = mediaTypes.ociManifest;
    else throw bad(what, `media type "${served ?? ''}" is not an image index or manifest`);
  }
  if (indexTypes.has(mediaType)) {
    if (!Array.isArray(doc.manifests)) throw bad(what, '"manifests" must be a list');
    const entries = doc.manifests.map((raw, i): IndexEntry => {
      const where = `${what} entry ${i}`;
      if (!raw || typeof raw !== 'object' || Array.isArray(raw))
        throw bad(where, 'not a JSON object');
      const entry = raw as Record<string, unknown>;
      const descriptor = parseDescriptor(entry, where);
      const platformRecord = field(entry, 'platform', 'object', where, false);
      const annotations = field(entry, 'annotations', 'object', where, false) ?? {};
      const platform = platformRecord
        ? parsePlatform(platformRecord, `${where} platform`)
        : undefined;
      const attestation =
        annotations['vnd.docker.reference.type'] === 'attestation-manifest' ||
        (platform?.os === 'unknown' && platform.architecture === 'unknown');
      return {
        ...descriptor,
        ...(platform ? { platform: { ...platform, manifestDigest: descriptor.digest } } : {}),
        attestation,
      };
    });
    return { kind: 'index', mediaType, entries };
  }
  const configRecord = field(doc, 'config', 'object', what, true)!;
  const config = parseDescriptor(configRecord, `${what} config`);
  if (!Array.isArray(doc.layers)) throw bad(what, '"layers" must be a list');
  const layers = doc.layers.map((raw, i) => {
    const where = `${what} layer ${i}`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw))
      throw bad(where, 'not a JSON object');
    return parseDescriptor(raw as Record<string, unknown>, where);
  });
  return { kind: 'image', mediaType, config, layers };
}

/** Whether a descriptor's media type is an index or a single-platform manifest. */
export function isIndexType(mediaType: string): boolean {
  return indexTypes.has(mediaType);
}

/** @package */
export function isManifestType(mediaType: string): boolean {
  return manifestTypes.has(mediaType);
}

/** Reads the platform of an image config blob (os, architecture, os.version, variant). */
export function parseImageConfig(body: Uint8Array, what = 'image config'): ImagePlatform {
  return parsePlatform(parseJsonObject(body, what), what);
}
