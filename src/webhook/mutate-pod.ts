/**
 * The mutating half of the Pod webhook: adds to a Windows pod what it needs to land on a
 * compatible Windows node (the Windows toleration, the os nodeSelector, spec.os.name, required
 * node affinity on the builds that can run its images, and for a pod that names a gMSA
 * credential spec the nodeSelector winfleet.io/gmsa-ready=true), and, in the Linux-tainted
 * mode, the Linux toleration to a Linux pod. It only adds what is missing, never removes or
 * overrides what the user wrote, and records every change in an annotation. Admitting an
 * already-mutated pod yields an empty patch.
 */
import type * as k8s from '@kubernetes/client-node';
import { gmsaReadyLabel } from '../api/node-annotations.ts';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import { windowsBuildLabel } from '../windows/builds.ts';
import { hyperVIsolationLabel } from '../windows/isolation.ts';
import { type JsonPatchOperation, pointer } from './json-patch.ts';
import {
  affinityMentions,
  declaredPodOs,
  gmsaCredentialSpecNames,
  hostProcessState,
  osLabel,
  type PodOs,
  type RuntimeClassSelectors,
} from './pod-os.ts';
import { describeTaint, podTolerates, tolerationFor } from './tolerations.ts';

/** The annotation listing what the webhook changed, so `kubectl get pod -o yaml` explains itself. */
export const mutationsAnnotation = 'winfleet.io/mutations';

export interface MutationInput {
  config: WinfleetConfig;
  runtimeClasses: RuntimeClassSelectors;
  /** Builds that can run every Windows image of the pod; undefined: do not constrain. */
  allowedBuilds?: string[];
  /** Opt-in detection: every image resolves only to Windows manifests. */
  imagesOnlyWindows?: boolean;
  /**
   * The managed Hyper-V RuntimeClass to set (with the nodeSelector winfleet.io/hyperv-isolation
   * =true, which the API server's RuntimeClass plugin, run before webhooks, did not merge in)
   * when the pod names no RuntimeClass.
   */
  hyperVRuntimeClass?: string;
}

export interface Mutation {
  podOs?: PodOs;
  changes: string[];
  patch: JsonPatchOperation[];
}

/** True when the user (or a RuntimeClass) already constrained the Windows build. */
export function buildIsPinned(pod: k8s.V1Pod, runtimeClasses: RuntimeClassSelectors): boolean {
  if (pod.spec?.nodeSelector?.[windowsBuildLabel]) return true;
  if (affinityMentions(pod, windowsBuildLabel)) return true;
  const rc = pod.spec?.runtimeClassName ? runtimeClasses(pod.spec.runtimeClassName) : undefined;
  return Boolean(rc?.[windowsBuildLabel]);
}

