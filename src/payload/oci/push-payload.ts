/**
 * `winfleet payload push`'s work: a payload directory into a registry as one artifact
 * (media-types.ts). payload.json is checked as the operator checks it, every file is verified
 * against its SHA-256 as it is hashed from disk (files payload.json lists by URL are downloaded
 * first, into the directory's download cache), blobs the repository has are skipped (HEAD), the
 * others are uploaded streamed from disk, then the manifest goes under the tag, and is read back
 * by digest to prove the registry serves exactly it. Nothing is held whole in memory but
 * payload.json and the manifest.
 */
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { WinfleetError } from '../../errors/catalog.ts';
import type { DockerConfigSource, RegistryCredentials } from '../../images/docker-config.ts';
import type { CredentialWording } from '../../images/registry-auth.ts';
import {
  isRegistryLookupError,
  type LookupFailureReason,
  registryLookupError,
} from '../../images/registry-lookup-error.ts';
import { invalidDocument } from '../../schema/validator.ts';
import { parsePayload } from '../payload.ts';
import { payloadFileOnDisk } from '../payload-file.ts';
import { payloadLimits } from './media-types.ts';
import { buildPayloadManifest, fileNameProblem, sha256Digest } from './payload-manifest.ts';
import { formatPinnedReference } from './payload-reference.ts';
import { PayloadRegistry } from './payload-registry.ts';
import { type PayloadRepository, payloadTargets } from './payload-targets.ts';

export interface PushPayloadOptions {
  /** Credentials for the registry (e.g. --username and --password-stdin); they win. */
  credentials?: RegistryCredentials;
  /** Docker config documents to find credentials in (~/.docker/config.json). */
  dockerConfigs?: readonly DockerConfigSource[];
  /** How messages speak of credentials. */
  wording?: CredentialWording;
  plainHttp?: boolean;
  caBundle?: string;
  /** Told of each file as it is pushed or found in the registry. */
  onFile?: (event: { name: string; size: number; uploaded: boolean }) => void;
  signal?: AbortSignal;
  userAgent?: string;
}

/** What a push did. */
export interface PushedPayload {
  /** "registry/repository@sha256:…": what the operator's --payload-image takes. */
  reference: string;
  digest: string;
  /** Files uploaded (payload.json as "payload.json"). */
  uploaded: string[];
  /** Files the repository had already. */
  present: string[];
}

/** Where a push writes, and how it records each file. */
interface PushContext {
  registry: PayloadRegistry;
  where: Parameters<PayloadRegistry['hasBlob']>[0];
  signal: AbortSignal | undefined;
  /** Records a file as uploaded or found present, and tells `onFile`. */
  note: (name: string, size: number, uploaded: boolean) => void;
}

/** Pushes the payload in `dir` to `to` (a repository and a tag); see the module comment. */
export async function pushPayload(
  dir: string,
  to: PayloadRepository & { tag: string },
  options: PushPayloadOptions = {},
): Promise<PushedPayload> {
  const { config, payload } = await readCheckedPayload(dir);
  const [target] = payloadTargets(to, {
    ...(options.plainHttp ? { plainHttp: true } : {}),
    ...(options.caBundle ? { caBundle: options.caBundle } : {}),
    ...(options.dockerConfigs ? { credentials: options.dockerConfigs } : {}),
    ...(options.wording ? { wording: options.wording } : {}),
  });
  const registry = new PayloadRegistry({
    trustedOrigins: [target!.endpoint.origin],
    ...(options.userAgent ? { userAgent: options.userAgent } : {}),
  });
  const where = {
    ...target!,
    ...(options.credentials ? { credentials: options.credentials } : {}),
  };
  const result: PushedPayload = { reference: '', digest: '', uploaded: [], present: [] };
  const push: PushContext = {
    registry,
    where,
    signal: options.signal,
    note: (name, size, uploaded) => {
      (uploaded ? result.uploaded : result.present).push(name);
      options.onFile?.({ name, size, uploaded });
    },
  };
  try {
    const sizes = await pushFiles(push, dir, payload);
    await pushBlob(push, 'payload.json', config);
    const manifest = buildPayloadManifest(
      config,
      payload.files.map((f, i) => ({ name: f.name, sha256: f.sha256, size: sizes[i]! })),
      { 'org.opencontainers.image.version': payload.version },
    );
    await registry.putManifest(where, to.tag, manifest, push.signal);
    const pinned = { registry: to.registry, repository: to.repository, digest: manifest.digest };
    // Read back by digest: the registry serves exactly these bytes under it.
    await registry.fetchManifest(
      where,
      manifest.digest,
      `payload artifact ${formatPinnedReference(pinned)}`,
      push.signal,
    );
    result.digest = manifest.digest;
    result.reference = formatPinnedReference(pinned);
    return result;
  } catch (error) {
    throw withPushFix(error, `${to.registry}/${to.repository}:${to.tag}`);
  } finally {
    registry.close();
  }
}

