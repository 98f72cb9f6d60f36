/**
 * Keeps one RuntimeClass per Windows build (and architecture) present among the nodes, named by
 * release (windows-2019, windows-2022, windows-2025; windows-10-0-25398 for builds without a
 * known name), and on nodes of pools that allow Hyper-V isolation one Hyper-V class per release
 * no newer than the node's (windows-2019-hyperv: handler runhcs-wcow-hypervisor), with the handler, node selector and Windows toleration the seeds tell users to
 * write by hand. Classes carry the winfleet managed-by label; a class of the same name that a
 * user created is never touched. A class outlives the last node of its build by a grace period,
 * then it is removed.
 *
 * Keys are RuntimeClass names. The node cache files each Windows node under the class its
 * flavor needs (runtimeClassIndex), so a Node event enqueues at most the classes of its old
 * and new flavor, and a pass over one class reads one node of that index, not every node.
 */
import * as k8s from '@kubernetes/client-node';
import { EventReason } from '../../api/reasons.ts';
import type { WinfleetConfig } from '../../config/winfleet-config.ts';
import { Controller, everythingKey } from '../../controller-runtime/controller.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import type { Informer } from '../../controller-runtime/informer.ts';
import type { ReconcileResult } from '../../controller-runtime/work-queue.ts';
import { isNotFound } from '../../kube/client.ts';
import type { Logger } from '../../log/logger.ts';
import { windowsBuildLabel, windowsReleases } from '../../windows/builds.ts';
import {
  hyperVHandler,
  hyperVImageBuilds,
  hyperVIsolationLabel,
  hyperVRuntimeClassName,
} from '../../windows/isolation.ts';

/** @package */
export const managedByLabel = 'app.kubernetes.io/managed-by';
/** @package */
export const managedByValue = 'winfleet';
/** When a managed class lost its last node; it is deleted a grace period later. */
export const orphanedSinceAnnotation = 'winfleet.io/orphaned-since';
const fieldManager = 'winfleet-runtimeclasses';
/** The node index: the RuntimeClass name a Windows node's flavor needs. */
export const runtimeClassIndex = 'runtimeClass';

/** A build/architecture pair that needs a RuntimeClass. */
export interface WindowsFlavor {
  build: string;
  arch: string;
}

/** The RuntimeClass name for a flavor: windows-2022, windows-2022-arm64, windows-10-0-25398. */
export function runtimeClassName({ build, arch }: WindowsFlavor): string {
  const release = windowsReleases.find((r) => r.build === build);
  const base = release ? `windows-${release.name}` : `windows-${build.replaceAll('.', '-')}`;
  return arch === 'amd64' ? base : `${base}-${arch}`;
}

/** The RuntimeClass winfleet wants for a flavor. */
export function desiredRuntimeClass(
  flavor: WindowsFlavor,
  config: WinfleetConfig,
): k8s.V1RuntimeClass {
  const taint = config.placement.windowsTaint;
  return {
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: { name: runtimeClassName(flavor), labels: { [managedByLabel]: managedByValue } },
    handler: config.runtimeClasses.handler,
    scheduling: {
      nodeSelector: {
        'kubernetes.io/os': 'windows',
        'kubernetes.io/arch': flavor.arch,
        [windowsBuildLabel]: flavor.build,
      },
      tolerations: [
        { key: taint.key, operator: 'Equal', value: taint.value, effect: taint.effect },
      ],
    },
  };
}

/** The flavor of a Windows node carrying a well-formed windows-build label. */
export function windowsFlavorOf(node: k8s.V1Node): WindowsFlavor | undefined {
  const labels = node.metadata?.labels ?? {};
  const build = labels[windowsBuildLabel];
  if (labels['kubernetes.io/os'] !== 'windows' || !build || !/^\d+\.\d+\.\d+$/.test(build))
    return undefined;
  return { build, arch: labels['kubernetes.io/arch'] ?? 'amd64' };
}

