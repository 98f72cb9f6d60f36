/**
 * The file system of a simulated Windows host: drive C: is a directory on the real disk (so
 * anything the agent writes survives a simulated reboot and can be inspected), seen through
 * Windows rules:
 * - names are case-insensitive and case-preserving (each name is looked up in its directory);
 * - a file a running process holds is locked by its identity (its inode on the real disk),
 *   so the lock follows the file through a rename: the executable image of a running process
 *   cannot be opened for writing (EBUSY: ERROR_SHARING_VIOLATION), deleted or replaced by a
 *   rename (EPERM: ERROR_ACCESS_DENIED), but can be renamed — so an upgrade either stops what
 *   runs it or renames it aside; a file a program holds open (sim-process.ts `holdOpen`, a Go
 *   handle without FILE_SHARE_DELETE) can be written in place but not deleted, renamed or
 *   replaced (EBUSY);
 * - free space is accounted (a configured amount minus what was written since) and the
 *   disk-full fault makes every data write fail with "There is not enough space on the disk.";
 * - each path has an owner and a DACL, inherited unless protected (file-security.ts); callers
 *   acting for an account (the SFTP server) check them with `checkAccess`, while the agent
 *   (SYSTEM) and catalog scripts run for an administrator, whom winfleet's DACLs always grant.
 */
import { createHash, randomBytes } from 'node:crypto';
import { type BigIntStats, createReadStream } from 'node:fs';
import {
  type FileHandle,
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
} from 'node:fs/promises';
import { join } from 'node:path';
import {
  driveRootSecurity,
  type EffectiveSecurity,
  effectiveSecurity,
  isGranted,
  type Principal,
  type SecurityDescriptor,
} from './file-security.ts';
import { errorCode, fsError } from './file-system-error.ts';
import type { FileHold } from './sim-process.ts';
import { formatWindowsPath, windowsPathSegments } from './windows-path.ts';

const gib = 1024 ** 3;

export interface SimFileSystemOptions {
  /** Directory on the real disk that holds drive C:. Created when missing. */
  root: string;
  /** Size of C: in bytes. Default: 127 GiB (the usual cloud OS disk). */
  diskSizeBytes?: number;
  /** Free bytes on C: at creation. Default: 100 GiB. */
  freeBytes?: number;
}

export interface SimStat {
  kind: 'file' | 'directory';
  size: number;
  mtime: Date;
  atime: Date;
}

export interface SimDirEntry extends SimStat {
  name: string;
}

/** How `open` opens a file (the SFTP open flags). */
export interface SimOpenFlags {
  read?: boolean;
  write?: boolean;
  append?: boolean;
  create?: boolean;
  truncate?: boolean;
  exclusive?: boolean;
}

/** A path looked up in the file system. */
interface Located {
  /** Path on the real disk (the existing part in its stored case, the rest as given). */
  host: string;
  /** Canonical Windows path, in stored case where it exists. */
  path: string;
  exists: boolean;
}

/** An open file, for SFTP. Sizes are tracked so writes count against free space. */
export class SimFileHandle {
  readonly path: string;
  readonly #fs: SimFileSystem;
  readonly #handle: FileHandle;
  readonly #append: boolean;
  #size: number;

  constructor(fs: SimFileSystem, path: string, handle: FileHandle, size: number, append: boolean) {
    this.#fs = fs;
    this.path = path;
    this.#handle = handle;
    this.#size = size;
    this.#append = append;
  }

  async read(offset: number, length: number): Promise<Buffer> {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await this.#handle.read(buffer, 0, length, offset);
    return buffer.subarray(0, bytesRead);
  }

  async write(offset: number, data: Buffer): Promise<void> {
    const at = this.#append ? this.#size : offset;
    const end = at + data.length;
    this.#fs.reserve(Math.max(0, end - this.#size), 'write', this.path);
    await this.#handle.write(data, 0, data.length, at);
    this.#fs.account(Math.max(0, end - this.#size));
    this.#size = Math.max(this.#size, end);
  }

