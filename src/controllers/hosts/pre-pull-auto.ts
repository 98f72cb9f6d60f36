/**
 * spec.prePull.auto (issue 35, item 4): "the images that Windows workloads in the cluster run,
 * resolved for the host's build".
 *
 * - Which images: those of the containers of the Running pods on the cluster's Windows nodes
 *   (the operator's Node cache says which: kubernetes.io/os=windows), counted by image, most
 *   used first. One cluster-wide pod list (the operator may list pods: drain does), cached for
 *   workloadTtlMs; a failed list gives none (the explicit images still go) and is logged.
 * - For which host: only images whose reference parses and whose registry the address policy
 *   allows (prePullProblems, as for a listed image), and whose size pre-pull-sizes.ts found for
 *   the Node's build: its lookup went through the resolver (mirrors, the address policy) and
 *   chose a Windows variant the build runs. An image whose lookup fails is left out, never
 *   waited for. The explicit images come first, the cap (prePullLimits.maxImages) holds for all.
 * - No churn on a running node (autoListKept): a changed list would make its agent pull again
 *   and the operator taint it, so the auto part is recomputed only while the Node shows no run
 *   of its agent for its current boot and services version (prePullState: a new Node, a reboot,
 *   an upgrade), or when the administrator's own part of the spec changed. Otherwise the list
 *   the operator signed on the Node stays as it is.
 *
 * What a pod creator can cause (docs/security.md): a pull of an image it names, onto the nodes
 * of an auto pool at their next join, reboot or upgrade. Not a pull outside the address policy,
 * nor of an image no variant of which runs on the build, nor more than the cap, nor a new taint
 * on a running node.
 */
import type * as k8s from '@kubernetes/client-node';
import {
  type PrePullSpec,
  parsePrePullCommand,
  prePullCommand,
  prePullProblems,
  prePullState,
} from '../../api/pre-pull.ts';
import { formatImageReference, parseImageReference } from '../../images/image-reference.ts';
import type { Logger } from '../../log/logger.ts';

/** The images of the Windows workloads of the cluster, most used first (normalised). */
export interface WorkloadImages {
  images(): Promise<string[]>;
}

export interface WorkloadImagesOptions {
  /** Lists the cluster's Running pods (one cluster-wide list). */
  listPods: () => Promise<k8s.V1Pod[]>;
  /** The Nodes as the operator's cache has them. */
  nodes: () => readonly k8s.V1Node[];
  log: Logger;
  /** How long a list is used (default 5 min). */
  ttlMs?: number;
  now?: () => number;
}

/**
 * The images of `pods` that run on the Windows nodes among `nodes`, counted by normalised
 * reference (a reference that does not parse is left out), most used first, then by name.
 * @package
 */
export function windowsWorkloadImages(
  pods: readonly k8s.V1Pod[],
  nodes: readonly k8s.V1Node[],
): string[] {
  const windows = new Set(
    nodes
      .filter((n) => n.metadata?.labels?.['kubernetes.io/os'] === 'windows')
      .map((n) => n.metadata?.name),
  );
  const counts = new Map<string, number>();
  for (const pod of pods) {
    if (pod.status?.phase !== 'Running' || !windows.has(pod.spec?.nodeName)) continue;
    for (const container of pod.spec?.containers ?? []) {
      try {
        const reference = formatImageReference(parseImageReference(container.image ?? ''));
        counts.set(reference, (counts.get(reference) ?? 0) + 1);
      } catch {
        // Not an image reference winfleet pulls: left out.
      }
    }
  }
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([r]) => r);
}

/** A WorkloadImages with its cache (one per operator). */
export function createWorkloadImages(options: WorkloadImagesOptions): WorkloadImages {
  const now = options.now ?? Date.now;
  const ttlMs = options.ttlMs ?? 5 * 60_000;
  let cached: { pods: k8s.V1Pod[]; until: number } | undefined;
  let inFlight: Promise<k8s.V1Pod[]> | undefined;
  const pods = async (): Promise<k8s.V1Pod[]> => {
    if (cached && cached.until > now()) return cached.pods;
    inFlight ??= options
      .listPods()
      .then((list) => {
        cached = { pods: list, until: now() + ttlMs };
        return list;
      })
      .catch((error: unknown) => {
        options.log.warn('cannot list the pods for spec.prePull.auto; the next pass tries again', {
          error: (error as Error).message,
        });
        return [];
      })
      .finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  };
  return {
    async images() {
      return windowsWorkloadImages(await pods(), options.nodes());
    },
  };
}

/**
 * The auto images a Node of build gets: of `workload`, those prePullProblems accepts (they
 * parse; the address policy allows their registry) and whose size was found for the build
 * (`sized`: pre-pull-sizes.ts, a variant the build runs), in order.
 * @package
 */
export function autoPrePullImages(
  workload: readonly string[],
  sized: ReadonlyMap<string, number>,
): string[] {
  return workload.filter(
    (image) => sized.has(image) && prePullProblems({ images: [image] }).length === 0,
  );
}

/**
 * Whether a Node of an auto pool keeps the list on it as it is (see the header): its agent ran
 * (or runs) for the Node's current boot and services version, the list on it is one the
 * operator signed (`signed`: the annotation's value when its signature holds), and the
 * administrator's part of it (the listed images, in order, the timeout and parallelism) is
 * still `spec`'s. Otherwise the list is computed afresh.
 * @package
 */
export function autoListKept(
  node: k8s.V1Node,
  spec: PrePullSpec,
  signed: string | undefined,
): boolean {
  if (signed === undefined || prePullState(node) === undefined) return false;
  let current: ReturnType<typeof parsePrePullCommand>;
  try {
    current = parsePrePullCommand(signed);
  } catch {
    return false;
  }
  const explicit = prePullCommand(spec);
  if (
    current.timeoutSeconds !== explicit.timeoutSeconds ||
    current.maxParallel !== explicit.maxParallel
  )
    return false;
  return explicit.images.every((image, i) => current.images[i]?.reference === image.reference);
}
