/**
 * The SFTP subsystem of a simulated host, over its simulated drive C:, in the style of Windows
 * OpenSSH's sftp-server: paths look like `/C:/k/winfleet/x.exe` (`C:/...`, `C:\...` and paths
 * relative to the home directory are accepted too; `/` is the virtual root listing the
 * drives), names are case-insensitive, the usual OpenSSH extensions are advertised
 * (posix-rename@openssh.com replaces an existing file, fsync@openssh.com), and failures map to
 * the status codes OpenSSH uses (NO_SUCH_FILE, PERMISSION_DENIED for a file in use, FAILURE
 * for an existing target, a full disk, a non-empty directory). Every request is checked
 * against the DACLs of the file system for the account that logged in (file-security.ts):
 * reading a file or listing a folder needs read, creating, writing, renaming or deleting
 * needs write on the path (on its folder, for a new path); a denial is PERMISSION_DENIED.
 */
import ssh2, { type Attributes, type FileEntry, type SFTPWrapper } from 'ssh2';
import { administratorPrincipal, type Principal, wellKnownSid } from './file-security.ts';
import type { SimDirEntry, SimFileHandle, SimFileSystem, SimStat } from './file-system.ts';
import { errorCode } from './file-system-error.ts';
import { formatWindowsPath, sftpPath, windowsPathSegments } from './windows-path.ts';

const { OPEN_MODE, STATUS_CODE } = ssh2.utils.sftp;

/** The extensions OpenSSH's sftp-server (and so Windows OpenSSH's) advertises that we serve. */
const advertisedExtensions: readonly [string, string][] = [
  ['posix-rename@openssh.com', '1'],
  ['fsync@openssh.com', '1'],
];

/** Largest READ answered at once (OpenSSH's limit). */
const maxReadBytes = 256 * 1024;
/** Entries per READDIR reply. */
const readdirBatch = 100;

type OpenHandle =
  | { kind: 'file'; file: SimFileHandle }
  | { kind: 'directory'; entries: FileEntry[]; sent: boolean };

export interface SftpSessionOptions {
  /** The home directory `.` resolves to (a Windows path). */
  home: string;
  /** Owner name shown in long listings. */
  owner?: string;
  /** The account whose access is checked. Default: the administrator. */
  principal?: Principal;
}

