/**
 * Keeps one RuntimeClass per Windows build (and architecture) present among the nodes, named by
 * release (windows-2019, windows-2022, windows-2025; windows-10-0-25398 for builds without a
 * known name), with the handler, node selector and Windows toleration the seeds tell users to
 * write by hand. Classes carry the winfleet managed-by label; a class of the same name that a
 * user created is never touched. A class outlives the last node of its build by a grace period,
 * then it is removed.
 */
import * as k8s from '@kubernetes/client-node';
import { EventReason } from '../../api/reasons.ts';
import type { WinfleetConfig } from '../../config/winfleet-config.ts';
import { Controller, everythingKey } from '../../controller/controller.ts';
import type { EventRecorder } from '../../controller/events.ts';
import type { Informer } from '../../controller/informer.ts';
import type { ReconcileResult } from '../../controller/work-queue.ts';
import { isNotFound } from '../../kube/client.ts';
import type { Logger } from '../../log/logger.ts';
import { windowsBuildLabel, windowsReleases } from '../../windows/builds.ts';

export const managedByLabel = 'app.kubernetes.io/managed-by';
export const managedByValue = 'winfleet';
/** When a managed class lost its last node; it is deleted a grace period later. */
export const orphanedSinceAnnotation = 'winfleet.io/orphaned-since';
const fieldManager = 'winfleet-runtimeclasses';
const syncKey = everythingKey;

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

/** The flavors present among `nodes` (Windows nodes carrying the windows-build label). */
export function windowsFlavors(nodes: k8s.V1Node[]): WindowsFlavor[] {
  const seen = new Map<string, WindowsFlavor>();
  for (const node of nodes) {
    const labels = node.metadata?.labels ?? {};
    const build = labels[windowsBuildLabel];
    if (labels['kubernetes.io/os'] !== 'windows' || !build || !/^\d+\.\d+\.\d+$/.test(build))
      continue;
    const arch = labels['kubernetes.io/arch'] ?? 'amd64';
    seen.set(`${build}/${arch}`, { build, arch });
  }
  return [...seen.values()];
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

/** Creates the controller and wires it to node and RuntimeClass events. */
export function createRuntimeClassController(deps: RuntimeClassControllerDeps): Controller {
  const objects = k8s.KubernetesObjectApi.makeApiClient(deps.kc);
  const now = deps.now ?? (() => new Date());
  const warnedUserOwned = new Set<string>();

  async function reconcile(): Promise<ReconcileResult | undefined> {
    const config = deps.config();
    if (!config.runtimeClasses.enabled) return undefined;
    const flavors = windowsFlavors(deps.nodes.list());
    const wanted = new Map(
      flavors.map((f) => [runtimeClassName(f), desiredRuntimeClass(f, config)]),
    );
    let nextCheckMs: number | undefined;

    for (const [name, desired] of wanted) {
      const current = deps.runtimeClasses.get(name);
      if (current && !isManaged(current)) {
        if (!warnedUserOwned.has(name)) {
          warnedUserOwned.add(name);
          deps.events.record(
            { ...current, apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass' },
            'Normal',
            EventReason.UserOwned,
            `winfleet would manage ${name} for Windows build ${desired.scheduling?.nodeSelector?.[windowsBuildLabel]}, but a user created it; winfleet leaves it as it is`,
          );
        }
        continue;
      }
      const orphaned = current?.metadata?.annotations?.[orphanedSinceAnnotation];
      if (orphaned) {
        await objects.patch(
          {
            apiVersion: 'node.k8s.io/v1',
            kind: 'RuntimeClass',
            metadata: {
              name,
              annotations: { [orphanedSinceAnnotation]: null as unknown as string },
            },
          },
          undefined,
          undefined,
          `${fieldManager}-orphan`,
          undefined,
          k8s.PatchStrategy.MergePatch,
        );
      }
      if (current && sameSpec(current, desired)) continue;
      await objects.patch(
        desired,
        undefined,
        undefined,
        fieldManager,
        true,
        k8s.PatchStrategy.ServerSideApply,
      );
      deps.log.info(current ? 'updated RuntimeClass' : 'created RuntimeClass', {
        runtimeClass: name,
        build: desired.scheduling?.nodeSelector?.[windowsBuildLabel],
      });
    }

    const graceMs = config.runtimeClasses.gracePeriodSeconds * 1000;
    for (const rc of deps.runtimeClasses.list()) {
      const name = rc.metadata?.name ?? '';
      if (!isManaged(rc) || wanted.has(name)) continue;
      const since = rc.metadata?.annotations?.[orphanedSinceAnnotation];
      if (!since) {
        await objects.patch(
          {
            apiVersion: 'node.k8s.io/v1',
            kind: 'RuntimeClass',
            metadata: { name, annotations: { [orphanedSinceAnnotation]: now().toISOString() } },
          },
          undefined,
          undefined,
          `${fieldManager}-orphan`,
          undefined,
          k8s.PatchStrategy.MergePatch,
        );
        deps.log.info(
          'no node of this build remains; RuntimeClass will be removed after the grace period',
          { runtimeClass: name, graceSeconds: config.runtimeClasses.gracePeriodSeconds },
        );
        nextCheckMs = Math.min(nextCheckMs ?? graceMs, graceMs);
        continue;
      }
      const left = new Date(since).getTime() + graceMs - now().getTime();
      if (left > 0) {
        nextCheckMs = Math.min(nextCheckMs ?? left, left);
        continue;
      }
      try {
        await objects.delete(
          { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name } },
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          { preconditions: { resourceVersion: rc.metadata?.resourceVersion } },
        );
        deps.log.info('removed RuntimeClass: no node of its build for the grace period', {
          runtimeClass: name,
        });
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    }
    return nextCheckMs === undefined ? undefined : { requeueAfterMs: nextCheckMs + 50 };
  }

  const controller = new Controller({ name: 'runtimeclasses', reconcile, log: deps.log });
  const poke = () => controller.enqueue(syncKey);
  deps.nodes
    .on('add', poke)
    .on('delete', poke)
    .on('update', (node, old) => {
      const a = node.metadata?.labels ?? {};
      const b = old.metadata?.labels ?? {};
      if (
        a[windowsBuildLabel] !== b[windowsBuildLabel] ||
        a['kubernetes.io/os'] !== b['kubernetes.io/os'] ||
        a['kubernetes.io/arch'] !== b['kubernetes.io/arch']
      )
        poke();
    });
  deps.runtimeClasses.on('add', poke).on('update', poke).on('delete', poke);
  return controller;
}
