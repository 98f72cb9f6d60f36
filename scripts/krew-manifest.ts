/**
 * The krew plugin manifest (plugins/krew/winfleet.yaml): filled in for a built archive, and
 * checked the way krew checks a manifest before installing it (its internal/index/validation:
 * apiVersion and kind, a safe plugin name that matches the file, a one-line shortDescription, a
 * semver version with a leading v, and per platform a uri, a lower-case SHA-256, a bin, file
 * operations with both ends, and a selector on os/arch only). On top of krew's rules it checks
 * what krew only finds out at install time: the SHA-256 is the archive's, every `from` is in the
 * archive, and `bin` is an executable file the operations put in place.
 */
import { parse } from 'yaml';

export const krewApiVersion = 'krew.googlecontainertools.github.com/v1alpha2';

/** The template's placeholders, each replaced exactly. */
export interface ManifestValues {
  VERSION: string;
  HOMEPAGE: string;
  BASE_URL: string;
  SHA256: string;
}

/** The template with its ${NAME} placeholders filled; refuses an unknown or missing one. */
export function renderManifest(template: string, values: ManifestValues): string {
  const text = template.replace(/\$\{([A-Z_0-9]+)\}/g, (_, name: string) => {
    if (!Object.hasOwn(values, name))
      throw new Error(`plugins/krew/winfleet.yaml: unknown placeholder \${${name}}`);
    return values[name as keyof ManifestValues];
  });
  return text;
}

/** A file in the archive: its path and whether it is executable. */
export interface ArchiveEntry {
  path: string;
  executable: boolean;
}

interface FileOperation {
  from?: unknown;
  to?: unknown;
}

const windowsReserved = new Set([
  'CON',
  'PRN',
  'AUX',
  'NUL',
  ...[1, 2, 3, 4, 5, 6, 7, 8, 9].flatMap((n) => [`COM${n}`, `LPT${n}`]),
]);
const semver =
  /^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$/;

/**
 * What is wrong with `text` as the manifest of plugin `name` for an archive with `entries` and
 * SHA-256 `archiveSha256` (checked for the platform whose selector is `platform`); empty when
 * nothing is.
 */
export function manifestProblems(
  text: string,
  name: string,
  archive: { sha256: string; entries: ArchiveEntry[]; platform: { os: string; arch: string } },
): string[] {
  const problems: string[] = [];
  let doc: Record<string, unknown>;
  try {
    doc = parse(text, { strict: true, uniqueKeys: true }) as Record<string, unknown>;
  } catch (error) {
    return [`not YAML: ${(error as Error).message}`];
  }
  if (doc?.apiVersion !== krewApiVersion)
    problems.push(`apiVersion is ${JSON.stringify(doc?.apiVersion)}, krew needs ${krewApiVersion}`);
  if (doc?.kind !== 'Plugin') problems.push(`kind is ${JSON.stringify(doc?.kind)}, not Plugin`);
  const metadata = (doc?.metadata ?? {}) as Record<string, unknown>;
  if (!/^[\w-]+$/.test(name) || windowsReserved.has(name.toUpperCase()))
    problems.push(`plugin name "${name}" is not allowed`);
  if (metadata.name !== name)
    problems.push(`metadata.name is ${JSON.stringify(metadata.name)}, not "${name}"`);
  const spec = (doc?.spec ?? {}) as Record<string, unknown>;
  if (typeof spec.shortDescription !== 'string' || spec.shortDescription === '')
    problems.push('spec.shortDescription is missing');
  else if (/[\r\n]/.test(spec.shortDescription))
    problems.push('spec.shortDescription has a line break');
  if (typeof spec.version !== 'string' || !semver.test(spec.version))
    problems.push(`spec.version ${JSON.stringify(spec.version)} is not v<semver>`);
  if (typeof spec.homepage !== 'string' || !/^https:\/\//.test(spec.homepage))
    problems.push('spec.homepage is not an https:// address');
  const platforms = Array.isArray(spec.platforms)
    ? (spec.platforms as Record<string, unknown>[])
    : [];
  if (platforms.length === 0) problems.push('spec.platforms is empty');
  let matched = 0;
  platforms.forEach((platform, i) => {
    const at = `spec.platforms[${i}]`;
    if (typeof platform.uri !== 'string' || !/^https:\/\/\S+\.tar\.gz$/.test(platform.uri))
      problems.push(`${at}.uri is not an https:// address of a .tar.gz`);
    if (typeof platform.sha256 !== 'string' || !/^[a-f0-9]{64}$/.test(platform.sha256))
      problems.push(`${at}.sha256 is not 64 lower-case hex digits`);
    if (typeof platform.bin !== 'string' || platform.bin === '')
      problems.push(`${at}.bin is missing`);
    const selector = (platform.selector ?? {}) as {
      matchLabels?: Record<string, unknown>;
      matchExpressions?: unknown[];
    };
    const labels = selector.matchLabels ?? {};
    if (Object.keys(labels).length === 0 && !selector.matchExpressions?.length)
      problems.push(`${at}.selector is empty`);
    for (const key of Object.keys(labels))
      if (key !== 'os' && key !== 'arch')
        problems.push(`${at}.selector key "${key}" is not os or arch`);
    if (labels.os !== archive.platform.os || labels.arch !== archive.platform.arch) return;
    matched++;
    if (platform.sha256 !== archive.sha256)
      problems.push(
        `${at}.sha256 ${String(platform.sha256)} is not the archive's ${archive.sha256}`,
      );
    const files = platform.files as FileOperation[] | undefined;
    if (files !== undefined && (!Array.isArray(files) || files.length === 0))
      problems.push(`${at}.files must be left out or non-empty`);
    const installed = new Map<string, ArchiveEntry>();
    for (const [j, op] of (files ?? [{ from: '*', to: '.' }]).entries()) {
      if (
        typeof op.from !== 'string' ||
        op.from === '' ||
        typeof op.to !== 'string' ||
        op.to === ''
      ) {
        problems.push(`${at}.files[${j}] needs both from and to`);
        continue;
      }
      const from = op.from;
      const sources = archive.entries.filter((e) => (from === '*' ? true : e.path === from));
      if (sources.length === 0)
        problems.push(`${at}.files[${j}].from "${from}" is not in the archive`);
      for (const source of sources)
        installed.set(op.to === '.' ? source.path : `${op.to}/${source.path}`, source);
    }
    const bin = installed.get(String(platform.bin));
    if (!bin) problems.push(`${at}.bin "${String(platform.bin)}" is not among the installed files`);
    else if (!bin.executable)
      problems.push(`${at}.bin "${String(platform.bin)}" is not executable`);
  });
  if (platforms.length > 0 && matched === 0)
    problems.push(`no platform selects os=${archive.platform.os} arch=${archive.platform.arch}`);
  return problems;
}
