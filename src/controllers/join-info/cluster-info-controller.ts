/**
 * Keeps kube-public/cluster-info for hosts joining by command. A joining host reads it before
 * it trusts the cluster, as kubeadm's token discovery does: a kubeconfig naming the API server
 * and the cluster CA, which the controller manager's bootstrapsigner signs for each bootstrap
 * token with usage-bootstrap-signing (the `jws-kubeconfig-<id>` keys it adds). Clusters made
 * with kubeadm have one; others (kwok, k3s, some managed offerings) do not.
 *
 * - missing: the operator creates it, labelled as winfleet's, with the API server address
 *   hosts use (winfleet-config hosts.apiServer, else the operator's own) and the operator's CA,
 *   and (without the chart) the Role that lets anyone read it;
 * - winfleet's: the kubeconfig is kept current (a changed hosts.apiServer); only that key is
 *   written, so the signatures the signer keeps stay until it re-signs;
 * - anyone else's (kubeadm's): left alone.
 */
import * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import type { WinfleetConfig } from '../../config/winfleet-config.ts';
import { Controller, everythingKey } from '../../controller-runtime/controller.ts';
import type { Informer } from '../../controller-runtime/informer.ts';
import {
  clusterInfoKubeconfigKey,
  clusterInfoName,
  clusterInfoNamespace,
} from '../../join/cluster-info.ts';
import { isAlreadyExists, isConflict } from '../../kube/client.ts';
import type { Logger } from '../../log/logger.ts';
import { applyClusterInfoReaderRbac } from '../hosts/cluster-rbac.ts';

const managedBy = { key: 'app.kubernetes.io/managed-by', value: 'winfleet' } as const;

/**
 * The kubeconfig cluster-info holds, as kubeadm writes it: one cluster without a name, its
 * server and its CA inline, nothing else.
 */
export function clusterInfoKubeconfig(server: string, caPem: string): string {
  return stringify({
    apiVersion: 'v1',
    clusters: [
      {
        cluster: {
          'certificate-authority-data': Buffer.from(caPem).toString('base64'),
          server,
        },
        name: '',
      },
    ],
    contexts: null,
    'current-context': '',
    kind: 'Config',
    preferences: {},
    users: null,
  });
}

/** Whether winfleet made this cluster-info (and so keeps it). */
export function isWinfleetClusterInfo(configMap: k8s.V1ConfigMap): boolean {
  return configMap.metadata?.labels?.[managedBy.key] === managedBy.value;
}

export interface ClusterInfoControllerDeps {
  kc: k8s.KubeConfig;
  /** kube-public/cluster-info alone (a field selector on its name). */
  clusterInfo: Informer<k8s.V1ConfigMap>;
  config: () => WinfleetConfig;
  /** The operator's own API server URL and CA (the kubeconfig it runs with). */
  cluster: { apiServer: string; caCertificate: string };
  /** Apply the anonymous read Role (default true); false when the Helm chart renders it. */
  clusterBindings?: boolean;
  log: Logger;
}

/** What a pass writes, bound to the API server by the wiring (apiClusterInfoWrites). */
export interface ClusterInfoWrites {
  /** The anonymous read Role and RoleBinding of kube-public/cluster-info. */
  applyReaderRbac(): Promise<void>;
  /** Creates cluster-info; false when it was made meanwhile. */
  create(body: k8s.V1ConfigMap): Promise<boolean>;
  /** Replaces cluster-info; false when it changed meanwhile. */
  replace(body: k8s.V1ConfigMap): Promise<boolean>;
}

/** The explicit state a pass runs over. */
export interface ClusterInfoState {
  clusterInfo: Pick<Informer<k8s.V1ConfigMap>, 'get'>;
  config: () => WinfleetConfig;
  cluster: { apiServer: string; caCertificate: string };
  /** Apply the anonymous read Role (false when the Helm chart renders it). */
  clusterBindings: boolean;
  log: Logger;
  writes: ClusterInfoWrites;
  /** What this replica did once: applied the reader Role, logged a cluster-info left alone. */
  memory: { readerApplied: boolean; leftAloneLogged: boolean };
}

/** The writes bound to the API server behind `kc`. */
export function apiClusterInfoWrites(kc: k8s.KubeConfig): ClusterInfoWrites {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  return {
    applyReaderRbac: () => applyClusterInfoReaderRbac(kc),
    async create(body) {
      try {
        await core.createNamespacedConfigMap({ namespace: clusterInfoNamespace, body });
        return true;
      } catch (error) {
        // Made meanwhile (by kubeadm, or before the cache saw ours): its event brings it back.
        if (!isAlreadyExists(error)) throw error;
        return false;
      }
    },
    async replace(body) {
      try {
        await core.replaceNamespacedConfigMap({
          name: clusterInfoName,
          namespace: clusterInfoNamespace,
          body,
        });
        return true;
      } catch (error) {
        // Changed meanwhile (the signer added a signature): the new version's event retries.
        if (!isConflict(error)) throw error;
        return false;
      }
    },
  };
}

/** One pass: keep winfleet's cluster-info (never another's) naming the API server and CA. */
export async function reconcileClusterInfo(state: ClusterInfoState): Promise<undefined> {
  const { memory, log } = state;
  const server = state.config().hosts.apiServer ?? state.cluster.apiServer;
  const kubeconfig = clusterInfoKubeconfig(server, state.cluster.caCertificate);
  const existing = state.clusterInfo.get(`${clusterInfoNamespace}/${clusterInfoName}`);
  if (existing && !isWinfleetClusterInfo(existing)) {
    if (!memory.leftAloneLogged) log.info('cluster-info exists and is not winfleet’s: left alone');
    memory.leftAloneLogged = true;
    return undefined;
  }
  if (state.clusterBindings && !memory.readerApplied) {
    await state.writes.applyReaderRbac();
    memory.readerApplied = true;
  }
  if (!existing) {
    const created = await state.writes.create({
      metadata: {
        name: clusterInfoName,
        namespace: clusterInfoNamespace,
        labels: { [managedBy.key]: managedBy.value },
      },
      data: { [clusterInfoKubeconfigKey]: kubeconfig },
    });
    if (created)
      log.info('created kube-public/cluster-info for hosts joining by command', { server });
    return undefined;
  }
  if (existing.data?.[clusterInfoKubeconfigKey] === kubeconfig) return undefined;
  const replaced = await state.writes.replace({
    ...existing,
    data: { ...existing.data, [clusterInfoKubeconfigKey]: kubeconfig },
  });
  if (replaced) log.info('updated kube-public/cluster-info', { server });
  return undefined;
}

/** Creates the controller: one key, enqueued by any event on cluster-info. */
export function createClusterInfoController(deps: ClusterInfoControllerDeps): Controller {
  const state: ClusterInfoState = {
    clusterInfo: deps.clusterInfo,
    config: deps.config,
    cluster: deps.cluster,
    clusterBindings: deps.clusterBindings ?? true,
    log: deps.log.child({ controller: 'cluster-info' }),
    writes: apiClusterInfoWrites(deps.kc),
    memory: { readerApplied: false, leftAloneLogged: false },
  };
  const controller = new Controller({
    name: 'cluster-info',
    log: deps.log,
    reconcile: () => reconcileClusterInfo(state),
  });
  const enqueue = () => controller.enqueue(everythingKey);
  deps.clusterInfo.on('add', enqueue).on('update', enqueue).on('delete', enqueue);
  return controller;
}
