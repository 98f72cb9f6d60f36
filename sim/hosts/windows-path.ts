/**
 * Windows paths as a simulated host reads them. The agent passes `C:\k\kubelet.exe`; Windows
 * OpenSSH's SFTP passes `/C:/k/kubelet.exe`; both, and `C:/k/...`, name the same file. Only
 * drive C: exists. Names are case-insensitive and case-preserving (the file system compares
 * them; this module only normalizes), `.` and `..` are resolved (`..` stops at the root, as on
 * Windows), trailing dots and blanks of a name are dropped (Win32 does that), and the
 * characters Win32 forbids in names are refused with the error Windows gives.
 */
import { SimFsError } from './file-system-error.ts';

/** The one drive a simulated host has. */
export const systemDrive = 'C:';

// Win32 forbids these in file names (plus control characters).
const forbiddenInName = /[<>:"|?*\p{Cc}]/u;

/**
 * The segments of an absolute Windows path, below `C:\`. Relative paths resolve against `cwd`
 * (a Windows path) when it is given.
 *
 * @example windowsPathSegments('/C:/k/./winfleet/../kubelet.exe') // ['k', 'kubelet.exe']
 */
export function windowsPathSegments(path: string, cwd?: string): string[] {
  let rest = path.replaceAll('/', '\\');
  if (rest.startsWith('\\\\')) {
    throw new SimFsError(
      'EINVAL',
      `Cannot use "${path}": network and device paths do not exist on a simulated host; use a C:\\ path`,
      path,
    );
  }
  // Windows OpenSSH's SFTP form: "\C:\..." (after the slash swap above).
  if (/^\\[A-Za-z]:(\\|$)/.test(rest)) rest = rest.slice(1);
  let base: string[] = [];
  const drive = /^([A-Za-z]):/.exec(rest);
  if (drive) {
    if (drive[1]!.toUpperCase() !== 'C') {
      throw new SimFsError(
        'ENOENT',
        `Cannot use "${path}": drive ${drive[1]!.toUpperCase()}: does not exist on a simulated host; use C:`,
        path,
      );
    }
    rest = rest.slice(2);
  } else if (rest.startsWith('\\')) {
    // Rooted on the current drive, which is always C:.
  } else if (cwd !== undefined) {
    base = windowsPathSegments(cwd);
  } else {
    throw new SimFsError(
      'EINVAL',
      `Cannot use "${path}": it is not an absolute path; give a full path such as C:\\k\\file`,
      path,
    );
  }
  const segments = [...base];
  for (const raw of rest.split('\\')) {
    const name = raw.replace(/[. ]+$/, (tail) => (raw === tail ? tail : ''));
    if (name === '' || name === '.') continue;
    if (name === '..') {
      segments.pop();
      continue;
    }
    if (forbiddenInName.test(name) || /^[. ]+$/.test(name)) {
      throw new SimFsError(
        'EINVAL',
        `Cannot use "${path}": the filename, directory name, or volume label syntax is incorrect ("${raw}")`,
        path,
      );
    }
    segments.push(name);
  }
  return segments;
}

/** The canonical Windows form of a path: `C:\k\kubelet.exe`, or `C:\` for the root. */
export function formatWindowsPath(segments: readonly string[]): string {
  return `${systemDrive}\\${segments.join('\\')}`;
}

/** Normalizes any accepted form to `C:\...`. */
export function normalizeWindowsPath(path: string, cwd?: string): string {
  return formatWindowsPath(windowsPathSegments(path, cwd));
}

/** The Windows OpenSSH SFTP form of a path: `/C:/k/kubelet.exe`, or `/C:/` for the root. */
export function sftpPath(segments: readonly string[]): string {
  return `/${systemDrive}/${segments.join('/')}`;
}

/** The last segment of a Windows path (its file name), lower-cased for lookups. */
export function windowsBaseName(path: string): string {
  const segments = windowsPathSegments(path);
  return (segments.at(-1) ?? '').toLowerCase();
}
