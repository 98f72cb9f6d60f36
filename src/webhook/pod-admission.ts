/**
 * Admission of Pods: decides, for one AdmissionReview request, the mutation (patch) and the
 * validation verdict, using the cluster facts the webhook keeps (RuntimeClasses, Ready
 * Windows node builds, namespaces) and image lookups bounded by a time budget.
 */
import type * as k8s from '@kubernetes/client-node';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import type { Logger } from '../log/logger.ts';
import { windowsReleases } from '../windows/builds.ts';
import type { AdmissionDecision, AdmissionRequest } from './admission-review.ts';
import { mutatePod } from './mutate-pod.ts';
import {
  type BuildCompatibility,
  candidateBuilds,
  type ImageFacts,
  type PlacementResult,
  placeImages,
} from './placement.ts';
import { declaredPodOs, hostProcessState, type RuntimeClassSelectors } from './pod-os.ts';
import { validateWindowsPod } from './validate-pod.ts';

/** Resolves the images of a pod (with its pull secrets) within `signal`'s budget. */
export type PodImageResolver = (
  pod: k8s.V1Pod,
  namespace: string,
  signal: AbortSignal,
) => Promise<ImageFacts[]>;

export interface PodAdmissionDeps {
  config: () => WinfleetConfig;
  operatorNamespace: string;
  runtimeClasses: RuntimeClassSelectors;
  /** Builds ("10.0.20348") of the Ready, schedulable Windows nodes. */
  readyWindowsBuilds: () => string[];
  resolveImages?: PodImageResolver;
  isCompatible: BuildCompatibility;
  /** GMSACredentialSpec names, or undefined when the CRD is not installed. */
  gmsaCredentialSpecs: () => Promise<ReadonlySet<string> | undefined>;
  /** True when the namespace carries the opt-out label. */
  namespaceOptedOut: (namespace: string) => boolean;
  log: Logger;
  onDecision?: (webhook: 'mutate' | 'validate', decision: string, seconds: number) => void;
}

const allow: AdmissionDecision = { allowed: true };
const neverAborted = new AbortController().signal;

function releaseName(build: string): string {
  const r = windowsReleases.find((x) => x.build === build);
  return r ? `${build} (Windows Server ${r.name})` : build;
}

function excluded(request: AdmissionRequest, pod: k8s.V1Pod, deps: PodAdmissionDeps): boolean {
  const config = deps.config();
  const namespace = request.namespace ?? pod.metadata?.namespace ?? '';
  if (namespace === deps.operatorNamespace || config.webhook.excludedNamespaces.includes(namespace))
    return true;
  // Only a namespace opts out: a pod's own labels are chosen by whoever creates it.
  return deps.namespaceOptedOut(namespace);
}

function podOf(request: AdmissionRequest): k8s.V1Pod | undefined {
  if (request.kind.kind !== 'Pod' || request.kind.group !== '' || !request.object) return undefined;
  return request.object as k8s.V1Pod;
}

async function lookUpImages(
  pod: k8s.V1Pod,
  namespace: string,
  deps: PodAdmissionDeps,
): Promise<{ placement?: PlacementResult; facts: ImageFacts[] }> {
  if (!deps.resolveImages || hostProcessState(pod) === 'all') return { facts: [] };
  // The resolver bounds every lookup by images.lookupBudgetMs itself.
  const facts = await deps.resolveImages(pod, namespace, neverAborted);
  const placement = placeImages(
    facts,
    candidateBuilds(deps.readyWindowsBuilds()),
    deps.isCompatible,
  );
  return { placement, facts };
}

