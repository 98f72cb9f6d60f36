/**
 * Replacing a file that a process may be running. Windows will not overwrite or delete the
 * executable of a running process, but it renames one: so the file in place moves aside to a
 * name of its own, `<file>.old-<n>`, and the new one is written where it was. The process
 * keeps running the old image; the copy aside is deleted as soon as nothing runs it — at once
 * when nothing did, else at a later pass (`removeStaleCopies`), or by cleanup.
 *
 * The processes that force this are the ones no service owns: containerd starts a
 * containerd-shim-runhcs-v1.exe per running pod, and stopping containerd leaves them running.
 * Each copy aside gets its own name, because the previous one may still be locked: a fixed
 * `<file>.old` would fail on the second replacement before the old processes end.
 */
import { win32 } from 'node:path';
import type { HostOS } from './host-os.ts';

/** Copies aside of `base`: `<base>.old-<n>`, and the fixed `<base>.old` of earlier versions. */
function isCopyOf(entry: string, base: string): boolean {
  const lower = entry.toLowerCase();
  const prefix = `${base.toLowerCase()}.old`;
  return (
    lower === prefix ||
    (lower.startsWith(`${prefix}-`) && /^\d+$/.test(lower.slice(prefix.length + 1)))
  );
}

/** The copies aside of `path` in its directory. */
async function copiesOf(host: HostOS, path: string): Promise<string[]> {
  const directory = win32.dirname(path);
  const base = win32.basename(path);
  const entries = (await host.listDirectory(directory)) ?? [];
  return entries.filter((e) => isCopyOf(e, base)).map((e) => win32.join(directory, e));
}

/**
 * Deletes the copies aside of `path` that nothing runs any more; returns those still in use.
 * @package
 */
export async function removeStaleCopies(host: HostOS, path: string): Promise<string[]> {
  const inUse: string[] = [];
  for (const copy of await copiesOf(host, path)) {
    if (!(await host.removeFileIfUnused(copy))) inUse.push(copy);
  }
  return inUse;
}

/**
 * A name for moving `path` aside that no file has: `<path>.old-<now in ms>`, counting up
 * past any taken one.
 */
async function asideName(host: HostOS, path: string, now = Date.now()): Promise<string> {
  const taken = new Set((await copiesOf(host, path)).map((c) => c.toLowerCase()));
  let n = now;
  while (taken.has(`${path}.old-${n}`.toLowerCase())) n++;
  return `${path}.old-${n}`;
}

/**
 * Puts a new file at `path`, which a running process may hold, by `write(path)` (an atomic
 * write or copy of HostOS, streamed): an existing file moves aside first (and back, if the
 * write fails), and the copy aside goes at once unless it is in use. Stale copies of earlier
 * replacements that nothing runs any more are deleted too.
 * @package
 */
export async function replaceExecutable(
  host: HostOS,
  path: string,
  write: (path: string) => Promise<void>,
): Promise<void> {
  await removeStaleCopies(host, path);
  const base = win32.basename(path).toLowerCase();
  const entries = (await host.listDirectory(win32.dirname(path))) ?? [];
  if (!entries.some((e) => e.toLowerCase() === base)) {
    await write(path);
    return;
  }
  const aside = await asideName(host, path);
  await host.renamePath(path, aside);
  try {
    await write(path);
  } catch (error) {
    await host.renamePath(aside, path).catch(() => {});
    throw error;
  }
  await host.removeFileIfUnused(aside);
}

/** `removeStaleCopies` for each of `paths`; returns the copies still in use. */
export async function removeStaleCopiesOf(
  host: HostOS,
  paths: readonly string[],
): Promise<string[]> {
  const inUse: string[] = [];
  for (const path of paths) inUse.push(...(await removeStaleCopies(host, path)));
  return inUse;
}
