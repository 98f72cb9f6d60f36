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
import { type AdmissionProblem, admissionWarning, problemText } from './admission-warning.ts';
import { type GmsaUseReview, gmsaUseProblems } from './gmsa-authorization.ts';
import { type HyperVPlacement, hyperVPlacement, namesHyperVClass } from './hyperv-placement.ts';
import { mutatePod } from './mutate-pod.ts';
import {
  type BuildCompatibility,
  candidateBuilds,
  type ImageFacts,
  type PlacementResult,
  placeImages,
} from './placement.ts';
import {
  declaredPodOs,
  gmsaCredentialSpecNames,
  hostProcessState,
  type RuntimeClassSelectors,
} from './pod-os.ts';
import { gmsaWithoutCrd, validateWindowsPod } from './validate-pod.ts';

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
  /** Of them, the builds of nodes labelled winfleet.io/hyperv-isolation=true. */
  readyHyperVBuilds?: () => string[];
  resolveImages?: PodImageResolver;
  isCompatible: BuildCompatibility;
  /** GMSACredentialSpec names, or undefined when the CRD is not installed. */
  gmsaCredentialSpecs: () => Promise<ReadonlySet<string> | undefined>;
  /** Asks whether a ServiceAccount may use a GMSACredentialSpec (gmsa-authorization.ts). */
  reviewGmsaUse: GmsaUseReview;
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
  let facts: ImageFacts[] = [];
  if (declared?.os === 'windows' || (!declared && config.images.detectWindowsFromImages)) {
    const looked = await lookUpImages(pod, namespace, deps);
    placement = looked.placement;
    facts = looked.facts;
    if (!declared && looked.facts.length > 0) {
      imagesOnlyWindows = looked.facts.every(
        (f) => f.state === 'resolved' && f.windowsVersions.length > 0 && !f.hasOtherOs,
      );
      declared = declaredPodOs(pod, deps.runtimeClasses, imagesOnlyWindows);
      if (declared?.os !== 'windows') placement = undefined;
    }
    // An image whose version cannot be read is reported once, by the validating webhook,
    // which sees every Windows pod this one constrains.
  }
  const hyperV = placement ? hyperVChoice(pod, facts, placement, deps) : undefined;
  const mutation = mutatePod(pod, {
    config,
    runtimeClasses: deps.runtimeClasses,
    allowedBuilds: hyperV ? hyperV.allowedBuilds : placement?.allowedBuilds,
    imagesOnlyWindows,
    hyperVRuntimeClass: hyperV?.assign?.runtimeClass,
  });
  if (mutation.changes.length > 0) {
    deps.log.debug('mutated pod', {
      namespace,
      pod: pod.metadata?.name ?? pod.metadata?.generateName,
      os: mutation.podOs?.reason,
      changes: mutation.changes,
    });
  }
  const warnings =
    hyperV?.assign && mutation.podOs?.os === 'windows' ? [hyperVWarning(facts, hyperV.assign)] : [];
  return { allowed: true, patch: mutation.patch, ...(warnings.length > 0 ? { warnings } : {}) };
}

/**
 * Hyper-V isolation for a Windows pod (not HostProcess, which runs only process-isolated): a
 * pod that names a Hyper-V RuntimeClass is kept to the Ready Hyper-V nodes that run its images
 * that way (undefined builds: not constrained; the validating webhook reports it); a pod that
 * names no RuntimeClass, whose images no Ready node runs under process isolation, is assigned
 * the managed Hyper-V class when a Ready Hyper-V node runs them and the class exists. Undefined:
 * process isolation as usual.
 */
function hyperVChoice(
  pod: k8s.V1Pod,
  facts: ImageFacts[],
  placement: PlacementResult,
  deps: PodAdmissionDeps,
): { allowedBuilds?: string[]; assign?: HyperVPlacement } | undefined {
  if (hostProcessState(pod) !== 'none') return undefined;
  const hyperVBuilds = deps.readyHyperVBuilds?.() ?? [];
  const named = pod.spec?.runtimeClassName;
  if (namesHyperVClass(named, deps.runtimeClasses)) {
    return { allowedBuilds: hyperVPlacement(facts, hyperVBuilds)?.nodeBuilds };
  }
  if (named || !placement.allowedBuilds) return undefined;
  const ready = deps.readyWindowsBuilds();
  if (placement.allowedBuilds.some((b) => ready.includes(b))) return undefined;
  const choice = hyperVPlacement(facts, hyperVBuilds);
  // Only a class that exists and schedules onto Hyper-V nodes (winfleet's; not a user's own
  // class of that name that would send the pod elsewhere).
  if (!choice || !namesHyperVClass(choice.runtimeClass, deps.runtimeClasses)) return undefined;
  return { allowedBuilds: choice.nodeBuilds, assign: choice };
}

function hyperVWarning(facts: ImageFacts[], choice: HyperVPlacement): string {
  const images = [...new Set(facts.map((f) => f.image))].join(', ');
  return admissionWarning({
    field: 'spec.runtimeClassName',
    fix: `set to ${choice.runtimeClass}: the pod runs under Hyper-V isolation`,
    detail: `no Ready Windows node runs ${images} (built for ${releaseName(choice.imageBuild)}) under process isolation; Hyper-V nodes of build ${choice.nodeBuilds.join(', ')} do`,
  });
}