  async truncate(size: number): Promise<void> {
    this.#fs.reserve(Math.max(0, size - this.#size), 'truncate', this.path);
    await this.#handle.truncate(size);
    this.#fs.account(size - this.#size);
    this.#size = size;
  }

  async stat(): Promise<SimStat> {
    const stats = await this.#handle.stat();
    return { kind: 'file', size: stats.size, mtime: stats.mtime, atime: stats.atime };
  }

  async close(): Promise<void> {
    await this.#handle.close();
  }
}

export class SimFileSystem {
  /** Directory on the real disk holding drive C:. */
  readonly root: string;
  readonly diskSizeBytes: number;
  /** The disk-full fault: every data write fails and free space reads 0. */
  diskFull = false;
  /**
   * How running processes hold the file with this identity (`fileIdentity`), if they do; set
   * by the machine.
   */
  heldAs: (identity: string) => FileHold | undefined = () => undefined;
  #freeAtBaseline: number;
  #usedSinceBaseline = 0;
  /** Explicit security descriptors, by lower-cased canonical path. */
  readonly #security = new Map<string, SecurityDescriptor>();

  private constructor(root: string, diskSizeBytes: number, freeBytes: number) {
    this.root = root;
    this.diskSizeBytes = diskSizeBytes;
    this.#freeAtBaseline = freeBytes;
  }

  static async create(options: SimFileSystemOptions): Promise<SimFileSystem> {
    const diskSizeBytes = options.diskSizeBytes ?? 127 * gib;
    const freeBytes = options.freeBytes ?? 100 * gib;
    if (!Number.isSafeInteger(diskSizeBytes) || diskSizeBytes <= 0) {
      throw new RangeError(
        `Cannot use diskSizeBytes ${diskSizeBytes}; give a positive whole number of bytes`,
      );
    }
    if (!Number.isSafeInteger(freeBytes) || freeBytes < 0 || freeBytes > diskSizeBytes) {
      throw new RangeError(
        `Cannot use freeBytes ${freeBytes}; give whole bytes from 0 to diskSizeBytes (${diskSizeBytes})`,
      );
    }
    await mkdir(options.root, { recursive: true });
    return new SimFileSystem(options.root, diskSizeBytes, freeBytes);
  }

  // Space.

  /** Free bytes on C: (0 while the disk-full fault is on). */
  freeBytes(): number {
    if (this.diskFull) return 0;
    return Math.max(0, this.#freeAtBaseline - this.#usedSinceBaseline);
  }

  /** Sets the free space C: reports from now on. */
  setFreeBytes(bytes: number): void {
    if (!Number.isSafeInteger(bytes) || bytes < 0) {
      throw new RangeError(`Cannot set free disk space to ${bytes}; give whole bytes from 0`);
    }
    this.#freeAtBaseline = bytes + this.#usedSinceBaseline;
  }

  /** Throws ENOSPC unless `bytes` more fit (and the disk-full fault is off). */
  reserve(bytes: number, action: string, path: string): void {
    if (this.diskFull || bytes > this.freeBytes()) throw fsError('ENOSPC', action, path);
  }

  /** Records `bytes` written (negative: freed). */
  account(bytes: number): void {
    this.#usedSinceBaseline += bytes;
  }

  // Lookup.

  async #locate(path: string, cwd?: string): Promise<Located> {
    const segments = windowsPathSegments(path, cwd);
    let host = this.root;
    const stored: string[] = [];
    for (let i = 0; i < segments.length; i++) {
      const name = segments[i]!;
      let entries: string[];
      try {
        entries = await readdir(host);
      } catch {
        const rest = segments.slice(i);
        return {
          host: join(host, ...rest),
          path: formatWindowsPath([...stored, ...rest]),
          exists: false,
        };
      }
      const lower = name.toLowerCase();
      const match = entries.includes(name)
        ? name
        : entries.find((entry) => entry.toLowerCase() === lower);
      if (match === undefined) {
        const rest = segments.slice(i);
        return {
          host: join(host, ...rest),
          path: formatWindowsPath([...stored, ...rest]),
          exists: false,
        };
      }
      host = join(host, match);
      stored.push(match);
    }
    return { host, path: formatWindowsPath(stored), exists: true };
  }

