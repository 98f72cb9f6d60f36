/**
 * Which Windows builds can run a pod's images: the builds (among the known LTSC releases and
 * those of the cluster's nodes) on which every Windows image has a compatible variant. A
 * multi-platform image is compatible with a build when any of its Windows variants is, as
 * containerd picks the best-matching one for the host.
 */
import { windowsReleases } from '../windows/builds.ts';

/** What the registry said about one image of the pod. */
export interface ImageFacts {
  image: string;
  /** Field path, e.g. "spec.containers[0].image". */
  path: string;
  state: 'resolved' | 'unknown';
  /** Why the image could not be resolved (registry unreachable, not found, time budget). */
  reason?: string;
  /** os.version of each Windows variant ("" when a variant declares none). */
  windowsVersions: string[];
  /** True when the image has a non-Windows variant (e.g. linux). */
  hasOtherOs: boolean;
}

/** Decides whether a host build ("10.0.20348") can run an image os.version. */
export type BuildCompatibility = (hostBuild: string, imageOsVersion: string) => boolean;

/** @package */
export interface PlacementResult {
  /** Builds that can run every Windows image; undefined when it cannot be known. */
  allowedBuilds?: string[];
  /** Images the registry could not answer for. */
  unknown: ImageFacts[];
  /** Images with no Windows variant at all. */
  notWindows: ImageFacts[];
  /** Images that no candidate build can run. */
  incompatible: ImageFacts[];
}

let lastCandidates: { key: string; value: string[] } | undefined;

/** Candidate builds: the known LTSC releases plus every build a node reports. */
export function candidateBuilds(nodeBuilds: Iterable<string>): string[] {
  const set = new Set<string>(windowsReleases.map((r) => r.build));
  for (const b of nodeBuilds) set.add(b);
  // The node builds rarely change between admissions: reuse the last sorted list.
  const key = [...set].join(',');
  if (lastCandidates?.key !== key) lastCandidates = { key, value: [...set].sort(compareBuilds) };
  return lastCandidates.value;
}

/**
 * Caches answers of `isCompatible` (a pure function of two short strings); malformed versions
 * count as incompatible rather than throwing. Bounded, as registries choose the os.versions.
 */
export function memoizeCompatibility(
  isCompatible: BuildCompatibility,
  maxEntries = 10_000,
): BuildCompatibility {
  const memo = new Map<string, boolean>();
  return (host, image) => {
    const key = `${host}|${image}`;
    let answer = memo.get(key);
    if (answer === undefined) {
      try {
        answer = isCompatible(host, image);
      } catch {
        answer = false;
      }
      if (memo.size >= maxEntries) memo.clear();
      memo.set(key, answer);
    }
    return answer;
  };
}

/** Orders "10.0.17763" < "10.0.20348" numerically. */
export function compareBuilds(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Computes the builds that can run all of a pod's Windows images. */
export function placeImages(
  images: ImageFacts[],
  candidates: string[],
  isCompatible: BuildCompatibility,
): PlacementResult {
  const result: PlacementResult = { unknown: [], notWindows: [], incompatible: [] };
  let allowed = new Set(candidates);
  for (const facts of images) {
    if (facts.state === 'unknown') {
      result.unknown.push(facts);
      continue;
    }
    if (facts.windowsVersions.length === 0) {
      result.notWindows.push(facts);
      continue;
    }
    const runs = candidates.filter((build) =>
      facts.windowsVersions.some((v) => isCompatible(build, v)),
    );
    if (runs.length === 0) result.incompatible.push(facts);
    allowed = new Set([...allowed].filter((b) => runs.includes(b)));
  }
  if (result.unknown.length === 0) result.allowedBuilds = [...allowed].sort(compareBuilds);
  return result;
}
