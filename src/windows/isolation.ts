/**
 * How a Windows host of one build can run an image: under process isolation (the image's build
 * is one the host runs: compatibility.ts, containerd's CheckHostAndContainerCompat), only under
 * Hyper-V isolation (a Windows variant of the same major.minor no newer than the host: "Hyper-V
 * isolation … the host OS version must be the same as or newer than the container OS version",
 * learn.microsoft.com/virtualization/windowscontainers/deploy-containers/version-compatibility),
 * or not at all (no Windows variant, or only newer ones).
 */

import { windowsReleases } from './builds.ts';
import { isCompatibleBuild, parseWindowsVersion, type WindowsVersion } from './compatibility.ts';

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

/**
 * The Node label winfleet puts on nodes of pools whose spec.isolation.hyperV is true: their
 * containerd has the Hyper-V handler (hyperVHandler) configured.
 */
export const hyperVIsolationLabel = 'winfleet.io/hyperv-isolation';

/**
 * containerd's CRI runtime handler for Hyper-V isolated Windows containers: the name the
 * containerd Windows configuration and the Kubernetes docs use for runhcs with
 * SandboxIsolation = 1 (hcsshim cmd/containerd-shim-runhcs-v1/options runhcs.proto: HYPERVISOR).
 */
export const hyperVHandler = 'runhcs-wcow-hypervisor';

/**
 * The managed Hyper-V RuntimeClass for images of Windows build `imageBuild` (major.minor.build):
 * windows-2019-hyperv, windows-2022-hyperv-arm64, windows-10-0-25398-hyperv.
 *
 * @example hyperVRuntimeClassName('10.0.17763', 'amd64') // 'windows-2019-hyperv'
 */
export function hyperVRuntimeClassName(imageBuild: string, arch = 'amd64'): string {
  const release = windowsReleases.find((r) => r.build === imageBuild);
  const base = release ? `windows-${release.name}` : `windows-${imageBuild.replaceAll('.', '-')}`;
  return arch === 'amd64' ? `${base}-hyperv` : `${base}-hyperv-${arch}`;
}

/**
 * The known releases whose images a Hyper-V node of build `nodeBuild` runs under Hyper-V
 * isolation: those of the same major.minor no newer than it (the node's own included).
 * Malformed builds give none.
 *
 * @example hyperVImageBuilds('10.0.20348') // ['10.0.17763', '10.0.20348']
 */
export function hyperVImageBuilds(nodeBuild: string): string[] {
  let node: WindowsVersion;
  try {
    node = parseWindowsVersion(nodeBuild, 'node Windows build');
  } catch {
    return [];
  }
  return windowsReleases
    .map((r) => r.build as string)
    .filter((build) => {
      const image = parseWindowsVersion(build);
      return image.major === node.major && image.minor === node.minor && image.build <= node.build;
    });
}