  /**
   * The identity of an existing file: the same through renames, never shared by two files
   * that exist at once (device and inode on the real disk). Throws ENOENT when it is missing.
   */
  async fileIdentity(path: string): Promise<string> {
    const located = await this.#locate(path);
    if (!located.exists) throw fsError('ENOENT', 'open', path);
    return identityOf(await lstat(located.host, { bigint: true }));
  }

  /** How running processes hold the file at a real-disk path (none when it is missing). */
  async #hold(host: string): Promise<FileHold | undefined> {
    let stats: BigIntStats;
    try {
      stats = await lstat(host, { bigint: true });
    } catch {
      return undefined;
    }
    return stats.isFile() ? this.heldAs(identityOf(stats)) : undefined;
  }

  /** The real-disk path of a Windows path (existing or not). */
  async hostPath(path: string): Promise<string> {
    return (await this.#locate(path)).host;
  }

  /** The canonical Windows path (stored case) of an existing path, else undefined. */
  async realPath(path: string, cwd?: string): Promise<string | undefined> {
    const located = await this.#locate(path, cwd);
    return located.exists ? located.path : undefined;
  }

  async stat(path: string, cwd?: string): Promise<SimStat | undefined> {
    const located = await this.#locate(path, cwd);
    if (!located.exists) return undefined;
    return statOf(located.host);
  }

  // Security.

  /** Sets the explicit security descriptor of an existing path (Set-Acl). */
  async setSecurity(path: string, descriptor: SecurityDescriptor): Promise<void> {
    const located = await this.#locate(path);
    if (!located.exists) throw fsError('ENOENT', 'set security of', path);
    this.#security.set(located.path.toLowerCase(), structuredClone(descriptor));
  }

  /**
   * `icacls <child> /setowner *S-1-5-32-544 /T` then `icacls <child> /reset /T` for every entry
   * below `path` (not `path` itself): each is owned by Administrators and keeps no explicit
   * entry, so it inherits what `path` passes down (a protected DACL of its own is dropped too).
   */
  async resetSecurityBelow(path: string): Promise<void> {
    const located = await this.#locate(path);
    if (!located.exists) throw fsError('ENOENT', 'reset security below', path);
    const prefix = `${located.path.toLowerCase()}\\`;
    for (const key of [...this.#security.keys()]) {
      if (key.startsWith(prefix)) this.#security.delete(key);
    }
  }

  /** The owner and effective DACL of a path (an absent path: what it would inherit). */
  async security(path: string, cwd?: string): Promise<EffectiveSecurity> {
    const located = await this.#locate(path, cwd);
    const segments = windowsPathSegments(located.path);
    const chain = [driveRootSecurity];
    for (let i = 1; i <= segments.length; i++) {
      chain.push(this.#security.get(formatWindowsPath(segments.slice(0, i)).toLowerCase())!);
    }
    return effectiveSecurity(chain);
  }

  /** Throws EPERM ("Access is denied.") unless `principal` has `access` to `path`. */
  async checkAccess(
    principal: Principal,
    access: 'read' | 'write',
    path: string,
    cwd?: string,
  ): Promise<void> {
    const { entries } = await this.security(path, cwd);
    if (!isGranted(entries, principal, access)) {
      throw fsError('EPERM', `${access} as ${principal.name}`, path);
    }
  }

  /** Moves or drops the explicit descriptors at and below `from`. */
  #moveSecurity(from: string, to: string | undefined): void {
    const prefix = from.toLowerCase();
    for (const [key, descriptor] of [...this.#security]) {
      if (key !== prefix && !key.startsWith(`${prefix}\\`)) continue;
      this.#security.delete(key);
      if (to !== undefined)
        this.#security.set(to.toLowerCase() + key.slice(prefix.length), descriptor);
    }
  }

  // Files.

  async readFile(path: string): Promise<Buffer> {
    const located = await this.#locate(path);
    if (!located.exists) throw fsError('ENOENT', 'open', path);
    try {
      return await readFile(located.host);
    } catch (error) {
      if (errorCode(error) === 'EISDIR') throw fsError('EISDIR', 'read', path);
      throw error;
    }
  }

  /** The first `bytes` bytes of a file (fewer when it is shorter), without reading the rest. */
  async readHead(path: string, bytes: number): Promise<Buffer> {
    const located = await this.#locate(path);
    if (!located.exists) throw fsError('ENOENT', 'open', path);
    if ((await statOf(located.host)).kind === 'directory') throw fsError('EISDIR', 'read', path);
    const handle = await open(located.host, 'r');
    try {
      const buffer = Buffer.alloc(bytes);
      const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
      return buffer.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  }

  /** The SHA-256 of a file, read as a stream (as Get-FileHash does). */
  async sha256(path: string): Promise<string> {
    const located = await this.#locate(path);
    if (!located.exists) throw fsError('ENOENT', 'open', path);
    if ((await statOf(located.host)).kind === 'directory') throw fsError('EISDIR', 'read', path);
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(located.host, { highWaterMark: 256 * 1024 }))
      hash.update(chunk as Buffer);
    return hash.digest('hex');
  }

  /** The file's content, or undefined when it does not exist or is a directory. */
  async tryReadFile(path: string): Promise<Buffer | undefined> {
    try {
      return await this.readFile(path);
    } catch (error) {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'EISDIR') return undefined;
      throw error;
    }
  }

  /**
   * Writes a whole file in place (as a program writing its own file does). The parent must
   * exist unless `createParents`.
   */
  async writeFile(
    path: string,
    data: Buffer | string,
    options: { createParents?: boolean } = {},
  ): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    if (options.createParents) await this.mkdir(parentOf(path), { recursive: true });
    const located = await this.#locate(path);
    const old = located.exists ? await statOf(located.host) : undefined;
    if (old?.kind === 'directory') throw fsError('EISDIR', 'write', path);
    if (located.exists && (await this.#hold(located.host)) === 'image')
      throw fsError('EBUSY', 'write', path);
    if (!located.exists) await this.#requireParent(path);
    this.reserve(Math.max(0, bytes.length - (old?.size ?? 0)), 'write', path);
    const handle = await open(located.host, 'w');
    try {
      await handle.writeFile(bytes);
    } finally {
      await handle.close();
    }
    this.account(bytes.length - (old?.size ?? 0));
  }

  /** Writes a temporary file beside `path` and renames it over `path`; creates parents. */
  async writeFileAtomic(path: string, data: Buffer | string): Promise<void> {
    await this.mkdir(parentOf(path), { recursive: true });
    const segments = windowsPathSegments(path);
    const temporary = formatWindowsPath([
      ...segments.slice(0, -1),
      `${segments.at(-1)}.${randomBytes(4).toString('hex')}.tmp`,
    ]);
    await this.writeFile(temporary, data);
    try {
      await this.rename(temporary, path, { replace: true });
    } catch (error) {
      await this.remove(temporary, { missingOk: true });
      throw error;
    }
  }

  /**
   * writeFileAtomic for content that arrives as a stream: each chunk goes to the temporary
   * file as it comes (counted against free space, so a full disk fails mid-way), which is
   * renamed over `path` once the chunks end cleanly and removed otherwise. Returns the bytes.
   */
  async writeFileAtomicFromStream(
    path: string,
    chunks: AsyncIterable<Uint8Array>,
  ): Promise<number> {
    await this.mkdir(parentOf(path), { recursive: true });
    const segments = windowsPathSegments(path);
    const temporary = formatWindowsPath([
      ...segments.slice(0, -1),
      `${segments.at(-1)}.${randomBytes(4).toString('hex')}.tmp`,
    ]);
    let offset = 0;
    try {
      const handle = await this.open(temporary, { write: true, create: true, exclusive: true });
      try {
        for await (const chunk of chunks) {
          await handle.write(offset, Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          offset += chunk.byteLength;
        }
      } finally {
        await handle.close();
      }
      await this.rename(temporary, path, { replace: true });
      return offset;
    } catch (error) {
      await this.remove(temporary, { missingOk: true });
      throw error;
    }
  }

  /** A file's content as chunks, read as a program reading it would (never whole). */
  async *readChunks(path: string): AsyncGenerator<Buffer> {
    const located = await this.#locate(path);
    if (!located.exists) throw fsError('ENOENT', 'open', path);
    if ((await statOf(located.host)).kind === 'directory') throw fsError('EISDIR', 'read', path);
    for await (const chunk of createReadStream(located.host, { highWaterMark: 256 * 1024 }))
      yield chunk as Buffer;
  }

  async #requireParent(path: string): Promise<void> {
    const parent = await this.stat(parentOf(path));
    if (parent === undefined) throw fsError('ENOENT', 'create', path);
    if (parent.kind !== 'directory') throw fsError('ENOTDIR', 'create', path);
  }

  /** Opens a file for SFTP: flags as in SSH_FXP_OPEN. */
  async open(path: string, flags: SimOpenFlags): Promise<SimFileHandle> {
    const located = await this.#locate(path);
    const writing = flags.write || flags.append || flags.truncate;
    if (located.exists) {
      if (flags.create && flags.exclusive) throw fsError('EEXIST', 'create', path);
      const stats = await statOf(located.host);
      if (stats.kind === 'directory') throw fsError('EISDIR', 'open', path);
      if (writing && (await this.#hold(located.host)) === 'image')
        throw fsError('EBUSY', 'open', path);
    } else {
      if (!flags.create) throw fsError('ENOENT', 'open', path);
      await this.#requireParent(path);
    }
    const before = located.exists ? (await statOf(located.host)).size : 0;
    const mode = writing || flags.create ? 'r+' : 'r';
    if (!located.exists) await (await open(located.host, 'w')).close();
    const handle = await open(located.host, mode);
    let size = before;
    if (flags.truncate && before > 0) {
      await handle.truncate(0);
      this.account(-before);
      size = 0;
    }
    return new SimFileHandle(this, located.path, handle, size, flags.append === true);
  }

  // Directories.

  async mkdir(path: string, options: { recursive?: boolean } = {}): Promise<void> {
    const segments = windowsPathSegments(path);
    if (options.recursive) {
      for (let i = 1; i <= segments.length; i++) {
        const partial = formatWindowsPath(segments.slice(0, i));
        const stats = await this.stat(partial);
        if (stats?.kind === 'directory') continue;
        if (stats) throw fsError('EEXIST', 'create directory', partial);
        await mkdir((await this.#locate(partial)).host);
      }
      return;
    }
    const located = await this.#locate(path);
    if (located.exists) throw fsError('EEXIST', 'create directory', path);
    await this.#requireParent(path);
    await mkdir(located.host);
  }

  /** The entries of a directory (without "." and ".."), sorted case-insensitively. */
  async list(path: string, cwd?: string): Promise<SimDirEntry[]> {
    const located = await this.#locate(path, cwd);
    if (!located.exists) throw fsError('ENOENT', 'list', path);
    if ((await statOf(located.host)).kind !== 'directory') throw fsError('ENOTDIR', 'list', path);
    const names = await readdir(located.host);
    const entries: SimDirEntry[] = [];
    for (const name of names) {
      try {
        entries.push({ name, ...(await statOf(join(located.host, name))) });
      } catch {
        // Removed while listing.
      }
    }
    return entries.sort((a, b) => a.name.toLowerCase().localeCompare(b.name.toLowerCase()));
  }

  /**
   * Removes a file, or a directory (with everything in it when `recursive`; else it must be
   * empty). Nothing is removed when a running process holds a file in the tree.
   */
  async remove(
    path: string,
    options: { recursive?: boolean; missingOk?: boolean; kind?: 'file' | 'directory' } = {},
  ): Promise<void> {
    const located = await this.#locate(path);
    if (!located.exists) {
      if (options.missingOk) return;
      throw fsError('ENOENT', 'delete', path);
    }
    if (windowsPathSegments(path).length === 0) throw fsError('EPERM', 'delete', path);
    const stats = await statOf(located.host);
    if (options.kind === 'file' && stats.kind === 'directory') {
      throw fsError('EPERM', 'delete', path);
    }
    if (options.kind === 'directory' && stats.kind === 'file') {
      throw fsError('ENOTDIR', 'remove directory', path);
    }
    if (stats.kind === 'directory' && !options.recursive) {
      if ((await readdir(located.host)).length > 0) {
        throw fsError('ENOTEMPTY', 'remove directory', path);
      }
    }
    let bytes = 0;
    for (const file of await filesUnder(located.host)) {
      const hold = await this.#hold(file.host);
      if (hold) {
        throw fsError(
          hold === 'image' ? 'EPERM' : 'EBUSY',
          'delete',
          `${located.path}${file.host.slice(located.host.length).replaceAll('/', '\\')}`,
        );
      }
      bytes += file.size;
    }
    await rm(located.host, { recursive: true, force: true });
    this.#moveSecurity(located.path, undefined);
    this.account(-bytes);
  }

  /**
   * Renames a file or directory. With `replace` an existing file at `to` is replaced (as
   * MoveFileEx with MOVEFILE_REPLACE_EXISTING; never a directory); without, it must not exist.
   * A running image renames; a file held open does not; neither can be replaced.
   */
  async rename(from: string, to: string, options: { replace?: boolean } = {}): Promise<void> {
    const source = await this.#locate(from);
    if (!source.exists) throw fsError('ENOENT', 'rename', from);
    if ((await this.#hold(source.host)) === 'open') throw fsError('EBUSY', 'rename', from);
    const target = await this.#locate(to);
    let replacedBytes = 0;
    if (target.exists && target.host !== source.host) {
      const stats = await statOf(target.host);
      if (!options.replace || stats.kind === 'directory') throw fsError('EEXIST', 'rename to', to);
      const hold = await this.#hold(target.host);
      if (hold) throw fsError(hold === 'image' ? 'EPERM' : 'EBUSY', 'replace', to);
      replacedBytes = stats.size;
    } else if (!target.exists) {
      await this.#requireParent(to);
    }
    if (target.exists && target.host === source.host) {
      // Only the case changes: rename to the new name as given.
      const segments = windowsPathSegments(to);
      const renamed = join(source.host, '..', segments.at(-1)!);
      await rename(source.host, renamed);
      return;
    }
    await rename(source.host, target.host);
    // A move within a volume keeps the object's own security descriptor.
    this.#moveSecurity(target.path, undefined);
    this.#moveSecurity(source.path, target.path);
    this.account(-replacedBytes);
  }

  /** Every file and directory on C: (canonical paths, sorted), for before/after comparisons. */
  async allPaths(): Promise<string[]> {
    const paths: string[] = [];
    const walk = async (host: string, segments: string[]): Promise<void> => {
      let names: string[];
      try {
        names = await readdir(host);
      } catch {
        return;
      }
      for (const name of names) {
        const child = [...segments, name];
        paths.push(formatWindowsPath(child));
        await walk(join(host, name), child);
      }
    };
    await walk(this.root, []);
    return paths.sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()));
  }
}

function identityOf(stats: BigIntStats): string {
  return `${stats.dev}:${stats.ino}`;
}

async function statOf(host: string): Promise<SimStat> {
  const stats = await lstat(host);
  return {
    kind: stats.isDirectory() ? 'directory' : 'file',
    size: stats.isDirectory() ? 0 : stats.size,
    mtime: stats.mtime,
    atime: stats.atime,
  };
}

async function filesUnder(host: string): Promise<{ host: string; size: number }[]> {
  const stats = await lstat(host);
  if (!stats.isDirectory()) return [{ host, size: stats.size }];
  const files: { host: string; size: number }[] = [];
  for (const name of await readdir(host)) files.push(...(await filesUnder(join(host, name))));
  return files;
}

/** The parent of a Windows path (the root is its own parent). */
export function parentOf(path: string): string {
  return formatWindowsPath(windowsPathSegments(path).slice(0, -1));
}
