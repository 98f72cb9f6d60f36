/**
 * The migration plan's core (pure): which workloads run Windows pods, and whether each can
 * move to a target Windows build. A workload is a Deployment, StatefulSet, DaemonSet, Job,
 * CronJob, or a pod no controller owns; one whose pods are Windows pods by what its template
 * declares (webhook/pod-os.ts: spec.os, the kubernetes.io/os selector or affinity, a Windows
 * RuntimeClass, a gMSA credential spec). For each container image, how the target build runs
 * it (windows/isolation.ts); then what else holds it back:
 * - a node selector, required affinity or RuntimeClass pinning another Windows build: it would
 *   never be scheduled on the target's nodes (blocker, naming the field);
 * - HostProcess containers run on the host, outside any isolation: their binaries and scripts
 *   must work on the target build (a note, not provable from the image);
 * - a gMSA credential spec: the target's hosts must be domain-joined and allowed to retrieve
 *   the account (a note).
 * A workload moves ('ready') when every image runs under process isolation and nothing pins it;
 * 'hyperv' when some image runs there only under Hyper-V isolation; 'blocked' when an image has
 * no variant the target runs or something pins it; 'unknown' when an image could not be looked up.
 */
import type * as k8s from '@kubernetes/client-node';
import type { ImageFacts } from '../webhook/placement.ts';
import {
  declaredPodOs,
  gmsaCredentialSpecNames,
  hostProcessState,
  podContainers,
  type RuntimeClassSelectors,
  requiredTerms,
} from '../webhook/pod-os.ts';
import { windowsBuildLabel } from '../windows/builds.ts';
import { type Isolation, isolationOn } from '../windows/isolation.ts';

export const workloadKinds = [
  'Deployment',
  'StatefulSet',
  'DaemonSet',
  'Job',
  'CronJob',
  'Pod',
] as const;
export type WorkloadKind = (typeof workloadKinds)[number];

/** A workload and the pod it makes (its template, or the pod itself). */
export interface Workload {
  kind: WorkloadKind;
  namespace: string;
  name: string;
  pod: k8s.V1Pod;
}

/** What the registry said about an image: its Windows os.versions, or why it is not known. */
export type ImageLookup =
  | { state: 'resolved'; windowsVersions: string[] }
  | { state: 'unknown'; reason: string };

export type ImageVerdict = Isolation | 'unknown';

export interface ImagePlan {
  /** The container's field path, e.g. "spec.containers[0]". */
  container: string;
  image: string;
  verdict: ImageVerdict;
  /** The variant the target build would run. */
  osVersion?: string;
  /** The Windows os.versions the image offers. */
  variants: string[];
  /** Why the lookup failed ('unknown'). */
  reason?: string;
}

export type WorkloadVerdict = 'ready' | 'hyperv' | 'blocked' | 'unknown';

export interface WorkloadPlan {
  kind: WorkloadKind;
  namespace: string;
  name: string;
  verdict: WorkloadVerdict;
  images: ImagePlan[];
  /** What stops it besides its images (a pinned build). */
  blockers: string[];
  /** What to check by hand (HostProcess, gMSA). */
  notes: string[];
}

/** Whether a workload's pods are Windows pods, by what they declare. */
export function runsWindowsPods(pod: k8s.V1Pod, runtimeClasses: RuntimeClassSelectors): boolean {
  return declaredPodOs(pod, runtimeClasses)?.os === 'windows';
}

/** The Windows builds a pod is pinned to, with the field that pins it (none: any build). */
function pinnedBuilds(
  pod: k8s.V1Pod,
  runtimeClasses: RuntimeClassSelectors,
): { field: string; builds: string[] }[] {
  const pins: { field: string; builds: string[] }[] = [];
  const selector = pod.spec?.nodeSelector?.[windowsBuildLabel];
  if (selector) pins.push({ field: `nodeSelector ${windowsBuildLabel}`, builds: [selector] });
  const runtimeClass = pod.spec?.runtimeClassName;
  const classBuild = runtimeClass ? runtimeClasses(runtimeClass)?.[windowsBuildLabel] : undefined;
  if (classBuild)
    pins.push({
      field: `runtimeClassName ${runtimeClass} (${windowsBuildLabel})`,
      builds: [classBuild],
    });
  const terms = requiredTerms(pod);
  const termBuilds = terms.map((term) =>
    (term.matchExpressions ?? [])
      .filter((e) => e.key === windowsBuildLabel && e.operator === 'In')
      .flatMap((e) => e.values ?? []),
  );
  // Required terms are ORed: the pod is pinned only when every term names builds.
  if (terms.length > 0 && termBuilds.every((b) => b.length > 0))
    pins.push({
      field: `required node affinity ${windowsBuildLabel}`,
      builds: [...new Set(termBuilds.flat())],
    });
  return pins;
}

/**
 * The plan of one workload for `target` (a build, "10.0.20348"; `targetName` for messages:
 * "2022"), from the lookups of its images (by image reference as written).
 */
