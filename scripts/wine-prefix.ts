/**
 * Wine for the service shim's test (service-shim-wine.e2e.test.ts): Debian's wine64 (8.0),
 * a prefix per test run, and what Go programs need in it.
 *
 * - Go 1.22 and later load ProcessPrng from bcryptprimitives.dll at start-up, and Wine 8.0 has
 *   no such DLL: every Go program dies with "fatal error: bcryptprimitives.dll not found". The
 *   prefix gets a DLL that only forwards ProcessPrng to advapi32's SystemFunction036
 *   (RtlGenRandom, which Wine has): same arguments, and a non-zero return on success, which is
 *   all Go looks at. Wine 9 ships the real one.
 * - Creating a prefix takes about 15 s and 700 MB (Wine copies its DLLs into it), so one is
 *   made once per Wine version under ${XDG_CACHE_HOME:-~/.cache}/winfleet/wine and each run
 *   gets a hard-linked copy beside it (instant, no space) with its own registry files, its own
 *   wineserver and its own services. Wine replaces a file it rewrites rather than writing into
 *   it, except the few top-level files, which are copied for real.
 */
import { execFile, spawn } from 'node:child_process';
import { constants } from 'node:fs';
import {
  access,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Debian's wine64 package puts its loader here (only the `wine` package adds /usr/bin). */
export const wine64 = '/usr/lib/wine/wine64';
const wineserver64 = '/usr/lib/wine/wineserver64';

/** Whether wine64 is installed (and can be run). */
export async function hasWine(): Promise<boolean> {
  return access(wine64, constants.X_OK).then(
    () => true,
    () => false,
  );
}

/**
 * A PE32+ DLL named `dllName` whose only export, `name`, forwards to `target`
 * ("advapi32.SystemFunction036"): headers, one section holding the export directory, no code.
 */
export function forwarderDll(dllName: string, name: string, target: string): Buffer {
  const sectionRva = 0x1000;
  const fileAlignment = 0x200;
  const strings = [dllName, name, target].map((s) => Buffer.from(`${s}\0`, 'ascii'));
  // Export directory (40 bytes), address table (4), name pointers (4), ordinals (2), names.
  const at = { table: 40, names: 44, ordinals: 48, dllName: 52 };
  const nameAt = at.dllName + strings[0]!.length;
  const targetAt = nameAt + strings[1]!.length;
  const exportsSize = targetAt + strings[2]!.length;
  const section = Buffer.alloc(Math.ceil(exportsSize / fileAlignment) * fileAlignment);
  section.writeUInt32LE(sectionRva + at.dllName, 12); // Name
  section.writeUInt32LE(1, 16); // Base (first ordinal)
  section.writeUInt32LE(1, 20); // NumberOfFunctions
  section.writeUInt32LE(1, 24); // NumberOfNames
  section.writeUInt32LE(sectionRva + at.table, 28);
  section.writeUInt32LE(sectionRva + at.names, 32);
  section.writeUInt32LE(sectionRva + at.ordinals, 36);
  // An address inside the export directory makes the export a forwarder to that string.
  section.writeUInt32LE(sectionRva + targetAt, at.table);
  section.writeUInt32LE(sectionRva + nameAt, at.names);
  section.writeUInt16LE(0, at.ordinals);
  Buffer.concat(strings).copy(section, at.dllName);

  const headers = Buffer.alloc(fileAlignment);
  headers.write('MZ', 0, 'ascii');
  const pe = 0x40;
  headers.writeUInt32LE(pe, 0x3c); // e_lfanew
  headers.write('PE\0\0', pe, 'ascii');
  headers.writeUInt16LE(0x8664, pe + 4); // Machine: AMD64
  headers.writeUInt16LE(1, pe + 6); // NumberOfSections
  headers.writeUInt16LE(240, pe + 20); // SizeOfOptionalHeader (PE32+, 16 directories)
  headers.writeUInt16LE(0x2022, pe + 22); // EXECUTABLE_IMAGE | LARGE_ADDRESS_AWARE | DLL
  const opt = pe + 24;
  headers.writeUInt16LE(0x20b, opt); // PE32+
  headers.writeUInt32LE(section.length, opt + 8); // SizeOfInitializedData
  headers.writeUInt32LE(sectionRva, opt + 20); // BaseOfCode
  headers.writeBigUInt64LE(0x180000000n, opt + 24); // ImageBase
  headers.writeUInt32LE(0x1000, opt + 32); // SectionAlignment
  headers.writeUInt32LE(fileAlignment, opt + 36);
  headers.writeUInt16LE(6, opt + 40); // OS version 6.0
  headers.writeUInt16LE(6, opt + 48); // subsystem version 6.0
  headers.writeUInt32LE(sectionRva + 0x1000, opt + 56); // SizeOfImage
  headers.writeUInt32LE(fileAlignment, opt + 60); // SizeOfHeaders
  headers.writeUInt16LE(3, opt + 68); // Subsystem: console
  headers.writeUInt16LE(0x0120, opt + 70); // DllCharacteristics: NX_COMPAT | HIGH_ENTROPY_VA
  headers.writeBigUInt64LE(0x100000n, opt + 72); // stack reserve
  headers.writeBigUInt64LE(0x1000n, opt + 80); // stack commit
  headers.writeBigUInt64LE(0x100000n, opt + 88); // heap reserve
  headers.writeBigUInt64LE(0x1000n, opt + 96); // heap commit
  headers.writeUInt32LE(16, opt + 108); // NumberOfRvaAndSizes
  headers.writeUInt32LE(sectionRva, opt + 112); // export directory
  headers.writeUInt32LE(exportsSize, opt + 116);
  const sectionHeader = opt + 240;
  headers.write('.edata', sectionHeader, 'ascii');
  headers.writeUInt32LE(exportsSize, sectionHeader + 8); // VirtualSize
  headers.writeUInt32LE(sectionRva, sectionHeader + 12);
  headers.writeUInt32LE(section.length, sectionHeader + 16); // SizeOfRawData
  headers.writeUInt32LE(fileAlignment, sectionHeader + 20); // PointerToRawData
  headers.writeUInt32LE(0x40000040, sectionHeader + 36); // INITIALIZED_DATA | MEM_READ
  return Buffer.concat([headers, section]);
}

/** The environment for running Wine quietly, without a display, in `prefix`. */
export function wineEnv(prefix: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    WINEPREFIX: prefix,
    WINEDEBUG: '-all',
    // No Mono or Gecko installer prompts while the prefix is made.
    WINEDLLOVERRIDES: 'mscoree,mshtml=',
  };
  delete env.DISPLAY;
  delete env.WAYLAND_DISPLAY;
  return env;
}

