/**
 * Windows directory paths as a CNI's Windows DaemonSet names them and as containerd's
 * `conf_dir`/`bin_dir` hold them, brought to one form so that they can be compared.
 *
 * Rules and their sources:
 * - A path without a drive (`/etc/cni/net.d`) is on the system drive: that is how the Tigera
 *   operator's defaults `/opt/cni/bin` and `/etc/cni/net.d` (tigera/operator
 *   pkg/render/windows.go `DefaultWindowsCNIDirectories`, "to match vanilla Kubernetes") meet
 *   the `c:\opt\cni\bin` and `c:\etc\cni\net.d` of sig-windows-tools'
 *   hostprocess/Install-Containerd.ps1; winfleet assumes the system drive is C:.
 * - `/` and `\` are both separators, and names compare without case (NTFS's default).
 * - Antrea writes its files to `c:/opt/cni/bin/` and `c:/etc/cni/net.d/10-antrea.conflist`
 *   (antrea-io/antrea build/yamls/antrea-windows-with-ovs.yml, Install-WindowsCNI.ps1).
 */

/** A directory in one form: `C:\etc\cni\net.d`. */
export type WindowsDir = { ok: true; path: string } | { ok: false; why: string };

// Characters Windows refuses in a file name (fileapi's naming rules), and control characters.
// biome-ignore lint/suspicious/noControlCharactersInRegex: they are what is refused
const badNameCharacter = /[<>:"|?*\x00-\x1f]/;

/** `text` as `X:\a\b` (drive upper-case, C: when none, no trailing separator), or why not. */
export function normalizeWindowsDir(text: string): WindowsDir {
  const trimmed = text.trim();
  if (trimmed === '') return { ok: false, why: 'it is empty' };
  const drive = /^([A-Za-z]):[\\/]/.exec(trimmed);
  let rest: string;
  let letter: string;
  if (drive) {
    letter = drive[1]!.toUpperCase();
    rest = trimmed.slice(2);
  } else if (/^[\\/](?![\\/])/.test(trimmed)) {
    letter = 'C';
    rest = trimmed;
  } else {
    return {
      ok: false,
      why: `"${text}" is not an absolute path (write it as C:\\dir\\sub or /dir/sub)`,
    };
  }
  const parts = rest.split(/[\\/]+/).filter((p) => p !== '');
  for (const part of parts) {
    if (part === '.' || part === '..')
      return { ok: false, why: `"${text}" has a "${part}" component` };
    if (badNameCharacter.test(part))
      return { ok: false, why: `"${text}" has a character Windows refuses in a name` };
  }
  return { ok: true, path: `${letter}:\\${parts.join('\\')}` };
}

/** Whether two directories are the same one (after normalizeWindowsDir; case does not count). */
export function sameWindowsDir(a: string, b: string): boolean {
  const x = normalizeWindowsDir(a);
  const y = normalizeWindowsDir(b);
  return x.ok && y.ok && x.path.toLowerCase() === y.path.toLowerCase();
}

/**
 * What is wrong with a directory the configuration names for containerd (conf_dir, bin_dir),
 * or undefined. Stricter than what normalizeWindowsDir accepts from a cluster: a drive letter
 * and backslashes, as containerd's config.toml on Windows holds them.
 */
export function configuredWindowsDirProblem(value: string, field: string): string | undefined {
  const example = field.endsWith('BinDir') ? 'C:\\opt\\cni\\bin' : 'C:\\etc\\cni\\net.d';
  if (!/^[A-Za-z]:\\/.test(value) || value.includes('/'))
    return `${field}: "${value}" is not an absolute Windows path with a drive and backslashes; write e.g. "${example}"`;
  const normal = normalizeWindowsDir(value);
  if (!normal.ok) return `${field}: ${normal.why}; write e.g. "${example}"`;
  if (value.length > 200)
    return `${field}: longer than 200 characters; use a shorter directory such as "${example}"`;
  return undefined;
}
