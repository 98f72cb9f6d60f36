/**
 * Hyper-V placement: when no Ready Windows node runs a pod's images under process isolation,
 * a node of a pool that allows Hyper-V isolation (Node label winfleet.io/hyperv-isolation=true)
 * may still run them in a utility VM, if every image has a variant of one Windows build no
 * newer than the node's ("the host OS version must be the same as or newer than the container
 * OS version", learn.microsoft.com/virtualization/windowscontainers/deploy-containers/
 * version-compatibility). All containers of a pod share one utility VM, so they must share
 * that build. The pod then gets the managed RuntimeClass windows-<build>-hyperv.
 */
import { parseWindowsVersion } from '../windows/compatibility.ts';
import {
  hyperVImageBuilds,
  hyperVIsolationLabel,
  hyperVRuntimeClassName,
} from '../windows/isolation.ts';
import { compareBuilds, type ImageFacts } from './placement.ts';
import type { RuntimeClassSelectors } from './pod-os.ts';

/** Where a pod runs under Hyper-V isolation. @package */
export interface HyperVPlacement {
  /** The build (major.minor.build) of the variant every image offers. */
  imageBuild: string;
  /** The managed RuntimeClass for it (windows-2019-hyperv). */
  runtimeClass: string;
  /** Node builds, among those given, that run it under Hyper-V isolation, ascending. */
  nodeBuilds: string[];
}

/** major.minor.build of an os.version, or undefined when malformed. */
function buildOf(osVersion: string): string | undefined {
  try {
    const v = parseWindowsVersion(osVersion, 'image os.version');
    return `${v.major}.${v.minor}.${v.build}`;
  } catch {
    return undefined;
  }
}

/**
 * The Hyper-V placement of a pod's images on nodes of `nodeBuilds`: the newest known release
 * build every image has a variant of (a variant without os.version fits any) that some node
 * runs under Hyper-V isolation. Undefined when an image is unknown or has no Windows variant,
 * or when no such build and node exist.
 * @package
 *
 * @example
 * hyperVPlacement([{ image: 'a', path: 'p', state: 'resolved', windowsVersions: ['10.0.17763.6054'], hasOtherOs: false }], ['10.0.20348'])
 * // { imageBuild: '10.0.17763', runtimeClass: 'windows-2019-hyperv', nodeBuilds: ['10.0.20348'] }
 */
export function hyperVPlacement(
  facts: readonly ImageFacts[],
  nodeBuilds: readonly string[],
): HyperVPlacement | undefined {
  if (facts.length === 0) return undefined;
  if (facts.some((f) => f.state !== 'resolved' || f.windowsVersions.length === 0)) return undefined;
  const imageBuilds = new Set(nodeBuilds.flatMap(hyperVImageBuilds));
  for (const imageBuild of [...imageBuilds].sort(compareBuilds).reverse()) {
    const shared = facts.every((f) =>
      f.windowsVersions.some((v) => v === '' || buildOf(v) === imageBuild),
    );
    if (!shared) continue;
    const nodes = [...new Set(nodeBuilds)]
      .filter((n) => hyperVImageBuilds(n).includes(imageBuild))
      .sort(compareBuilds);
    return { imageBuild, runtimeClass: hyperVRuntimeClassName(imageBuild), nodeBuilds: nodes };
  }
  return undefined;
}

/** True when the pod's RuntimeClass schedules it on Hyper-V nodes. @package */
export function namesHyperVClass(
  runtimeClassName: string | undefined,
  runtimeClasses: RuntimeClassSelectors,
): boolean {
  if (!runtimeClassName) return false;
  return runtimeClasses(runtimeClassName)?.[hyperVIsolationLabel] === 'true';
}