/**
 * The validating webhook's decision for a Pod CREATE, or an UPDATE of pods/ephemeralcontainers
 * (ephemeralContainerUpdate).
 */
export async function admitPodValidation(
  request: AdmissionRequest,
  deps: PodAdmissionDeps,
): Promise<AdmissionDecision> {
  const pod = podOf(request);
  if (!pod || excluded(request, pod, deps)) return allow;
  if (request.operation === 'UPDATE' && request.subResource === 'ephemeralcontainers') {
    return ephemeralContainerUpdate(request, pod, deps);
  }
  if (request.operation !== 'CREATE' || request.subResource) return allow;
  const namespace = request.namespace ?? pod.metadata?.namespace ?? '';
  const name = pod.metadata?.name ?? pod.metadata?.generateName ?? 'pod';
  const gmsaNames = gmsaCredentialSpecNames(pod);
  const specs = gmsaNames.length > 0 ? await deps.gmsaCredentialSpecs() : undefined;
  // May the pod's ServiceAccount use each credential spec it names (one that does not exist
  // is refused as such below)? Asked for every pod that names one, whatever its OS.
  const gmsaDenials =
    gmsaNames.length > 0
      ? gmsaUseProblems(
          pod,
          namespace,
          gmsaNames.filter((g) => !specs || specs.has(g.name)),
          deps.reviewGmsaUse,
        )
      : Promise.resolve([]);
  const declared = declaredPodOs(pod, deps.runtimeClasses);
  if (declared?.os !== 'windows') {
    const denials = await gmsaDenials;
    return denials.length > 0 ? refuse(name, denials, [], true) : allow;
  }
  const config = deps.config();
  const problems = validateWindowsPod(pod, { gmsaCredentialSpecs: specs });
  const warnings = gmsaWithoutCrd(pod, specs).map(admissionWarning);
  const [denials, compatibility] = await Promise.all([
    gmsaDenials,
    compatibilityProblems(pod, namespace, deps, config.images.compatibility),
  ]);
  if (config.images.compatibility === 'enforce') problems.push(...compatibility.map(problemText));
  else warnings.push(...compatibility.map(admissionWarning));
  if (denials.length > 0) return refuse(name, [...denials, ...problems], warnings, true);
  if (problems.length > 0) return refuse(name, problems, warnings, false);
  return { allowed: true, warnings };
}

/**
 * An UPDATE of pods/ephemeralcontainers (`kubectl debug`), the only way ephemeral containers
 * are added: the pod's ServiceAccount must be allowed to `use` each gMSA credential spec a new
 * ephemeral container names, as at CREATE. Containers already there (same name, same spec)
 * were admitted before and are not asked about again; nothing else of the pod can change here.
 */
async function ephemeralContainerUpdate(
  request: AdmissionRequest,
  pod: k8s.V1Pod,
  deps: PodAdmissionDeps,
): Promise<AdmissionDecision> {
  const namespace = request.namespace ?? pod.metadata?.namespace ?? '';
  const name = pod.metadata?.name ?? 'pod';
  const old = request.oldObject as k8s.V1Pod | undefined;
  const before = new Map(
    (old?.spec?.ephemeralContainers ?? []).map((c) => [
      c.name,
      c.securityContext?.windowsOptions?.gmsaCredentialSpecName,
    ]),
  );
  const added = gmsaCredentialSpecNames(pod).filter(({ field, name: spec }) => {
    const index = /^spec\.ephemeralContainers\[(\d+)\]/.exec(field)?.[1];
    if (index === undefined) return false;
    const container = pod.spec?.ephemeralContainers?.[Number(index)];
    return !container || !before.has(container.name) || before.get(container.name) !== spec;
  });
  if (added.length === 0) return allow;
  const specs = await deps.gmsaCredentialSpecs();
  const denials = await gmsaUseProblems(
    pod,
    namespace,
    added.filter((g) => !specs || specs.has(g.name)),
    deps.reviewGmsaUse,
  );
  const missing = specs
    ? added
        .filter((g) => !specs.has(g.name))
        .map(
          (g) =>
            `${g.field}: GMSACredentialSpec "${g.name}" does not exist; create it or remove the name`,
        )
    : [];
  if (denials.length > 0) return refuse(name, [...denials, ...missing], [], true);
  if (missing.length > 0) return refuse(name, missing, [], false);
  return allow;
}

/**
 * The denial: 403 when the pod's ServiceAccount may not use a gMSA credential spec it names
 * (as windows-gmsa answers), 422 when the spec cannot work on Windows.
 */
function refuse(
  name: string,
  problems: string[],
  warnings: string[],
  forbidden: boolean,
): AdmissionDecision {
  const what = forbidden ? 'is not allowed' : 'cannot run on Windows';
  return {
    allowed: false,
    warnings,
    code: forbidden ? 403 : 422,
    message: `winfleet: pod ${name} ${what}:\n${problems.map((p) => `- ${p}`).join('\n')}`,
  };
}

