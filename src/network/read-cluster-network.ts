/**
 * Reads what detect-cluster-network.ts decides on from the API server, read-only, with the
 * credentials given (the operator's ServiceAccount, or the user's kubeconfig for `winfleet
 * check`), then resolves `network.mode` against it (resolve-network.ts).
 *
 * The requests, and so the RBAC it needs (networkReaderRules; the chart's ClusterRole grants
 * exactly these, charts/winfleet/templates/rbac.yaml):
 * - list apps/daemonsets in all namespaces (paged);
 * - get core configmaps named network.flannel.configMap.name, in its namespace or in
 *   kube-flannel then kube-system, and nowhere else;
 * - get operator.tigera.io/v1 installations "default" (the one the Tigera operator reconciles);
 * - get operator.openshift.io/v1 networks "cluster" (OpenShift's network operator config).
 * A 404 (no such object, or the CRD is not installed) means absent; the two custom resources
 * may also be refused (403) without failing the whole read: the decision then says what it
 * could not verify. A refused DaemonSet list or ConfigMap read fails the read.
 */
import * as k8s from '@kubernetes/client-node';
import type { NetworkResolution } from '../api/network-mode.ts';
import type { NetworkConfig } from '../config/winfleet-config.ts';
import { httpStatus, isNotFound } from '../kube/client.ts';
import { isNotFoundStatus, isRefusedStatus } from '../net/http-status.ts';
import {
  type ClusterView,
  type ConfigMapView,
  type DaemonSetView,
  daemonSetView,
  type Lookup,
} from './cluster-view.ts';
import {
  type DetectedNetwork,
  detectClusterNetwork,
  flannelConfigMapNamespaces,
} from './detect-cluster-network.ts';
import { resolveNetwork } from './resolve-network.ts';

/** One RBAC rule, as a ClusterRole holds it. */
export interface RbacRule {
  apiGroups: string[];
  resources: string[];
  resourceNames?: string[];
  verbs: string[];
}

export const tigeraInstallation = {
  group: 'operator.tigera.io',
  version: 'v1',
  plural: 'installations',
  name: 'default',
} as const;
export const openshiftNetworkOperator = {
  group: 'operator.openshift.io',
  version: 'v1',
  plural: 'networks',
  name: 'cluster',
} as const;

/** The read-only rules the reader needs for a flannel ConfigMap of this name. */
export function networkReaderRules(flannelConfigMapName: string): RbacRule[] {
  return [
    { apiGroups: ['apps'], resources: ['daemonsets'], verbs: ['list'] },
    {
      apiGroups: [''],
      resources: ['configmaps'],
      resourceNames: [flannelConfigMapName],
      verbs: ['get'],
    },
    {
      apiGroups: [tigeraInstallation.group],
      resources: [tigeraInstallation.plural],
      resourceNames: [tigeraInstallation.name],
      verbs: ['get'],
    },
    {
      apiGroups: [openshiftNetworkOperator.group],
      resources: [openshiftNetworkOperator.plural],
      resourceNames: [openshiftNetworkOperator.name],
      verbs: ['get'],
    },
  ];
}

async function lookup(
  kc: k8s.KubeConfig,
  what: { group: string; version: string; plural: string; name: string },
): Promise<Lookup<unknown>> {
  try {
    const object = await kc.makeApiClient(k8s.CustomObjectsApi).getClusterCustomObject({ ...what });
    return { state: 'found', object };
  } catch (error) {
    const status = httpStatus(error);
    if (isNotFoundStatus(status)) return { state: 'absent' };
    if (isRefusedStatus(status))
      return {
        state: 'unreadable',
        why: `get ${what.plural}.${what.group} ${what.name} was refused (${status})`,
      };
    throw error;
  }
}

/** Every DaemonSet of the cluster, as views (paged, 500 at a time). */
async function listDaemonSets(kc: k8s.KubeConfig): Promise<DaemonSetView[]> {
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const views: DaemonSetView[] = [];
  let _continue: string | undefined;
  do {
    const page = await apps.listDaemonSetForAllNamespaces({
      limit: 500,
      ...(_continue ? { _continue } : {}),
    });
    views.push(...page.items.map(daemonSetView));
    _continue = page.metadata?._continue || undefined;
  } while (_continue);
  return views;
}

/** What the cluster shows of its pod network (read-only). */
export async function readClusterView(
  kc: k8s.KubeConfig,
  network: NetworkConfig,
): Promise<ClusterView> {
  const { name } = network.flannel.configMap;
  const namespaces = flannelConfigMapNamespaces(network.flannel.configMap);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const [daemonSets, configMaps, tigera, openshift] = await Promise.all([
    listDaemonSets(kc),
    Promise.all(
      namespaces.map(async (namespace): Promise<ConfigMapView | undefined> => {
        try {
          const cm = await core.readNamespacedConfigMap({ name, namespace });
          return { namespace, name, data: { ...(cm.data ?? {}) } };
        } catch (error) {
          if (isNotFound(error)) return undefined;
          throw error;
        }
      }),
    ),
    lookup(kc, tigeraInstallation),
    lookup(kc, openshiftNetworkOperator),
  ]);
  return {
    daemonSets,
    flannelConfigMaps: configMaps.filter((c): c is ConfigMapView => c !== undefined),
    flannelLookedAt: namespaces.map((namespace) => `${namespace}/${name}`),
    tigeraInstallation: tigera,
    openshiftNetwork: openshift,
  };
}

export interface ClusterNetworkReading {
  detected: DetectedNetwork;
  resolution: NetworkResolution;
}

/** Reads the cluster and resolves `network` against it; throws when the reading is refused. */
export async function readClusterNetwork(
  kc: k8s.KubeConfig,
  network: NetworkConfig,
): Promise<ClusterNetworkReading> {
  const view = await readClusterView(kc, network);
  const detected = detectClusterNetwork(view, {
    flannelConfigMap: network.flannel.configMap,
    ...(network.external.daemonSet ? { externalDaemonSet: network.external.daemonSet } : {}),
  });
  return { detected, resolution: resolveNetwork(network, detected) };
}