/** Serves one SFTP session on `sftp` over `fs`. */
export function serveSftp(sftp: SFTPWrapper, fs: SimFileSystem, options: SftpSessionOptions): void {
  advertiseExtensions(sftp);
  const owner = options.owner ?? 'Administrator';
  const principal = options.principal ?? administratorPrincipal;
  const may = (access: 'read' | 'write', windowsPath: string) =>
    fs.checkAccess(principal, access, windowsPath);
  /** Checks write on `windowsPath`, or on its folder when it does not exist yet. */
  const mayCreateOrWrite = async (windowsPath: string) => {
    if (await fs.stat(windowsPath)) return may('write', windowsPath);
    return may('write', formatWindowsPath(windowsPathSegments(windowsPath).slice(0, -1)));
  };
  /** What a non-administrator creates, it owns. */
  const recordOwner = async (windowsPath: string) => {
    if (principal.sids.includes(wellKnownSid.administrators)) return;
    await fs.setSecurity(windowsPath, { owner: principal.sids[0]!, protected: false, entries: [] });
  };
  const handles = new Map<string, OpenHandle>();
  let nextHandle = 0;

  const newHandle = (open: OpenHandle): Buffer => {
    const id = Buffer.alloc(4);
    id.writeUInt32BE(nextHandle++);
    handles.set(id.toString('hex'), open);
    return id;
  };

  const fail = (reqId: number, error: unknown) => {
    const code = errorCode(error);
    const status =
      code === 'ENOENT'
        ? STATUS_CODE.NO_SUCH_FILE
        : code === 'EPERM' || code === 'EBUSY' || code === 'EISDIR'
          ? STATUS_CODE.PERMISSION_DENIED
          : STATUS_CODE.FAILURE;
    safe(() => sftp.status(reqId, status, (error as Error).message ?? String(error)));
  };

  /** Runs a request handler; any error becomes a status reply. */
  const handle =
    <A extends unknown[]>(work: (reqId: number, ...args: A) => Promise<void>) =>
    (reqId: number, ...args: A) => {
      work(reqId, ...args).catch((error: unknown) => fail(reqId, error));
    };

  const toWindows = (path: string): string => {
    if (path.startsWith('/') && !/^\/[A-Za-z]:(\/|$)/.test(path)) {
      throw Object.assign(new Error(`No such file or directory: ${path}`), { code: 'ENOENT' });
    }
    return formatWindowsPath(windowsPathSegments(path, options.home));
  };

  const statOrThrow = async (path: string): Promise<SimStat> => {
    if (path === '/') return virtualRootStat();
    const stats = await fs.stat(toWindows(path));
    if (!stats) throw Object.assign(new Error(`No such file: ${path}`), { code: 'ENOENT' });
    return stats;
  };

  sftp.on(
    'OPEN',
    handle(async (reqId, filename: string, flags: number) => {
      const path = toWindows(filename);
      const writing = (flags & (OPEN_MODE.WRITE | OPEN_MODE.APPEND | OPEN_MODE.TRUNC)) !== 0;
      const existed = (await fs.stat(path)) !== undefined;
      if ((flags & OPEN_MODE.READ) !== 0 && existed) await may('read', path);
      if (writing || (flags & OPEN_MODE.CREAT) !== 0) await mayCreateOrWrite(path);
      const file = await fs.open(path, {
        read: (flags & OPEN_MODE.READ) !== 0,
        write: (flags & OPEN_MODE.WRITE) !== 0,
        append: (flags & OPEN_MODE.APPEND) !== 0,
        create: (flags & OPEN_MODE.CREAT) !== 0,
        truncate: (flags & OPEN_MODE.TRUNC) !== 0,
        exclusive: (flags & OPEN_MODE.EXCL) !== 0,
      });
      if (!existed) await recordOwner(path);
      sftp.handle(reqId, newHandle({ kind: 'file', file }));
    }),
  );

  const fileOf = (id: Buffer): SimFileHandle => {
    const open = handles.get(id.toString('hex'));
    if (open?.kind !== 'file') throw new Error('Invalid handle');
    return open.file;
  };

  sftp.on(
    'READ',
    handle(async (reqId, id: Buffer, offset: number, length: number) => {
      const data = await fileOf(id).read(offset, Math.min(length, maxReadBytes));
      if (data.length === 0) sftp.status(reqId, STATUS_CODE.EOF);
      else sftp.data(reqId, data);
    }),
  );

  sftp.on(
    'WRITE',
    handle(async (reqId, id: Buffer, offset: number, data: Buffer) => {
      await fileOf(id).write(offset, data);
      sftp.status(reqId, STATUS_CODE.OK);
    }),
  );

  sftp.on(
    'FSTAT',
    handle(async (reqId, id: Buffer) => {
      sftp.attrs(reqId, attributes(await fileOf(id).stat()));
    }),
  );

  sftp.on(
    'FSETSTAT',
    handle(async (reqId, id: Buffer, attrs: Attributes) => {
      if (attrs.size !== undefined) await fileOf(id).truncate(attrs.size);
      sftp.status(reqId, STATUS_CODE.OK);
    }),
  );

  sftp.on(
    'SETSTAT',
    handle(async (reqId, path: string, attrs: Attributes) => {
      const stats = await statOrThrow(path);
      if (attrs.size !== undefined && stats.kind === 'file') {
        await may('write', toWindows(path));
        const file = await fs.open(toWindows(path), { write: true });
        try {
          await file.truncate(attrs.size);
        } finally {
          await file.close();
        }
      }
      sftp.status(reqId, STATUS_CODE.OK);
    }),
  );

  sftp.on(
    'CLOSE',
    handle(async (reqId, id: Buffer) => {
      const key = id.toString('hex');
      const open = handles.get(key);
      if (!open) throw new Error('Invalid handle');
      handles.delete(key);
      if (open.kind === 'file') await open.file.close();
      sftp.status(reqId, STATUS_CODE.OK);
    }),
  );

  sftp.on(
    'OPENDIR',
    handle(async (reqId, path: string) => {
      let entries: SimDirEntry[];
      if (path === '/') {
        entries = [{ name: 'C:', ...virtualRootStat() }];
      } else {
        await may('read', toWindows(path));
        entries = await fs.list(toWindows(path));
      }
      const self = await statOrThrow(path);
      const listed: FileEntry[] = [
        { filename: '.', longname: longName('.', self, owner), attrs: attributes(self) },
        { filename: '..', longname: longName('..', self, owner), attrs: attributes(self) },
        ...entries.map((e) => ({
          filename: e.name,
          longname: longName(e.name, e, owner),
          attrs: attributes(e),
        })),
      ];
      sftp.handle(reqId, newHandle({ kind: 'directory', entries: listed, sent: false }));
    }),
  );

  sftp.on(
    'READDIR',
    handle(async (reqId, id: Buffer) => {
      const open = handles.get(id.toString('hex'));
      if (open?.kind !== 'directory') throw new Error('Invalid handle');
      if (open.entries.length === 0) {
        sftp.status(reqId, STATUS_CODE.EOF);
        return;
      }
      sftp.name(reqId, open.entries.splice(0, readdirBatch));
    }),
  );

  for (const event of ['STAT', 'LSTAT'] as const) {
    sftp.on(
      event,
      handle(async (reqId, path: string) => {
        sftp.attrs(reqId, attributes(await statOrThrow(path)));
      }),
    );
  }

  sftp.on(
    'REALPATH',
    handle(async (reqId, path: string) => {
      if (path === '/') {
        sftp.name(reqId, [{ filename: '/', longname: '/', attrs: attributes(virtualRootStat()) }]);
        return;
      }
      const windows = toWindows(path === '' ? '.' : path);
      const real = (await fs.realPath(windows)) ?? windows;
      const filename = sftpPath(windowsPathSegments(real));
      sftp.name(reqId, [{ filename, longname: filename, attrs: {} as Attributes }]);
    }),
  );

  sftp.on(
    'MKDIR',
    handle(async (reqId, path: string) => {
      await mayCreateOrWrite(toWindows(path));
      await fs.mkdir(toWindows(path));
      await recordOwner(toWindows(path));
      sftp.status(reqId, STATUS_CODE.OK);
    }),
  );

  sftp.on(
    'RMDIR',
    handle(async (reqId, path: string) => {
      await mayCreateOrWrite(toWindows(path));
      await fs.remove(toWindows(path), { kind: 'directory' });
      sftp.status(reqId, STATUS_CODE.OK);
    }),
  );

  sftp.on(
    'REMOVE',
    handle(async (reqId, path: string) => {
      await mayCreateOrWrite(toWindows(path));
      await fs.remove(toWindows(path), { kind: 'file' });
      sftp.status(reqId, STATUS_CODE.OK);
    }),
  );

  sftp.on(
    'RENAME',
    handle(async (reqId, from: string, to: string) => {
      await mayCreateOrWrite(toWindows(from));
      await mayCreateOrWrite(toWindows(to));
      await fs.rename(toWindows(from), toWindows(to));
      sftp.status(reqId, STATUS_CODE.OK);
    }),
  );

  sftp.on(
    'EXTENDED',
    handle(async (reqId, name: string, data: Buffer | undefined) => {
      const strings = readStrings(data ?? Buffer.alloc(0));
      if (name === 'posix-rename@openssh.com' && strings.length >= 2) {
        await mayCreateOrWrite(toWindows(strings[0]!.toString('utf8')));
        await mayCreateOrWrite(toWindows(strings[1]!.toString('utf8')));
        await fs.rename(
          toWindows(strings[0]!.toString('utf8')),
          toWindows(strings[1]!.toString('utf8')),
          {
            replace: true,
          },
        );
        sftp.status(reqId, STATUS_CODE.OK);
        return;
      }
      if (name === 'fsync@openssh.com' && strings.length >= 1) {
        fileOf(strings[0]!);
        sftp.status(reqId, STATUS_CODE.OK);
        return;
      }
      sftp.status(reqId, STATUS_CODE.OP_UNSUPPORTED, `Unsupported extension ${name}`);
    }),
  );

  sftp.on('READLINK', (reqId: number) => {
    safe(() => sftp.status(reqId, STATUS_CODE.OP_UNSUPPORTED, 'Symbolic links are not supported'));
  });
  sftp.on('SYMLINK', (reqId: number) => {
    safe(() => sftp.status(reqId, STATUS_CODE.OP_UNSUPPORTED, 'Symbolic links are not supported'));
  });

  const closeAll = () => {
    for (const open of handles.values()) {
      if (open.kind === 'file') open.file.close().catch(() => {});
    }
    handles.clear();
  };
  sftp.on('end', closeAll);
  sftp.on('close', closeAll);
}