/** Computes the patch for a pod being created. */
export function mutatePod(pod: k8s.V1Pod, input: MutationInput): Mutation {
  const podOs = declaredPodOs(pod, input.runtimeClasses, input.imagesOnlyWindows);
  const patch: JsonPatchOperation[] = [];
  const changes: string[] = [];
  const spec = pod.spec ?? ({} as k8s.V1PodSpec);

  const addToleration = (taint: WinfleetConfig['placement']['windowsTaint']) => {
    // A RuntimeClass's tolerations and nodeSelector are already merged in: the API server's
    // RuntimeClass admission plugin runs before webhooks.
    if (podTolerates(spec.tolerations, taint)) return;
    const toleration = tolerationFor(taint);
    if (spec.tolerations) patch.push({ op: 'add', path: '/spec/tolerations/-', value: toleration });
    else patch.push({ op: 'add', path: '/spec/tolerations', value: [toleration] });
    changes.push(`added toleration ${describeTaint(taint)}`);
  };

  let hasNodeSelector = spec.nodeSelector !== undefined;
  const addNodeSelector = (key: string, value: string, why = '') => {
    if (hasNodeSelector)
      patch.push({ op: 'add', path: pointer('spec', 'nodeSelector', key), value });
    else patch.push({ op: 'add', path: '/spec/nodeSelector', value: { [key]: value } });
    hasNodeSelector = true;
    changes.push(`added nodeSelector ${key}=${value}${why}`);
  };

  if (podOs?.os === 'windows') {
    addToleration(input.config.placement.windowsTaint);
    if (spec.nodeSelector?.[osLabel] === undefined) addNodeSelector(osLabel, 'windows');
    // gMSA pods go only to nodes whose agent found the host able to run them.
    const gmsa = gmsaReadySelector(pod);
    if (gmsa) addNodeSelector(gmsaReadyLabel, 'true', gmsa);
    if (input.hyperVRuntimeClass && !spec.runtimeClassName) {
      patch.push({ op: 'add', path: '/spec/runtimeClassName', value: input.hyperVRuntimeClass });
      changes.push(`set runtimeClassName=${input.hyperVRuntimeClass} (Hyper-V isolation)`);
      if (spec.nodeSelector?.[hyperVIsolationLabel] === undefined)
        addNodeSelector(hyperVIsolationLabel, 'true');
    }
    if (!spec.os) {
      patch.push({ op: 'add', path: '/spec/os', value: { name: 'windows' } });
      changes.push('set spec.os.name=windows');
    }
    const allowed = input.allowedBuilds;
    if (
      allowed &&
      allowed.length > 0 &&
      hostProcessState(pod) === 'none' &&
      !buildIsPinned(pod, input.runtimeClasses)
    ) {
      patch.push(...buildAffinityPatch(pod, allowed));
      changes.push(`added required node affinity ${windowsBuildLabel} In [${allowed.join(', ')}]`);
    }
  } else if (input.config.placement.linuxTaint.enabled) {
    addToleration(input.config.placement.linuxTaint);
  }

  if (changes.length > 0) {
    const previous = pod.metadata?.annotations?.[mutationsAnnotation];
    const value = previous ? `${previous}; ${changes.join('; ')}` : changes.join('; ');
    if (pod.metadata?.annotations) {
      patch.push({
        op: 'add',
        path: pointer('metadata', 'annotations', mutationsAnnotation),
        value,
      });
    } else {
      patch.push({
        op: 'add',
        path: '/metadata/annotations',
        value: { [mutationsAnnotation]: value },
      });
    }
  }
  return { podOs, changes, patch };
}

/** Why a gMSA pod needs winfleet.io/gmsa-ready=true, or undefined when it does not (or has it). */
function gmsaReadySelector(pod: k8s.V1Pod): string | undefined {
  const gmsa = gmsaCredentialSpecNames(pod);
  if (gmsa.length === 0 || pod.spec?.nodeSelector?.[gmsaReadyLabel] !== undefined) return undefined;
  if (affinityMentions(pod, gmsaReadyLabel)) return undefined;
  return ` (gMSA credential spec ${[...new Set(gmsa.map((g) => g.name))].join(', ')})`;
}

/** Adds `windows-build In allowed` to every required term (terms are ORed), or creates one. */
function buildAffinityPatch(pod: k8s.V1Pod, allowed: string[]): JsonPatchOperation[] {
  const expression: k8s.V1NodeSelectorRequirement = {
    key: windowsBuildLabel,
    operator: 'In',
    values: allowed,
  };
  const affinity = pod.spec?.affinity;
  const nodeAffinity = affinity?.nodeAffinity;
  const required = nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  const fresh = { nodeSelectorTerms: [{ matchExpressions: [expression] }] };
  if (!affinity)
    return [
      {
        op: 'add',
        path: '/spec/affinity',
        value: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: fresh } },
      },
    ];
  if (!nodeAffinity)
    return [
      {
        op: 'add',
        path: '/spec/affinity/nodeAffinity',
        value: { requiredDuringSchedulingIgnoredDuringExecution: fresh },
      },
    ];
  const base = '/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution';
  if (!required || (required.nodeSelectorTerms ?? []).length === 0) {
    return [{ op: 'add', path: base, value: { ...required, ...fresh } }];
  }
  return required.nodeSelectorTerms.map((term, i) =>
    term.matchExpressions
      ? {
          op: 'add' as const,
          path: `${base}/nodeSelectorTerms/${i}/matchExpressions/-`,
          value: expression,
        }
      : {
          op: 'add' as const,
          path: `${base}/nodeSelectorTerms/${i}/matchExpressions`,
          value: [expression],
        },
  );
}