/** A Hyper-V RuntimeClass a node of a pool that allows Hyper-V isolation needs. */
export interface HyperVFlavor {
  name: string;
  /** The image build the class is for (the node's own or an older release). */
  imageBuild: string;
  arch: string;
}

/**
 * The Hyper-V classes a Windows node labelled winfleet.io/hyperv-isolation=true needs: one per
 * known release no newer than its build (windows-2019-hyperv, windows-2022-hyperv on a 2022
 * node); none for other nodes.
 */
export function hyperVFlavorsOf(node: k8s.V1Node): HyperVFlavor[] {
  const flavor = windowsFlavorOf(node);
  if (!flavor || node.metadata?.labels?.[hyperVIsolationLabel] !== 'true') return [];
  return hyperVImageBuilds(flavor.build).map((imageBuild) => ({
    name: hyperVRuntimeClassName(imageBuild, flavor.arch),
    imageBuild,
    arch: flavor.arch,
  }));
}

/**
 * The managed Hyper-V RuntimeClass: containerd's Hyper-V handler, and a nodeSelector on the
 * Hyper-V label, os and arch but not the build: every Hyper-V node of a build no older than the
 * image's runs it (the webhook adds the build affinity for the pod's images).
 */
export function desiredHyperVRuntimeClass(
  flavor: HyperVFlavor,
  config: WinfleetConfig,
): k8s.V1RuntimeClass {
  const taint = config.placement.windowsTaint;
  return {
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: { name: flavor.name, labels: { [managedByLabel]: managedByValue } },
    handler: hyperVHandler,
    scheduling: {
      nodeSelector: {
        'kubernetes.io/os': 'windows',
        'kubernetes.io/arch': flavor.arch,
        [hyperVIsolationLabel]: 'true',
      },
      tolerations: [
        { key: taint.key, operator: 'Equal', value: taint.value, effect: taint.effect },
      ],
    },
  };
}

/** The RuntimeClasses a node's flavor needs, as index values ([] for other nodes). */
export function runtimeClassOf(node: k8s.V1Node): string[] {
  const flavor = windowsFlavorOf(node);
  if (!flavor) return [];
  return [runtimeClassName(flavor), ...hyperVFlavorsOf(node).map((f) => f.name)];
}

/** The class `name` as node `node` needs it, or undefined. */
function desiredFor(
  node: k8s.V1Node | undefined,
  name: string,
  config: WinfleetConfig,
): k8s.V1RuntimeClass | undefined {
  const flavor = node ? windowsFlavorOf(node) : undefined;
  if (!node || !flavor) return undefined;
  if (runtimeClassName(flavor) === name) return desiredRuntimeClass(flavor, config);
  const hyperV = hyperVFlavorsOf(node).find((f) => f.name === name);
  return hyperV ? desiredHyperVRuntimeClass(hyperV, config) : undefined;
}

function isManaged(rc: k8s.V1RuntimeClass | undefined): boolean {
  return rc?.metadata?.labels?.[managedByLabel] === managedByValue;
}

/** JSON with object keys sorted, so equal values compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)),
        )
      : v,
  );
}

function sameSpec(a: k8s.V1RuntimeClass, b: k8s.V1RuntimeClass): boolean {
  return a.handler === b.handler && canonical(a.scheduling ?? {}) === canonical(b.scheduling ?? {});
}

export interface RuntimeClassControllerDeps {
  kc: k8s.KubeConfig;
  nodes: Informer<k8s.V1Node>;
  runtimeClasses: Informer<k8s.V1RuntimeClass>;
  config: () => WinfleetConfig;
  events: EventRecorder;
  log: Logger;
  now?: () => Date;
}

/** What a pass writes, bound to the API server by the wiring (apiRuntimeClassWrites). */
export interface RuntimeClassWrites {
  /** Server-side applies winfleet's class. */
  apply(desired: k8s.V1RuntimeClass): Promise<unknown>;
  /** Sets (an RFC 3339 time) or clears (null) the orphaned-since annotation of a class. */
  orphanPatch(name: string, since: string | null): Promise<unknown>;
  /** Deletes the class if still at `resourceVersion`; false when it was already gone. */
  delete(name: string, resourceVersion: string | undefined): Promise<boolean>;
}

