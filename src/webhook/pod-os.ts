/**
 * Which operating system a pod is for, decided from what the user wrote: spec.os.name, the
 * kubernetes.io/os nodeSelector, required node affinity on kubernetes.io/os, a RuntimeClass
 * that selects Windows nodes, a gMSA credential spec name, or (opt-in) images that resolve
 * only to Windows manifests.
 */
import type * as k8s from '@kubernetes/client-node';

/** @package */
export const osLabel = 'kubernetes.io/os';
export const archLabel = 'kubernetes.io/arch';

/** What the webhook knows about RuntimeClasses: the node selector of each, by name. */
export type RuntimeClassSelectors = (name: string) => Record<string, string> | undefined;

/** @package */
export interface PodOs {
  os: 'windows' | 'linux';
  /** Why, for the annotation and for logs, e.g. "spec.os.name=windows". */
  reason: string;
}

/** Required node affinity terms of a pod. */
export function requiredTerms(pod: k8s.V1Pod): k8s.V1NodeSelectorTerm[] {
  return (
    pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
      ?.nodeSelectorTerms ?? []
  );
}

/** True when every required term pins `label` to values within `accepted`. */
function affinityRequires(pod: k8s.V1Pod, label: string, accepted: string): boolean {
  const terms = requiredTerms(pod);
  return (
    terms.length > 0 &&
    terms.every((term) =>
      (term.matchExpressions ?? []).some(
        (e) =>
          e.key === label &&
          e.operator === 'In' &&
          (e.values?.length ?? 0) > 0 &&
          e.values!.every((v) => v === accepted),
      ),
    )
  );
}

/** True when any required term mentions `label` (the user constrained it themselves). */
export function affinityMentions(pod: k8s.V1Pod, label: string): boolean {
  return requiredTerms(pod).some((term) =>
    (term.matchExpressions ?? []).some((e) => e.key === label),
  );
}

/**
 * The OS the pod declares, or undefined when it declares none. `imagesOnlyWindows` is the
 * opt-in image-based answer (undefined when not enabled or not known).
 */
export function declaredPodOs(
  pod: k8s.V1Pod,
  runtimeClasses: RuntimeClassSelectors,
  imagesOnlyWindows?: boolean,
): PodOs | undefined {
  const spec = pod.spec;
  if (spec?.os?.name === 'windows') return { os: 'windows', reason: 'spec.os.name=windows' };
  if (spec?.nodeSelector?.[osLabel] === 'windows')
    return { os: 'windows', reason: `nodeSelector ${osLabel}=windows` };
  if (affinityRequires(pod, osLabel, 'windows'))
    return { os: 'windows', reason: `required node affinity ${osLabel} In [windows]` };
  if (spec?.runtimeClassName) {
    const selector = runtimeClasses(spec.runtimeClassName);
    if (selector?.[osLabel] === 'windows') {
      return {
        os: 'windows',
        reason: `runtimeClassName ${spec.runtimeClassName} selects Windows nodes`,
      };
    }
  }
  if (spec?.os?.name === 'linux') return { os: 'linux', reason: 'spec.os.name=linux' };
  if (spec?.nodeSelector?.[osLabel] === 'linux')
    return { os: 'linux', reason: `nodeSelector ${osLabel}=linux` };
  // Only Windows has gMSA: a pod that names a credential spec is a Windows pod.
  const gmsa = gmsaCredentialSpecNames(pod)[0];
  if (gmsa) return { os: 'windows', reason: `${gmsa.field} is set` };
  if (imagesOnlyWindows)
    return { os: 'windows', reason: 'every image resolves only to Windows manifests' };
  return undefined;
}

/** All containers of a pod with their field paths. */
export function podContainers(pod: k8s.V1Pod): { path: string; container: k8s.V1Container }[] {
  const out: { path: string; container: k8s.V1Container }[] = [];
  for (const [field, list] of [
    ['initContainers', pod.spec?.initContainers],
    ['containers', pod.spec?.containers],
    ['ephemeralContainers', pod.spec?.ephemeralContainers as k8s.V1Container[] | undefined],
  ] as const) {
    for (const [i, container] of (list ?? []).entries())
      out.push({ path: `spec.${field}[${i}]`, container });
  }
  return out;
}

/** Whether the pod (or each of its containers) runs as HostProcess. */
export function hostProcessState(pod: k8s.V1Pod): 'all' | 'none' | 'mixed' {
  const podLevel = pod.spec?.securityContext?.windowsOptions?.hostProcess;
  const flags = podContainers(pod).map(
    ({ container }) => container.securityContext?.windowsOptions?.hostProcess ?? podLevel ?? false,
  );
  if (flags.length === 0) return podLevel ? 'all' : 'none';
  if (flags.every(Boolean)) return 'all';
  if (flags.some(Boolean)) return 'mixed';
  return 'none';
}

/** A gMSA credential spec a pod names, with the field that names it. */
export interface GmsaCredentialSpecName {
  /** e.g. "spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpecName". */
  field: string;
  name: string;
}

/**
 * Every gmsaCredentialSpecName of a pod: the pod's securityContext.windowsOptions and each
 * container's (init, regular and ephemeral), in that order; a container without its own
 * inherits the pod's, which is listed once, at the pod.
 */
export function gmsaCredentialSpecNames(pod: k8s.V1Pod): GmsaCredentialSpecName[] {
  const out: GmsaCredentialSpecName[] = [];
  const podName = pod.spec?.securityContext?.windowsOptions?.gmsaCredentialSpecName;
  if (podName)
    out.push({
      field: 'spec.securityContext.windowsOptions.gmsaCredentialSpecName',
      name: podName,
    });
  for (const { path, container } of podContainers(pod)) {
    const name = container.securityContext?.windowsOptions?.gmsaCredentialSpecName;
    if (name)
      out.push({ field: `${path}.securityContext.windowsOptions.gmsaCredentialSpecName`, name });
  }
  return out;
}