export interface WineRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `wine64 <args>` in `prefix`; resolves with its exit code and output, bounded. `debug`
 * sets WINEDEBUG (Wine's sc.exe exits with 1 on any failure and prints the Win32 error only on
 * its "err" channel: "err+sc"); `env` adds variables the program sees (Wine passes the
 * environment on).
 */
export async function runWine(
  prefix: string,
  args: string[],
  options: { timeoutMs?: number; debug?: string; env?: Record<string, string> } = {},
): Promise<WineRun> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  try {
    const { stdout, stderr } = await run(wine64, args, {
      env: {
        ...wineEnv(prefix),
        ...options.env,
        ...(options.debug ? { WINEDEBUG: options.debug } : {}),
      },
      timeout: timeoutMs,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number | string; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') {
      throw new Error(`wine64 ${args.join(' ')} failed: ${String(e.code)}: ${e.stderr ?? ''}`);
    }
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/**
 * Runs a Wine command that may leave Wine's own processes behind (wineserver, services.exe,
 * explorer.exe): with no stdio, since they would inherit pipes and keep them open; resolves on
 * its exit, bounded.
 */
function runQuietly(
  prefix: string,
  file: string,
  args: string[],
  timeoutMs: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env: wineEnv(prefix), stdio: 'ignore' });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${file} ${args.join(' ')} did not finish within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`${file} ${args.join(' ')} failed: exit ${code ?? signal}`));
    });
  });
}