/** payload.json of `dir`, its bytes and parsed, with every file name one hosts accept. */
async function readCheckedPayload(dir: string) {
  const file = join(dir, 'payload.json');
  const config = await readConfig(file);
  const payload = parsePayload(
    config.toString('utf8'),
    file,
    'run make payload, or point at a payload directory',
  );
  // Titles become file names on hosts: refuse what the artifact's readers would refuse.
  const problems = payload.files.flatMap((f, i) => {
    const problem = fileNameProblem(f.name);
    return problem ? [`files.${i}.name: "${f.name}" ${problem}`] : [];
  });
  if (problems.length > 0) throw invalidDocument('WF_PAYLOAD_INVALID', file, problems);
  return { config, payload };
}

/** Uploads each payload file the repository lacks (streamed from disk); their sizes in order. */
async function pushFiles(
  push: PushContext,
  dir: string,
  payload: ReturnType<typeof parsePayload>,
): Promise<number[]> {
  const { registry, where, signal, note } = push;
  const sizes: number[] = [];
  for (const entry of payload.files) {
    const onDisk = await payloadFileOnDisk(dir, entry);
    try {
      const digest = `sha256:${onDisk.sha256}`;
      sizes.push(onDisk.size);
      if (await registry.hasBlob(where, digest, signal)) {
        note(entry.name, onDisk.size, false);
        continue;
      }
      await registry.uploadBlob(
        where,
        digest,
        {
          length: onDisk.size,
          open: () => createReadStream(onDisk.path, { highWaterMark: 256 * 1024 }),
        },
        signal,
      );
      note(entry.name, onDisk.size, true);
    } finally {
      await onDisk.release();
    }
  }
  return sizes;
}

/** Uploads a blob held in memory unless the repository has it. */
async function pushBlob(push: PushContext, name: string, bytes: Buffer): Promise<void> {
  const { registry, where, signal, note } = push;
  const digest = sha256Digest(bytes);
  if (await registry.hasBlob(where, digest, signal)) note(name, bytes.length, false);
  else {
    await registry.uploadBlob(where, digest, bytes, signal);
    note(name, bytes.length, true);
  }
}

const pushFixes: Partial<Record<LookupFailureReason, string>> = {
  unreachable:
    'check that the registry is up and its address right (--plain-http for a plain HTTP registry on loopback)',
  timeout: 'check that the registry is up and its address right',
  'tls-error': 'give the CA of its certificate with --ca-file, or check the address',
  'registry-error': 'the registry refused the request; check its logs and its free space',
};

/** A registry failure with what to do about it appended. */
function withPushFix(error: unknown, where: string): unknown {
  if (!isRegistryLookupError(error)) return error;
  const fix = pushFixes[error.details.reason];
  if (!fix) return error;
  return registryLookupError(
    error.details.reason,
    `Cannot push the payload to ${where}: ${error.message}; ${fix}`,
    { cause: error },
  );
}

async function readConfig(file: string): Promise<Buffer> {
  try {
    const info = await stat(file);
    if (info.size > payloadLimits.maxConfigBytes)
      throw new WinfleetError(
        'WF_PAYLOAD_INVALID',
        `${file} has ${info.size} bytes, more than the ${payloadLimits.maxConfigBytes} a payload artifact's payload.json may have`,
      );
    return await readFile(file);
  } catch (error) {
    if (error instanceof WinfleetError) throw error;
    throw new WinfleetError(
      'WF_PAYLOAD_INVALID',
      `Cannot read ${file}: ${(error as Error).message}; run make payload, or point at a payload directory`,
    );
  }
}
