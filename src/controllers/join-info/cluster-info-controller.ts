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

export function createClusterInfoController(deps: ClusterInfoControllerDeps): Controller {
  const core = deps.kc.makeApiClient(k8s.CoreV1Api);
  const log = deps.log.child({ controller: 'cluster-info' });
  const key = `${clusterInfoNamespace}/${clusterInfoName}`;
  let readerApplied = false;
  let leftAloneLogged = false;

  const controller = new Controller({
    name: 'cluster-info',
    log: deps.log,
    async reconcile() {
      const server = deps.config().hosts.apiServer ?? deps.cluster.apiServer;
      const kubeconfig = clusterInfoKubeconfig(server, deps.cluster.caCertificate);
      const existing = deps.clusterInfo.get(key);
      if (existing && !isWinfleetClusterInfo(existing)) {
        if (!leftAloneLogged) log.info('cluster-info exists and is not winfleet’s: left alone');
        leftAloneLogged = true;
        return undefined;
      }
      if ((deps.clusterBindings ?? true) && !readerApplied) {
        await applyClusterInfoReaderRbac(deps.kc);
        readerApplied = true;
      }
      if (!existing) {
        try {
          await core.createNamespacedConfigMap({
            namespace: clusterInfoNamespace,
            body: {
              metadata: {
                name: clusterInfoName,
                namespace: clusterInfoNamespace,
                labels: { [managedBy.key]: managedBy.value },
              },
              data: { [clusterInfoKubeconfigKey]: kubeconfig },
            },
          });
          log.info('created kube-public/cluster-info for hosts joining by command', { server });
        } catch (error) {
          // Made meanwhile (by kubeadm, or before the cache saw ours): its event brings it back.
          if (!isAlreadyExists(error)) throw error;
        }
        return undefined;
      }
      if (existing.data?.[clusterInfoKubeconfigKey] === kubeconfig) return undefined;
      try {
        await core.replaceNamespacedConfigMap({
          name: clusterInfoName,
          namespace: clusterInfoNamespace,
          body: {
            ...existing,
            data: { ...existing.data, [clusterInfoKubeconfigKey]: kubeconfig },
          },
        });
        log.info('updated kube-public/cluster-info', { server });
      } catch (error) {
        // Changed meanwhile (the signer added a signature): the new version's event retries.
        if (!isConflict(error)) throw error;
      }
      return undefined;
    },
  });
  const enqueue = () => controller.enqueue(everythingKey);
  deps.clusterInfo.on('add', enqueue).on('update', enqueue).on('delete', enqueue);
  return controller;
}
