/**
 * How a Windows host of one build can run an image: under process isolation (the image's build
 * is one the host runs: compatibility.ts, containerd's CheckHostAndContainerCompat), only under
 * Hyper-V isolation (a Windows variant of the same major.minor no newer than the host: "Hyper-V
 * isolation … the host OS version must be the same as or newer than the container OS version",
 * learn.microsoft.com/virtualization/windowscontainers/deploy-containers/version-compatibility),
 * or not at all (no Windows variant, or only newer ones).
 */
import { isCompatibleBuild, parseWindowsVersion } from './compatibility.ts';

export type Isolation = 'process' | 'hyperv' | 'none';

export interface IsolationAnswer {
  isolation: Isolation;
  /** The os.version of the variant it would run (the newest that fits), when one does. */
  osVersion?: string;
}

/**
 * How a host of build `hostBuild` ("10.0.20348", or with a revision) runs an image offering
 * Windows variants `osVersions` (an empty string: a variant without os.version, which runs
 * anywhere). Throws a WinfleetError for a malformed build or os.version.
 *
 * @example isolationOn('10.0.20348', ['10.0.17763.6054']) // { isolation: 'hyperv', osVersion: '10.0.17763.6054' }
 */
export function isolationOn(hostBuild: string, osVersions: readonly string[]): IsolationAnswer {
  const host = parseWindowsVersion(hostBuild, 'host Windows build');
  const newestFirst = [...osVersions].sort((a, b) => buildOf(b) - buildOf(a));
  const process = newestFirst.find((v) => isCompatibleBuild(hostBuild, v));
  if (process !== undefined) return { isolation: 'process', osVersion: process };
  const hyperv = newestFirst.find((v) => {
    const image = parseWindowsVersion(v, 'image os.version');
    return image.major === host.major && image.minor === host.minor && image.build <= host.build;
  });
  return hyperv !== undefined ? { isolation: 'hyperv', osVersion: hyperv } : { isolation: 'none' };
}

function buildOf(osVersion: string): number {
  return osVersion === '' ? Number.MAX_SAFE_INTEGER : parseWindowsVersion(osVersion).build;
}