function safe(reply: () => void): void {
  try {
    reply();
  } catch {
    // The channel closed meanwhile.
  }
}

function virtualRootStat(): SimStat {
  const epoch = new Date(0);
  return { kind: 'directory', size: 0, mtime: epoch, atime: epoch };
}

function attributes(stats: SimStat): Attributes {
  return {
    mode: stats.kind === 'directory' ? 0o40755 : 0o100644,
    uid: 0,
    gid: 0,
    size: stats.size,
    atime: Math.floor(stats.atime.getTime() / 1000),
    mtime: Math.floor(stats.mtime.getTime() / 1000),
  };
}

const months = 'Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec'.split(' ');

function longName(name: string, stats: SimStat, owner: string): string {
  const mode = stats.kind === 'directory' ? 'drwxr-xr-x' : '-rw-r--r--';
  const date = stats.mtime;
  const when = `${months[date.getMonth()]} ${String(date.getDate()).padStart(2)} ${String(date.getHours()).padStart(2, '0')}:${String(date.getMinutes()).padStart(2, '0')}`;
  return `${mode}   1 ${owner.padEnd(8)} ${owner.padEnd(8)} ${String(stats.size).padStart(8)} ${when} ${name}`;
}

/** SSH strings (uint32 length + bytes) packed in an extended request's data. */
function readStrings(data: Buffer): Buffer[] {
  const strings: Buffer[] = [];
  let offset = 0;
  while (offset + 4 <= data.length) {
    const length = data.readUInt32BE(offset);
    offset += 4;
    if (offset + length > data.length) break;
    strings.push(data.subarray(offset, offset + length));
    offset += length;
  }
  return strings;
}