export function planWorkload(
  workload: Workload,
  lookups: ReadonlyMap<string, ImageLookup>,
  target: { build: string; name: string },
  runtimeClasses: RuntimeClassSelectors,
): WorkloadPlan {
  const images: ImagePlan[] = podContainers(workload.pod)
    .filter(({ container }) => container.image)
    .map(({ path, container }) => {
      const image = container.image!;
      const lookup = lookups.get(image);
      if (!lookup || lookup.state === 'unknown')
        return {
          container: path,
          image,
          verdict: 'unknown',
          variants: [],
          reason: lookup?.reason ?? 'not looked up',
        };
      const answer = isolationOn(target.build, lookup.windowsVersions);
      return {
        container: path,
        image,
        verdict: answer.isolation,
        ...(answer.osVersion !== undefined ? { osVersion: answer.osVersion } : {}),
        variants: lookup.windowsVersions,
      };
    });
  const blockers: string[] = [];
  for (const pin of pinnedBuilds(workload.pod, runtimeClasses))
    if (!pin.builds.includes(target.build))
      blockers.push(
        `${pin.field} pins it to ${pin.builds.join(', ')}: set it to ${target.build} or remove it (winfleet's webhook places Windows pods on a build their images run on)`,
      );
  for (const image of images)
    if (image.verdict === 'none')
      blockers.push(
        image.variants.length === 0
          ? `${image.container} image ${image.image} has no Windows variant`
          : `${image.container} image ${image.image} is for ${image.variants.join(', ')}, newer than ${target.name} (${target.build}): use a tag built for ${target.name} or older`,
      );
  const notes: string[] = [];
  if (hostProcessState(workload.pod) !== 'none')
    notes.push(
      `HostProcess containers run on the host without isolation: check that their binaries and scripts work on ${target.name}`,
    );
  const gmsa = gmsaCredentialSpecNames(workload.pod).map((g) => g.name);
  if (gmsa.length > 0)
    notes.push(
      `gMSA credential spec ${[...new Set(gmsa)].join(', ')}: the ${target.name} hosts must be domain-joined and allowed to retrieve the account`,
    );
  const verdict: WorkloadVerdict =
    blockers.length > 0
      ? 'blocked'
      : images.some((i) => i.verdict === 'unknown')
        ? 'unknown'
        : images.some((i) => i.verdict === 'hyperv')
          ? 'hyperv'
          : 'ready';
  return {
    kind: workload.kind,
    namespace: workload.namespace,
    name: workload.name,
    verdict,
    images,
    blockers,
    notes,
  };
}

/** The objects a plan reads, as the API lists them. */
export interface WorkloadObjects {
  deployments: k8s.V1Deployment[];
  statefulSets: k8s.V1StatefulSet[];
  daemonSets: k8s.V1DaemonSet[];
  jobs: k8s.V1Job[];
  cronJobs: k8s.V1CronJob[];
  pods: k8s.V1Pod[];
}

/**
 * The workloads that run Windows pods, sorted by namespace, kind and name. A Job a CronJob owns
 * is its CronJob's; a pod that any controller owns is its controller's.
 */
export function windowsWorkloads(
  objects: WorkloadObjects,
  runtimeClasses: RuntimeClassSelectors,
): Workload[] {
  const out: Workload[] = [];
  const add = (
    kind: WorkloadKind,
    object: k8s.KubernetesObject,
    template: k8s.V1PodTemplateSpec | undefined,
  ) => {
    const pod: k8s.V1Pod = {
      metadata: { ...template?.metadata, namespace: object.metadata?.namespace ?? '' },
      ...(template?.spec ? { spec: template.spec } : {}),
    };
    if (!runsWindowsPods(pod, runtimeClasses)) return;
    out.push({
      kind,
      namespace: object.metadata?.namespace ?? '',
      name: object.metadata?.name ?? '',
      pod,
    });
  };
  const owned = (o: k8s.KubernetesObject, kinds?: readonly string[]) =>
    (o.metadata?.ownerReferences ?? []).some(
      (r) => r.controller === true && (!kinds || kinds.includes(r.kind)),
    );
  for (const d of objects.deployments) add('Deployment', d, d.spec?.template);
  for (const s of objects.statefulSets) add('StatefulSet', s, s.spec?.template);
  for (const d of objects.daemonSets) add('DaemonSet', d, d.spec?.template);
  for (const j of objects.jobs) if (!owned(j, ['CronJob'])) add('Job', j, j.spec?.template);
  for (const c of objects.cronJobs) add('CronJob', c, c.spec?.jobTemplate?.spec?.template);
  for (const p of objects.pods)
    if (!owned(p))
      add('Pod', p, { metadata: p.metadata ?? {}, ...(p.spec ? { spec: p.spec } : {}) });
  return out.sort(
    (a, b) =>
      a.namespace.localeCompare(b.namespace) ||
      workloadKinds.indexOf(a.kind) - workloadKinds.indexOf(b.kind) ||
      a.name.localeCompare(b.name),
  );
}

/** The lookups planWorkload takes, from what the webhook's resolver found of a pod's images. */
export function lookupsFromFacts(facts: readonly ImageFacts[]): Map<string, ImageLookup> {
  const lookups = new Map<string, ImageLookup>();
  for (const f of facts)
    lookups.set(
      f.image,
      f.state === 'resolved'
        ? { state: 'resolved', windowsVersions: f.windowsVersions }
        : { state: 'unknown', reason: f.reason ?? 'the registry did not answer' },
    );
  return lookups;
}
