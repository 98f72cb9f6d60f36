/**
 * Which Windows hosts can run which Windows container images under process isolation, the only
 * isolation Kubernetes supports. The rule is hcsshim's / containerd's
 * `CheckHostAndContainerCompat`: major.minor must be equal and the revision is never compared;
 * a host older than Server 2022 (build 20348) runs only its own build; a newer host runs images
 * from the LTSC release before its own (the stable-ABI era began with 2022) up to its own build.
 * An image without os.version runs anywhere, as containerd matches it.
 */

import { WinfleetError } from '../errors/catalog.ts';
import { windowsReleases } from './builds.ts';

/** A parsed Windows version: `major.minor.build[.revision]`, e.g. 10.0.20348.2582. */
export interface WindowsVersion {
  major: number;
  minor: number;
  build: number;
  /** The update build revision (UBR); absent when the text had three parts. */
  revision?: number;
}

/** Server 2022: the first build with a stable container ABI across releases. */
export const firstStableAbiBuild = 20348;

/**
 * LTSC builds from Server 2022 on, ascending. A host at or after 20348 runs images from the
 * LTSC release before its own: 2025 (26100) runs 20348..26100, 2022 runs only 20348.
 * @package
 */
export const stableAbiLtscBuilds: readonly number[] = windowsReleases
  .filter((release) => release.ltsc)
  .map((release) => Number(release.build.split('.')[2]))
  .filter((build) => build >= firstStableAbiBuild)
  .sort((a, b) => a - b);

const part = /^(0|[1-9][0-9]*)$/;
const limits = [
  ['major', 255],
  ['minor', 255],
  ['build', 65_535],
  ['revision', 4_294_967_295],
] as const;

/**
 * Parses `major.minor.build[.revision]`. Throws a WinfleetError naming `field` for anything else
 * (empty parts, signs, spaces, leading zeros, more than four parts, numbers outside the range
 * of Windows' version fields).
 *
 * @example parseWindowsVersion('10.0.20348.2582') // { major: 10, minor: 0, build: 20348, revision: 2582 }
 */
export function parseWindowsVersion(value: string, field = 'Windows version'): WindowsVersion {
  const parts = typeof value === 'string' ? value.split('.') : [];
  const expected = `expected major.minor.build[.revision] in whole numbers, e.g. "10.0.20348" or "10.0.20348.2582"`;
  if (parts.length < 3 || parts.length > 4) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `Cannot parse ${field} "${String(value)}": ${expected}`,
    );
  }
  const numbers = parts.map((text, i) => {
    const [name, max] = limits[i]!;
    if (!part.test(text)) {
      throw new WinfleetError(
        'WF_SCHEMA_INVALID',
        `Cannot parse ${field} "${value}": ${name} "${text}" is not a whole number; ${expected}`,
      );
    }
    const number = Number(text);
    if (number > max) {
      throw new WinfleetError(
        'WF_SCHEMA_INVALID',
        `Cannot parse ${field} "${value}": ${name} ${text} is above ${max}`,
      );
    }
    return number;
  });
  const [major, minor, build, revision] = numbers as [number, number, number, number?];
  return revision === undefined ? { major, minor, build } : { major, minor, build, revision };
}

/** The oldest image build a host at or after 20348 runs: the LTSC before its own, or 20348. */
function oldestRunnableBuild(hostBuild: number): number {
  let oldest = firstStableAbiBuild;
  for (const ltsc of stableAbiLtscBuilds) if (ltsc < hostBuild) oldest = ltsc;
  return oldest;
}

/**
 * Whether a host of build `hostBuild` (the `node.kubernetes.io/windows-build` label, e.g.
 * "10.0.20348", or a full version with revision) can run an image whose os.version is
 * `imageOsVersion` under process isolation. An empty os.version matches any host. Throws a
 * RangeError for a malformed host build or os.version.
 *
 * @example isCompatibleBuild('10.0.26100', '10.0.20348.2582') // true: 2025 runs 2022 images
 * @example isCompatibleBuild('10.0.20348', '10.0.17763.6054') // false
 */
export function isCompatibleBuild(hostBuild: string, imageOsVersion: string): boolean {
  const host = parseWindowsVersion(hostBuild, 'host Windows build');
  if (imageOsVersion === '') return true;
  const image = parseWindowsVersion(imageOsVersion, 'image os.version');
  if (host.major !== image.major || host.minor !== image.minor) return false;
  if (host.build < firstStableAbiBuild) return image.build === host.build;
  return image.build >= oldestRunnableBuild(host.build) && image.build <= host.build;
}

/**
 * The os.versions one image offers: one entry for a single-platform image, one per Windows
 * entry of an index. A host runs the image when it runs any of them (the runtime picks the
 * matching entry). An empty list means no Windows variant, which no Windows host runs.
 */
export type ImageOsVersions = readonly string[];

/**
 * The node builds, among `nodeBuilds`, that can run every image in `images`; deduplicated and
 * sorted by version. Throws a WinfleetError for a malformed build or os.version.
 *
 * @example
 * compatibleNodeBuilds(['10.0.17763', '10.0.20348', '10.0.26100'], [['10.0.20348.2582']])
 * // ['10.0.20348', '10.0.26100']
 */
export function compatibleNodeBuilds(
  nodeBuilds: Iterable<string>,
  images: readonly ImageOsVersions[],
): string[] {
  const unique = [...new Set(nodeBuilds)];
  const parsed = new Map(unique.map((b) => [b, parseWindowsVersion(b, 'node Windows build')]));
  // Validate every os.version even when no node is left to check, so bad input always fails.
  for (const versions of images) {
    for (const v of versions) if (v !== '') parseWindowsVersion(v, 'image os.version');
  }
  return unique
    .filter((build) =>
      images.every((versions) => versions.some((v) => isCompatibleBuild(build, v))),
    )
    .sort((a, b) => compareWindowsVersions(parsed.get(a)!, parsed.get(b)!) || (a < b ? -1 : 1));
}

/** Orders versions by major, minor, build, then revision (a missing revision sorts first). */
export function compareWindowsVersions(a: WindowsVersion, b: WindowsVersion): number {
  return (
    a.major - b.major ||
    a.minor - b.minor ||
    a.build - b.build ||
    (a.revision ?? -1) - (b.revision ?? -1)
  );
}