/** The explicit state a pass over one RuntimeClass runs over. */
export interface RuntimeClassState {
  /** The node cache, indexed by runtimeClassIndex (see indexNodesByRuntimeClass). */
  nodes: Informer<k8s.V1Node>;
  runtimeClasses: Pick<Informer<k8s.V1RuntimeClass>, 'get' | 'list'>;
  config: () => WinfleetConfig;
  events: EventRecorder;
  log: Logger;
  now: () => Date;
  writes: RuntimeClassWrites;
  /** The user-owned classes already told about in an Event (once each). */
  warnedUserOwned: Set<string>;
}

/** Files each Windows node of `nodes` under the RuntimeClass its flavor needs. */
export function indexNodesByRuntimeClass(nodes: Informer<k8s.V1Node>): void {
  nodes.addIndex(runtimeClassIndex, runtimeClassOf);
}

/** The writes bound to the API server behind `kc`. */
export function apiRuntimeClassWrites(kc: k8s.KubeConfig): RuntimeClassWrites {
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  return {
    apply: (desired) =>
      objects.patch(
        desired,
        undefined,
        undefined,
        fieldManager,
        true,
        k8s.PatchStrategy.ServerSideApply,
      ),
    orphanPatch: (name, since) =>
      objects.patch(
        {
          apiVersion: 'node.k8s.io/v1',
          kind: 'RuntimeClass',
          metadata: { name, annotations: { [orphanedSinceAnnotation]: since as string } },
        },
        undefined,
        undefined,
        `${fieldManager}-orphan`,
        undefined,
        k8s.PatchStrategy.MergePatch,
      ),
    async delete(name, resourceVersion) {
      try {
        await objects.delete(
          { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name } },
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          { preconditions: { resourceVersion } },
        );
        return true;
      } catch (error) {
        if (!isNotFound(error)) throw error;
        return false;
      }
    },
  };
}

