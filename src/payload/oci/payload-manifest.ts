/**
 * The manifest of a payload artifact (media-types.ts): built from payload.json and its files
 * for a push, and parsed strictly when read from a registry. The parse takes nothing on trust:
 * the manifest's bytes must hash to the digest asked for, every field must be exactly what
 * winfleet writes (media types, artifactType, no URLs, no embedded data, no subject), sizes stay
 * within `payloadLimits`, and each layer's title must be a file name safe on Windows and
 * unique, since it names a file the agent writes under C:\k\winfleet\payload.
 */
import { createHash } from 'node:crypto';
import { compileSchema, invalidDocument } from '../../schema/validator.ts';
import {
  type PayloadLimits,
  payloadLimits,
  payloadMediaTypes,
  titleAnnotation,
} from './media-types.ts';

/** One layer: a payload file by name, digest and size. */
export interface PayloadLayer {
  name: string;
  /** "sha256:<64 hex>". */
  digest: string;
  size: number;
}

/** A parsed payload manifest. */
export interface PayloadManifest {
  /** The manifest's own digest (the one asked for). */
  digest: string;
  config: { digest: string; size: number };
  layers: PayloadLayer[];
  annotations: Record<string, string>;
}

/** The `sha256:<hex>` digest of `bytes`. */
export function sha256Digest(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** A file to list in a manifest: its name, SHA-256 (hex, as payload.json has it) and size. */
export interface ManifestFileEntry {
  name: string;
  sha256: string;
  size: number;
}

/**
 * The manifest of a payload whose payload.json is `config` (exact bytes) and whose files are
 * `files`, in that order; its bytes are what is pushed and its digest what pins it.
 */
export function buildPayloadManifest(
  config: Uint8Array,
  files: readonly ManifestFileEntry[],
  annotations: Record<string, string> = {},
): { bytes: Buffer; digest: string } {
  const manifest = {
    schemaVersion: 2,
    mediaType: payloadMediaTypes.manifest,
    artifactType: payloadMediaTypes.artifact,
    config: {
      mediaType: payloadMediaTypes.config,
      digest: sha256Digest(config),
      size: config.length,
    },
    layers: files.map((f) => ({
      mediaType: payloadMediaTypes.file,
      digest: `sha256:${f.sha256}`,
      size: f.size,
      annotations: { [titleAnnotation]: f.name },
    })),
    ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
  };
  const bytes = Buffer.from(JSON.stringify(manifest));
  return { bytes, digest: sha256Digest(bytes) };
}

const digestPattern = '^sha256:[0-9a-f]{64}$';
/** What payload.json allows for a file name; the checks below narrow it for Windows. */
export const fileNamePattern = /^[A-Za-z0-9_.-]+$/;
const maxFileNameLength = 255;
/** Names Windows keeps for devices, with or without an extension ("nul.exe" opens NUL). */
const reservedNames = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$/i;

/**
 * Why `name` cannot name a payload file on Windows, or undefined when it can: the letters
 * payload.json allows, at most 255 of them, not "." or "..", no trailing dot (Windows drops it,
 * so "kubelet.exe." would be "kubelet.exe"), not a device name.
 * @package
 */
export function fileNameProblem(name: string): string | undefined {
  if (!fileNamePattern.test(name))
    return 'must be letters, digits, ".", "_" or "-" (no path separators, drive letters or spaces)';
  if (name.length > maxFileNameLength) return `must be at most ${maxFileNameLength} characters`;
  if (name === '.' || name === '..') return 'must name a file, not "." or ".."';
  if (name.endsWith('.')) return 'must not end with "." (Windows drops it)';
  if (reservedNames.test(name)) return 'is a name Windows keeps for a device';
  return undefined;
}

function manifestSchema(limits: PayloadLimits) {
  const descriptor = (mediaType: string, maxSize: number, minSize: number) => ({
    type: 'object',
    required: ['mediaType', 'digest', 'size'],
    properties: {
      mediaType: { enum: [mediaType] },
      digest: { type: 'string', pattern: digestPattern },
      size: { type: 'integer', minimum: minSize, maximum: maxSize },
    },
  });
  const config = descriptor(payloadMediaTypes.config, limits.maxConfigBytes, 2);
  const layer = descriptor(payloadMediaTypes.file, limits.maxFileBytes, 0);
  return {
    type: 'object',
    additionalProperties: false,
    required: ['schemaVersion', 'mediaType', 'artifactType', 'config', 'layers'],
    properties: {
      schemaVersion: { enum: [2] },
      mediaType: { enum: [payloadMediaTypes.manifest] },
      artifactType: { enum: [payloadMediaTypes.artifact] },
      config: { ...config, additionalProperties: false },
      layers: {
        type: 'array',
        minItems: 1,
        maxItems: limits.maxFiles,
        items: {
          ...layer,
          additionalProperties: false,
          required: [...layer.required, 'annotations'],
          properties: {
            ...layer.properties,
            annotations: {
              type: 'object',
              additionalProperties: false,
              required: [titleAnnotation],
              properties: { [titleAnnotation]: { type: 'string', maxLength: maxFileNameLength } },
            },
          },
        },
      },
      annotations: {
        type: 'object',
        maxProperties: 32,
        additionalProperties: { type: 'string', maxLength: 1024 },
      },
    },
  } as const;
}

interface RawManifest {
  config: { digest: string; size: number };
  layers: { digest: string; size: number; annotations: Record<string, string> }[];
  annotations?: Record<string, string>;
}

const validators = new Map<string, (value: unknown, document: string) => RawManifest>();

function validatorFor(limits: PayloadLimits) {
  const key = JSON.stringify(limits);
  let validate = validators.get(key);
  if (!validate) {
    validate = compileSchema<RawManifest>(manifestSchema(limits), {
      code: 'WF_PAYLOAD_INVALID',
      document: 'payload artifact manifest',
    });
    validators.set(key, validate);
  }
  return validate;
}

/** `bytes` as UTF-8 JSON; throws WF_PAYLOAD_INVALID naming `document`. */
export function parseJsonBytes(bytes: Uint8Array, document: string): unknown {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw invalidDocument('WF_PAYLOAD_INVALID', document, ['(top level): not UTF-8 text']);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw invalidDocument('WF_PAYLOAD_INVALID', document, [
      `(top level): not JSON (${(error as Error).message})`,
    ]);
  }
}