/**
 * ssh2's server answers INIT with a bare VERSION 3 packet; Windows OpenSSH lists extensions
 * there. This swaps that one packet for one with the extensions, keeping ssh2's channel
 * window accounting right.
 */
function advertiseExtensions(sftp: SFTPWrapper): void {
  const internals = sftp as unknown as {
    _protocol: { channelData(id: number, data: Buffer): void };
    outgoing: { window: number };
  };
  const protocol = internals._protocol;
  const bare = Buffer.from([0, 0, 0, 5, 2, 0, 0, 0, 3]);
  const parts: Buffer[] = [Buffer.from([2, 0, 0, 0, 3])];
  for (const [name, value] of advertisedExtensions) {
    for (const text of [name, value]) {
      const length = Buffer.alloc(4);
      length.writeUInt32BE(Buffer.byteLength(text));
      parts.push(length, Buffer.from(text));
    }
  }
  const body = Buffer.concat(parts);
  const header = Buffer.alloc(4);
  header.writeUInt32BE(body.length);
  const version = Buffer.concat([header, body]);
  internals._protocol = new Proxy(protocol, {
    get(target, property) {
      if (property === 'channelData') {
        return (id: number, data: Buffer) => {
          if (data.equals(bare) && internals.outgoing.window >= version.length - bare.length) {
            internals.outgoing.window -= version.length - bare.length;
            internals._protocol = protocol;
            target.channelData(id, version);
            return;
          }
          target.channelData(id, data);
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
