/**
 * Whether a path from a services manifest stays inside the node's directory C:\k. A manifest
 * names service binaries and install paths that the agent, as LocalSystem, writes and runs;
 * only paths in the directory winfleet protects (C:\k, SYSTEM and Administrators only) are
 * allowed, and only in one plain spelling, because Windows accepts many spellings of a path
 * that a prefix check would misread. Each refused form is documented in "Naming Files, Paths,
 * and Namespaces" (https://learn.microsoft.com/windows/win32/fileio/naming-a-file):
 * - `..` and `.` segments, and `/` (Windows treats it as `\`): `C:\k\..\Windows\x.exe`;
 * - `\\?\`, `\\.\` and UNC prefixes (they fail the `C:\k\` prefix, which is literal);
 * - a `:` after the drive: an NTFS alternate data stream (`C:\k\x.exe:evil.exe`);
 * - segments ending in `.` or a space (Windows strips them: `C:\k\.. \x` is `C:\k\..\x`);
 * - `~` (8.3 short names alias other names), the reserved characters `<>"|?*` and control
 *   characters, and device names (`CON`, `NUL`, `COM1`, ...), which open devices, not files.
 * winfleet's own directory and the node's credentials are refused too: a manifest file must
 * not replace the agent, its config or the node's key.
 */
import { hostPaths, kubeDir, winfleetDir } from './host-paths.ts';

const reservedNames = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?$/i;
const forbiddenCharacters = /[<>"|?*~/:]/;
const hasControlCharacter = (text: string) => [...text].some((ch) => ch.charCodeAt(0) < 0x20);

/** Why `path` is not a plain path inside C:\k, or undefined when it is. */
export function confinedPathProblem(path: string): string | undefined {
  const prefix = `${kubeDir}\\`;
  if (path.slice(0, prefix.length).toLowerCase() !== prefix.toLowerCase()) {
    return `"${path}" is not inside ${kubeDir}; payload files and service binaries must be under ${prefix}`;
  }
  if (path.length > 259) return `"${path}" is longer than 259 characters`;
  const segments = path.slice(prefix.length).split('\\');
  for (const segment of segments) {
    if (segment === '' || segment === '.' || segment === '..') {
      return `"${path}" has an empty, "." or ".." segment; give the plain path`;
    }
    if (forbiddenCharacters.test(segment) || hasControlCharacter(segment)) {
      return `"${path}" contains one of < > " | ? * ~ / : or a control character (alternate data streams, short names and other spellings are refused); give the plain path`;
    }
    if (/[. ]$/.test(segment)) {
      return `"${path}" has a segment ending in "." or a space, which Windows strips; give the plain path`;
    }
    if (reservedNames.test(segment)) return `"${path}" names a device (${segment})`;
  }
  const lower = path.toLowerCase();
  for (const own of [winfleetDir, hostPaths.certDir]) {
    if (lower.startsWith(`${own.toLowerCase()}\\`)) {
      return `"${path}" is inside ${own}, which holds winfleet's own files and the node's credentials`;
    }
  }
  return undefined;
}