/** A class some node needs: create or update it (never a user's own). */
async function ensure(
  state: RuntimeClassState,
  name: string,
  desired: k8s.V1RuntimeClass,
): Promise<undefined> {
  const current = state.runtimeClasses.get(name);
  if (current && !isManaged(current)) {
    if (!state.warnedUserOwned.has(name)) {
      state.warnedUserOwned.add(name);
      state.events.record(
        { ...current, apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass' },
        'Normal',
        EventReason.UserOwned,
        `winfleet would manage ${name} for Windows ${desired.handler === hyperVHandler ? 'Hyper-V isolation' : `build ${desired.scheduling?.nodeSelector?.[windowsBuildLabel]}`}, but a user created it; winfleet leaves it as it is`,
      );
    }
    return undefined;
  }
  if (current?.metadata?.annotations?.[orphanedSinceAnnotation])
    await state.writes.orphanPatch(name, null);
  if (current && sameSpec(current, desired)) return undefined;
  await state.writes.apply(desired);
  state.log.info(current ? 'updated RuntimeClass' : 'created RuntimeClass', {
    runtimeClass: name,
    build: desired.scheduling?.nodeSelector?.[windowsBuildLabel],
  });
  return undefined;
}

/** A managed class no node needs: mark it orphaned, then delete it after the grace period. */
async function retire(
  state: RuntimeClassState,
  rc: k8s.V1RuntimeClass,
  config: WinfleetConfig,
): Promise<ReconcileResult | undefined> {
  const name = rc.metadata?.name ?? '';
  const graceMs = config.runtimeClasses.gracePeriodSeconds * 1000;
  const since = rc.metadata?.annotations?.[orphanedSinceAnnotation];
  if (!since) {
    await state.writes.orphanPatch(name, state.now().toISOString());
    state.log.info(
      'no node of this build remains; RuntimeClass will be removed after the grace period',
      { runtimeClass: name, graceSeconds: config.runtimeClasses.gracePeriodSeconds },
    );
    return { requeueAfterMs: graceMs + 50 };
  }
  const left = new Date(since).getTime() + graceMs - state.now().getTime();
  if (left > 0) return { requeueAfterMs: left + 50 };
  if (await state.writes.delete(name, rc.metadata?.resourceVersion)) {
    state.log.info('removed RuntimeClass: no node of its build for the grace period', {
      runtimeClass: name,
    });
  }
  return undefined;
}

/** Every class a node needs and every managed class: what a full pass looks at. */
export function everyClass(state: Pick<RuntimeClassState, 'nodes' | 'runtimeClasses'>): string[] {
  const names = new Set(state.nodes.indexValues(runtimeClassIndex));
  for (const rc of state.runtimeClasses.list())
    if (isManaged(rc) && rc.metadata?.name) names.add(rc.metadata.name);
  return [...names];
}

/** One pass over the RuntimeClass `name`: ensure it while a node needs it, else retire it. */
export async function reconcileRuntimeClass(
  state: RuntimeClassState,
  name: string,
  config: WinfleetConfig = state.config(),
): Promise<ReconcileResult | undefined> {
  if (!config.runtimeClasses.enabled) return undefined;
  const desired = desiredFor(state.nodes.firstByIndex(runtimeClassIndex, name), name, config);
  if (desired) return ensure(state, name, desired);
  const rc = state.runtimeClasses.get(name);
  return rc && isManaged(rc) ? retire(state, rc, config) : undefined;
}

/** Creates the controller and wires it to node and RuntimeClass events. */
export function createRuntimeClassController(deps: RuntimeClassControllerDeps): Controller {
  const state: RuntimeClassState = {
    nodes: deps.nodes,
    runtimeClasses: deps.runtimeClasses,
    config: deps.config,
    events: deps.events,
    log: deps.log,
    now: deps.now ?? (() => new Date()),
    writes: apiRuntimeClassWrites(deps.kc),
    warnedUserOwned: new Set<string>(),
  };
  indexNodesByRuntimeClass(deps.nodes);
  const controller = new Controller({
    name: 'runtimeclasses',
    log: deps.log,
    async reconcile(name) {
      const config = deps.config();
      if (name !== everythingKey) return reconcileRuntimeClass(state, name, config);
      if (config.runtimeClasses.enabled)
        for (const each of everyClass(state)) controller.enqueue(each);
      return undefined;
    },
  });
  watchRuntimeClassEvents(controller, deps.nodes, deps.runtimeClasses);
  return controller;
}

/** A Node event enqueues the classes it gained or lost; a class event, that class. */
function watchRuntimeClassEvents(
  controller: Controller,
  nodes: Informer<k8s.V1Node>,
  runtimeClasses: Informer<k8s.V1RuntimeClass>,
): void {
  const classOf = (node: k8s.V1Node) => {
    for (const name of runtimeClassOf(node)) controller.enqueue(name);
  };
  nodes
    .on('add', classOf)
    .on('delete', classOf)
    .on('update', (node, old) => {
      const [next, before] = [runtimeClassOf(node), runtimeClassOf(old)];
      for (const name of next) if (!before.includes(name)) controller.enqueue(name);
      for (const name of before) if (!next.includes(name)) controller.enqueue(name);
    });
  const byName = (rc: k8s.V1RuntimeClass) => {
    if (rc.metadata?.name) controller.enqueue(rc.metadata.name);
  };
  runtimeClasses.on('add', byName).on('update', byName).on('delete', byName);
}
