/**
 * A payload file on the operator's disk, verified by its SHA-256 without ever holding it in
 * memory: files of the payload directory are hashed as a stream (once per file as it is on
 * disk: the answer is kept while its size, inode and mtime stay the same), files with a URL
 * are downloaded as a stream into the download cache (or, when that cannot be written, into a
 * temporary file released after use), hashed on the way. A file whose hash does not match
 * payload.json is never handed out, so never sent to a host.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { WinfleetError } from '../errors/catalog.ts';
import type { PayloadFile } from './payload.ts';

/** A verified payload file: where it is, its size and hash; release it once copied. */
export interface PayloadFileOnDisk {
  path: string;
  size: number;
  sha256: string;
  /** Removes a temporary download; nothing for a file of the payload directory or cache. */
  release(): Promise<void>;
}

/** The SHA-256 and size of a file, read as a stream. */
export async function hashFile(path: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 256 * 1024 })) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), size };
}

/** Hashes already made, by path, valid while the file's identity on disk stays the same. */
const hashes = new Map<
  string,
  { identity: string; hashed: Promise<{ sha256: string; size: number }> }
>();
/** Payload files are few; the bound only keeps many payload versions from piling up. */
const maxRememberedHashes = 256;

/** The hash of `path`, computed once for concurrent callers and while the file is unchanged. */
export async function knownHash(path: string): Promise<{ sha256: string; size: number }> {
  const info = await stat(path);
  const identity = `${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
  const known = hashes.get(path);
  if (known?.identity === identity) return known.hashed;
  const hashed = hashFile(path);
  hashes.delete(path);
  if (hashes.size >= maxRememberedHashes) hashes.delete(hashes.keys().next().value!);
  hashes.set(path, { identity, hashed });
  hashed.catch(() => {
    if (hashes.get(path)?.hashed === hashed) hashes.delete(path);
  });
  return hashed;
}

function mismatch(file: PayloadFile, actual: string): WinfleetError {
  return new WinfleetError(
    'WF_PAYLOAD_INVALID',
    `Payload file ${file.name} has SHA-256 ${actual}, payload.json says ${file.sha256}; it will not be sent to any host`,
  );
}

/**
 * The verified payload file on disk: from the payload directory, or downloaded from its URL
 * into `cacheDir` (once, when that directory is writable). Throws WF_PAYLOAD_INVALID when its
 * SHA-256 does not match the manifest, WF_PAYLOAD_DOWNLOAD when the download fails.
 */
export async function payloadFileOnDisk(
  dir: string,
  file: PayloadFile,
  cacheDir = join(dir, '.download'),
): Promise<PayloadFileOnDisk> {
  const nothing = async () => {};
  if ('path' in file.source) {
    const path = join(dir, file.source.path);
    const { sha256, size } = await knownHash(path);
    if (sha256 !== file.sha256) throw mismatch(file, sha256);
    return { path, size, sha256, release: nothing };
  }
  const cached = join(cacheDir, file.sha256);
  const hit = await knownHash(cached).catch(() => undefined);
  if (hit?.sha256 === file.sha256) return { path: cached, ...hit, release: nothing };
  return download(file, file.source.url, cacheDir, cached);
}

async function download(
  file: PayloadFile,
  url: string,
  cacheDir: string,
  cached: string,
): Promise<PayloadFileOnDisk> {
  // The cache only saves a download: a read-only payload directory (a volume mounted into
  // the operator's pod) is not an error, the file goes to a temporary directory instead.
  let into: string | undefined;
  let temporaryDir: string | undefined;
  try {
    await mkdir(cacheDir, { recursive: true });
    into = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  } catch {
    temporaryDir = await mkdtemp(join(tmpdir(), 'winfleet-payload-'));
    into = join(temporaryDir, file.name);
  }
  const removeTemporary = () =>
    rm(temporaryDir ?? into, { recursive: true, force: true }).catch(() => {});
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(300_000) });
    if (!response.ok || !response.body)
      throw new WinfleetError(
        'WF_PAYLOAD_DOWNLOAD',
        `Cannot download ${file.name} from ${url}: HTTP ${response.status}; check that the URL in payload.json serves the file`,
      );
    const hash = createHash('sha256');
    let size = 0;
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    try {
      await pipeline(
        Readable.fromWeb(response.body as WebReadableStream<Uint8Array>),
        tap,
        createWriteStream(into),
      );
    } catch (error) {
      throw new WinfleetError(
        'WF_PAYLOAD_DOWNLOAD',
        `Cannot download ${file.name} from ${url}: ${(error as Error).message}; check that the URL in payload.json serves the file and that the operator has disk space`,
        { cause: error },
      );
    }
    const sha256 = hash.digest('hex');
    if (sha256 !== file.sha256) throw mismatch(file, sha256);
    if (temporaryDir !== undefined) return { path: into, size, sha256, release: removeTemporary };
    try {
      await rename(into, cached);
    } catch {
      return { path: into, size, sha256, release: removeTemporary };
    }
    return { path: cached, size, sha256, release: async () => {} };
  } catch (error) {
    await removeTemporary();
    throw error;
  }
}