/** What the image checks compare against: Ready builds, and those of Hyper-V nodes. */
interface ReadyBuilds {
  ready: string[];
  readyList: string;
  hyperV: string[];
  /** The pod names a Hyper-V RuntimeClass: its images are checked against hyperV. */
  hyperVPod: boolean;
}

/**
 * Why one resolved Windows image cannot run, or undefined when it can: under Hyper-V isolation
 * on a Ready Hyper-V node for a pod of a Hyper-V class; else under process isolation on a Ready
 * node. An image that Ready nodes run only under Hyper-V isolation names the pool option.
 */
function imageProblem(
  f: ImageFacts,
  builds: ReadyBuilds,
  isCompatible: BuildCompatibility,
): AdmissionProblem | undefined {
  if (f.state !== 'resolved' || f.windowsVersions.length === 0) return undefined;
  const versions = f.windowsVersions.map((v) => v || 'any').join(', ');
  if (builds.hyperVPod) {
    if (hyperVPlacement([f], builds.hyperV)) return undefined;
    return {
      field: f.path,
      fix: `use an image of a Windows build no newer than a Ready Hyper-V node (${builds.hyperV.map(releaseName).join(', ') || 'none'}), or remove spec.runtimeClassName`,
      detail: `no Ready Hyper-V node can run ${f.image} (built for ${versions})`,
    };
  }
  if (builds.ready.some((b) => f.windowsVersions.some((v) => isCompatible(b, v)))) return undefined;
  const underHyperV = hyperVPlacement([f], builds.ready);
  if (underHyperV) {
    const allowed = hyperVPlacement([f], builds.hyperV);
    return {
      field: f.path,
      fix: allowed
        ? `remove spec.runtimeClassName so winfleet assigns ${allowed.runtimeClass} (Hyper-V isolation), or use an image built for ${builds.readyList}`
        : `set spec.isolation.hyperV: true on a WindowsNodePool of the ${underHyperV.nodeBuilds.map(releaseName).join(', ')} nodes (Hyper-V isolation), or use an image built for ${builds.readyList}`,
      detail: `Ready Windows nodes run ${f.image} (built for ${versions}) only under Hyper-V isolation${allowed ? '' : ', and no pool of theirs allows it'}`,
    };
  }
  return {
    field: f.path,
    fix:
      builds.ready.length > 0
        ? `use an image built for ${builds.readyList}, or add a node that can run it`
        : 'add a Ready Windows node that can run this image',
    detail: `no Ready Windows node can run ${f.image} (built for ${versions})`,
  };
}

/**
 * Problems with the pod's images, each with its fix first: images winfleet cannot read, images
 * without a Windows variant, images no Ready Windows node can run (alone or together).
 */
async function compatibilityProblems(
  pod: k8s.V1Pod,
  namespace: string,
  deps: PodAdmissionDeps,
  mode: WinfleetConfig['images']['compatibility'],
): Promise<AdmissionProblem[]> {
  const { placement, facts } = await lookUpImages(pod, namespace, deps);
  if (!placement) return [];
  const ready = deps.readyWindowsBuilds();
  const readyList = ready.length > 0 ? ready.map(releaseName).join(', ') : 'none';
  const problems: AdmissionProblem[] = [];
  for (const f of placement.unknown) {
    problems.push({
      field: f.path,
      fix:
        mode === 'enforce'
          ? 'check the registry or its mirror, or set images.compatibility: warn'
          : 'check the registry or its mirror',
      // The reason names the image ("Cannot read the platforms of …"); what follows from
      // it comes last, the first thing to go when a long reason is cut.
      detail: `${f.reason}${mode === 'enforce' ? '' : '; the pod is not constrained to compatible nodes'}`,
    });
  }
  for (const f of placement.notWindows) {
    problems.push({
      field: f.path,
      fix: 'use a Windows image or run the pod on Linux',
      detail: `${f.image} has no Windows variant`,
    });
  }
  const hyperVPod = namesHyperVClass(pod.spec?.runtimeClassName, deps.runtimeClasses);
  const images = { ready, readyList, hyperV: deps.readyHyperVBuilds?.() ?? [], hyperVPod };
  for (const f of facts) {
    const problem = imageProblem(f, images, deps.isCompatible);
    if (problem) problems.push(problem);
  }
  if (problems.length > 0) return problems;
  if (hyperVPod && !hyperVPlacement(facts, images.hyperV)) {
    problems.push({
      field: 'spec.containers',
      fix: 'use images built for one Windows build',
      detail: `no single Ready Hyper-V node can run all of this pod's images together in one utility VM; Ready Hyper-V builds: ${images.hyperV.join(', ') || 'none'}`,
    });
  } else if (
    !hyperVPod &&
    placement.allowedBuilds &&
    !placement.allowedBuilds.some((b) => ready.includes(b))
  ) {
    problems.push({
      field: 'spec.containers',
      fix: 'use images built for one Windows build',
      detail: `no single Ready Windows node can run all of this pod's images together; Ready Windows builds: ${readyList}`,
    });
  }
  return problems;
}
