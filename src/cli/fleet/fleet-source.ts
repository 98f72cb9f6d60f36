/**
 * Reading the fleet for `hosts list` and `status`: the WindowsHosts and pools of a namespace
 * (or all), the Nodes and the RuntimeClasses, once (list calls) or kept current (the
 * operator's self-healing informers) for `status -w`. A missing pool CRD, or a list RBAC
 * forbids, leaves that part out with a warning instead of failing the whole view; a missing
 * WindowsHost CRD is an error that says to install winfleet.
 */
import * as k8s from '@kubernetes/client-node';
import { type WindowsHost, windowsHostResource } from '../../api/windows-host.ts';
import { type WindowsNodePool, windowsNodePoolResource } from '../../api/windows-node-pool.ts';
import { Informer } from '../../controller-runtime/informer.ts';
import { resources, slimNode } from '../../controller-runtime/informer-factory.ts';
import { httpStatus, isForbidden, isNotFound } from '../../kube/client.ts';
import { isForbiddenStatus, isNotFoundStatus } from '../../net/http-status.ts';
import { cliExit, ExitCode } from '../exit-codes.ts';
import type { FleetObjects } from './fleet-status.ts';

const [group, version] = windowsHostResource.apiVersion.split('/') as [string, string];

async function listCustom<T>(
  kc: k8s.KubeConfig,
  plural: string,
  namespace: string | undefined,
): Promise<T[]> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const list = (
    namespace === undefined
      ? await custom.listClusterCustomObject({ group, version, plural })
      : await custom.listNamespacedCustomObject({ group, version, namespace, plural })
  ) as { items: T[] };
  return list.items;
}

const notInstalled = (error: unknown) => isNotFound(error);

/** The namespace's (or every namespace's) WindowsHosts; exit 1 when winfleet is not installed. */
export async function listHosts(
  kc: k8s.KubeConfig,
  namespace: string | undefined,
): Promise<WindowsHost[]> {
  try {
    return await listCustom<WindowsHost>(kc, windowsHostResource.plural, namespace);
  } catch (error) {
    if (notInstalled(error))
      throw cliExit(
        ExitCode.problem,
        'the cluster has no WindowsHost API (CRD windowshosts.winfleet.io): install winfleet first (helm install winfleet …, see the README)',
      );
    throw error;
  }
}

/** The pools, or undefined with the reason when they cannot be read. */
export async function listPools(
  kc: k8s.KubeConfig,
  namespace: string | undefined,
): Promise<{ pools?: WindowsNodePool[]; unavailable?: string }> {
  try {
    return {
      pools: await listCustom<WindowsNodePool>(kc, windowsNodePoolResource.plural, namespace),
    };
  } catch (error) {
    const status = httpStatus(error);
    if (isNotFoundStatus(status))
      return { unavailable: 'pools: the WindowsNodePool CRD is not installed' };
    if (isForbiddenStatus(status))
      return { unavailable: 'pools: not allowed to list windowsnodepools (RBAC)' };
    throw error;
  }
}

/** Nodes and RuntimeClasses, each left out (with a warning) when RBAC forbids listing it. */
async function listClusterScoped(kc: k8s.KubeConfig) {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const node = kc.makeApiClient(k8s.NodeV1Api);
  const unavailable: string[] = [];
  const forbidden =
    <T>(what: string) =>
    (error: unknown): T[] => {
      if (!isForbidden(error)) throw error;
      unavailable.push(`${what}: not allowed to list ${what} (RBAC); node columns are empty`);
      return [];
    };
  const [nodes, runtimeClasses] = await Promise.all([
    core.listNode().then((l) => l.items.map(slimNode), forbidden<k8s.V1Node>('nodes')),
    node.listRuntimeClass().then((l) => l.items, forbidden<k8s.V1RuntimeClass>('runtimeclasses')),
  ]);
  return { nodes, runtimeClasses, unavailable };
}

/** The fleet, read once. */
export async function readFleet(
  kc: k8s.KubeConfig,
  namespace: string | undefined,
): Promise<FleetObjects> {
  const [hosts, pools, cluster] = await Promise.all([
    listHosts(kc, namespace),
    listPools(kc, namespace),
    listClusterScoped(kc),
  ]);
  return {
    hosts,
    nodes: cluster.nodes,
    ...(pools.pools ? { pools: pools.pools } : {}),
    runtimeClasses: cluster.runtimeClasses,
    unavailable: [...(pools.unavailable ? [pools.unavailable] : []), ...cluster.unavailable],
  };
}

export interface WatchOptions {
  /** Stops the watch (SIGINT). */
  signal: AbortSignal;
  /** Coalesces bursts of events into one call (default 300 ms). */
  debounceMs?: number;
  /** An informer error (it retries by itself); shown, not fatal. */
  onError?: (error: unknown) => void;
}

/**
 * Calls `onChange` with the fleet once the caches are filled and again after every change,
 * until `signal` aborts. The first read is a plain readFleet, so its errors (CRD missing,
 * cluster unreachable) end the command as without -w.
 */
export async function watchFleet(
  kc: k8s.KubeConfig,
  namespace: string | undefined,
  onChange: (objects: FleetObjects) => void,
  options: WatchOptions,
): Promise<void> {
  const first = await readFleet(kc, namespace);
  if (options.signal.aborted) return;
  const base = {
    ...(namespace ? { namespace } : {}),
    onError: options.onError,
    maxBackoffMs: 5_000,
  };
  const hosts = new Informer<WindowsHost>(kc, { ...base, resource: windowsHostResource });
  const pools = first.pools
    ? new Informer<WindowsNodePool>(kc, { ...base, resource: windowsNodePoolResource })
    : undefined;
  const nodes = first.unavailable?.some((u) => u.startsWith('nodes:'))
    ? undefined
    : new Informer<k8s.V1Node>(kc, {
        resource: resources.nodes,
        transform: slimNode,
        onError: options.onError,
        maxBackoffMs: 5_000,
      });
  const runtimeClasses = first.unavailable?.some((u) => u.startsWith('runtimeclasses:'))
    ? undefined
    : new Informer<k8s.V1RuntimeClass>(kc, {
        resource: resources.runtimeClasses,
        onError: options.onError,
        maxBackoffMs: 5_000,
      });
  const informers = (
    [hosts, pools, nodes, runtimeClasses] as (Informer<k8s.KubernetesObject> | undefined)[]
  ).filter((i) => i !== undefined);
  const snapshot = (): FleetObjects => ({
    hosts: hosts.list(),
    nodes: nodes?.list() ?? [],
    ...(pools ? { pools: pools.list() } : {}),
    runtimeClasses: runtimeClasses?.list() ?? [],
    unavailable: first.unavailable ?? [],
  });
  let timer: NodeJS.Timeout | undefined;
  let synced = false;
  const changed = () => {
    if (!synced || options.signal.aborted) return;
    clearTimeout(timer);
    timer = setTimeout(() => onChange(snapshot()), options.debounceMs ?? 300);
  };
  for (const informer of informers)
    informer.on('add', changed).on('update', changed).on('delete', changed);
  const stopped = new Promise<void>((resolve) => {
    if (options.signal.aborted) resolve();
    options.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  try {
    await Promise.race([Promise.all(informers.map((i) => i.start())), stopped]);
    if (options.signal.aborted) return;
    synced = true;
    onChange(snapshot());
    await stopped;
  } finally {
    clearTimeout(timer);
    for (const informer of informers) informer.stop();
  }
}