/** Where prefixes live: ${XDG_CACHE_HOME:-~/.cache}/winfleet/wine. */
function wineCacheDir(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'winfleet', 'wine');
}

/** Where the pristine prefix for this Wine version is kept; made on first use. */
async function templatePrefix(progress: (message: string) => void): Promise<string> {
  const { stdout } = await run(wine64, ['--version']);
  const version = stdout.trim().replace(/[^A-Za-z0-9.~+-]+/g, '_');
  const root = wineCacheDir();
  const template = join(root, `prefix-${version}`);
  if (await stat(join(template, 'system.reg')).catch(() => undefined)) return template;
  await mkdir(root, { recursive: true });
  const making = await mkdtemp(join(root, '.prefix-'));
  try {
    progress(`making a Wine prefix for ${stdout.trim()} (once; about 15 s) in ${template}`);
    const started = performance.now();
    await runQuietly(making, wine64, ['wineboot', '--init'], 300_000);
    await runQuietly(making, wineserver64, ['-w'], 60_000);
    await writeFile(
      join(making, 'drive_c', 'windows', 'system32', 'bcryptprimitives.dll'),
      forwarderDll('bcryptprimitives.dll', 'ProcessPrng', 'advapi32.SystemFunction036'),
    );
    progress(`Wine prefix made in ${Math.round((performance.now() - started) / 1000)} s`);
    await rename(making, template).catch(async (error: NodeJS.ErrnoException) => {
      // Another run made it first: use that one.
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
    });
    return template;
  } finally {
    await rm(making, { recursive: true, force: true });
  }
}

/** Runs older than this were killed before they could clean up. */
const staleRunMs = 3 * 3600_000;

/** Ends the wineserver of each run left behind by a killed test and removes its prefix. */
async function removeStaleRuns(runs: string): Promise<void> {
  for (const name of await readdir(runs).catch(() => [])) {
    const dir = join(runs, name);
    const info = await stat(dir).catch(() => undefined);
    if (!info || Date.now() - info.mtimeMs < staleRunMs) continue;
    await runQuietly(join(dir, 'prefix'), wineserver64, ['-k'], 30_000).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A prefix of its own for one test run, booted, with a wineserver that stays up until
 * `remove` ends it and deletes the prefix.
 */
export async function createWinePrefix(
  progress: (message: string) => void = (m) => console.error(`[wine] ${m}`),
): Promise<{ prefix: string; remove: () => Promise<void> }> {
  const template = await templatePrefix(progress);
  // Beside the template, so the hard links never cross file systems (/tmp may be a tmpfs).
  const runs = join(wineCacheDir(), 'runs');
  await mkdir(runs, { recursive: true });
  await removeStaleRuns(runs);
  const prefix = join(await mkdtemp(join(runs, 'run-')), 'prefix');
  await run('cp', ['-al', template, prefix]);
  // The files Wine writes in place: real copies, so the template stays pristine.
  for (const name of await readdir(template)) {
    if ((await stat(join(template, name))).isFile()) {
      await rm(join(prefix, name));
      await copyFile(join(template, name), join(prefix, name));
    }
  }
  // One wineserver for the whole run: without a client it would exit after 3 s and the next
  // command would boot a new one, whose service manager forgets exit codes and starts the
  // auto-start services again.
  await runQuietly(prefix, wineserver64, ['-p'], 30_000);
  // Boots the prefix (services.exe and the rest) without our stdio.
  await runQuietly(prefix, wine64, ['cmd', '/c', 'exit'], 120_000);
  return {
    prefix,
    remove: async () => {
      await runQuietly(prefix, wineserver64, ['-k'], 30_000).catch(() => {});
      await rm(join(prefix, '..'), { recursive: true, force: true });
    },
  };
}