/** The mutating webhook's decision for a Pod CREATE. */
export async function admitPodMutation(
  request: AdmissionRequest,
  deps: PodAdmissionDeps,
): Promise<AdmissionDecision> {
  const pod = podOf(request);
  if (!pod || request.operation !== 'CREATE' || excluded(request, pod, deps)) return allow;
  const config = deps.config();
  const namespace = request.namespace ?? '';
  let declared = declaredPodOs(pod, deps.runtimeClasses);
  let imagesOnlyWindows: boolean | undefined;
  let placement: PlacementResult | undefined;
  const warnings: string[] = [];
  if (declared?.os === 'windows' || (!declared && config.images.detectWindowsFromImages)) {
    const looked = await lookUpImages(pod, namespace, deps);
    placement = looked.placement;
    if (!declared && looked.facts.length > 0) {
      imagesOnlyWindows = looked.facts.every(
        (f) => f.state === 'resolved' && f.windowsVersions.length > 0 && !f.hasOtherOs,
      );
      declared = declaredPodOs(pod, deps.runtimeClasses, imagesOnlyWindows);
      if (declared?.os !== 'windows') placement = undefined;
    }
    for (const f of placement?.unknown ?? []) {
      warnings.push(
        `${f.path}: could not read the Windows version of ${f.image} (${f.reason}); the pod is not constrained to compatible nodes`,
      );
    }
  }
  const mutation = mutatePod(pod, {
    config,
    runtimeClasses: deps.runtimeClasses,
    allowedBuilds: placement?.allowedBuilds,
    imagesOnlyWindows,
  });
  if (mutation.changes.length > 0) {
    deps.log.debug('mutated pod', {
      namespace,
      pod: pod.metadata?.name ?? pod.metadata?.generateName,
      os: mutation.podOs?.reason,
      changes: mutation.changes,
    });
  }
  return { allowed: true, patch: mutation.patch, warnings };
}

/** The validating webhook's decision for a Pod CREATE or UPDATE. */
export async function admitPodValidation(
  request: AdmissionRequest,
  deps: PodAdmissionDeps,
): Promise<AdmissionDecision> {
  const pod = podOf(request);
  if (!pod || request.operation !== 'CREATE' || excluded(request, pod, deps)) return allow;
  const declared = declaredPodOs(pod, deps.runtimeClasses);
  if (declared?.os !== 'windows') return allow;
  const config = deps.config();
  const problems = validateWindowsPod(pod, {
    gmsaCredentialSpecs: await deps.gmsaCredentialSpecs(),
  });
  const compatibility = await compatibilityProblems(pod, request.namespace ?? '', deps);
  const warnings: string[] = [];
  if (config.images.compatibility === 'enforce') problems.push(...compatibility);
  else warnings.push(...compatibility);
  if (problems.length > 0) {
    const name = pod.metadata?.name ?? pod.metadata?.generateName ?? 'pod';
    return {
      allowed: false,
      warnings,
      code: 422,
      message: `winfleet: pod ${name} cannot run on Windows:\n${problems.map((p) => `- ${p}`).join('\n')}`,
    };
  }
  return { allowed: true, warnings };
}

async function compatibilityProblems(
  pod: k8s.V1Pod,
  namespace: string,
  deps: PodAdmissionDeps,
): Promise<string[]> {
  const { placement, facts } = await lookUpImages(pod, namespace, deps);
  if (!placement) return [];
  const ready = deps.readyWindowsBuilds();
  const readyList = ready.length > 0 ? ready.map(releaseName).join(', ') : 'none';
  const problems: string[] = [];
  for (const f of placement.unknown) {
    problems.push(
      `${f.path}: could not read the Windows version of ${f.image}: ${f.reason}; check the registry or its mirror, or set images.compatibility: warn`,
    );
  }
  for (const f of placement.notWindows) {
    problems.push(
      `${f.path}: ${f.image} has no Windows variant; use a Windows image or run the pod on Linux`,
    );
  }
  for (const f of facts) {
    if (f.state !== 'resolved' || f.windowsVersions.length === 0) continue;
    const runs = ready.filter((b) => f.windowsVersions.some((v) => deps.isCompatible(b, v)));
    if (runs.length === 0) {
      const versions = f.windowsVersions.map((v) => v || 'any').join(', ');
      problems.push(
        `${f.path}: no Ready Windows node can run ${f.image} (built for ${versions}); Ready Windows builds: ${readyList}. Use an image built for one of them, or add a node that can run it`,
      );
    }
  }
  if (
    problems.length === 0 &&
    placement.allowedBuilds &&
    !placement.allowedBuilds.some((b) => ready.includes(b))
  ) {
    problems.push(
      `spec.containers: no single Ready Windows node can run all of this pod's images together; Ready Windows builds: ${readyList}`,
    );
  }
  return problems;
}