/**
 * Parses the manifest `bytes` that a registry served for `digest`, strictly (see the module
 * comment); `document` names it in messages, e.g. `payload artifact reg/repo@sha256:…`.
 * Throws WF_PAYLOAD_INVALID listing every problem.
 */
export function parsePayloadManifest(
  bytes: Uint8Array,
  digest: string,
  document: string,
  limits: PayloadLimits = payloadLimits,
): PayloadManifest {
  if (bytes.length > limits.maxManifestBytes) {
    throw invalidDocument('WF_PAYLOAD_INVALID', document, [
      `(top level): the manifest has ${bytes.length} bytes, more than the ${limits.maxManifestBytes} allowed`,
    ]);
  }
  const actual = sha256Digest(bytes);
  if (actual !== digest) {
    throw invalidDocument('WF_PAYLOAD_INVALID', document, [
      `(top level): the manifest's bytes hash to ${actual}, not to the ${digest} asked for; the registry serves something else under that digest`,
    ]);
  }
  const raw = validatorFor(limits)(parseJsonBytes(bytes, document), document);
  const problems: string[] = [];
  const seen = new Map<string, number>();
  const layers = raw.layers.map((layer, i) => {
    const name = layer.annotations[titleAnnotation]!;
    const problem = fileNameProblem(name);
    if (problem) problems.push(`layers.${i}.annotations.${titleAnnotation}: "${name}" ${problem}`);
    // Windows file names are case-insensitive: "Kubelet.exe" and "kubelet.exe" are one file.
    const earlier = seen.get(name.toLowerCase());
    if (earlier !== undefined)
      problems.push(
        `layers.${i}.annotations.${titleAnnotation}: "${name}" is also the title of layers.${earlier}; each file has one layer`,
      );
    else seen.set(name.toLowerCase(), i);
    return { name, digest: layer.digest, size: layer.size };
  });
  if (problems.length > 0) throw invalidDocument('WF_PAYLOAD_INVALID', document, problems);
  return {
    digest,
    config: { digest: raw.config.digest, size: raw.config.size },
    layers,
    annotations: raw.annotations ?? {},
  };
}
