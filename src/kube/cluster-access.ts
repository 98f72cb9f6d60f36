/** How Windows hosts reach the API server: its URL and the CA to trust, from the operator's kubeconfig. */
import { readFileSync } from 'node:fs';
import type * as k8s from '@kubernetes/client-node';
import { WinfleetError } from '../errors/catalog.ts';

export function clusterAccess(kc: k8s.KubeConfig): { apiServer: string; caCertificate: string } {
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new WinfleetError(
      'WF_KUBECONFIG_INVALID',
      'The kubeconfig has no current cluster; set current-context to a context that names one',
    );
  }
  const caCertificate = cluster.caData
    ? Buffer.from(cluster.caData, 'base64').toString('utf8')
    : cluster.caFile
      ? readFileSync(cluster.caFile, 'utf8')
      : '';
  if (!caCertificate)
    throw new WinfleetError(
      'WF_KUBECONFIG_INVALID',
      `The kubeconfig gives no CA for ${cluster.server}; hosts need it to trust the API server`,
    );
  return { apiServer: cluster.server, caCertificate };
}
