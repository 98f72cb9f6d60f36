/** What the CSR approver works with, assembled by the operator. */

import type * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import type { WinfleetConfig } from '../../config/winfleet-config.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import type { Informer } from '../../controller-runtime/informer.ts';
import type { Logger } from '../../log/logger.ts';
import type { NodeNetworkState } from '../../network/cluster-network-watch.ts';
import type { ApiServerNames } from './api-server-names.ts';

/** @package */
export interface CsrControllerDeps {
  kc: k8s.KubeConfig;
  /** Where the join-token records are (join-token-record.ts). */
  operatorNamespace: string;
  csrs: Informer<k8s.V1CertificateSigningRequest>;
  hosts: Informer<WindowsHost>;
  pools: Informer<WindowsNodePool>;
  nodes: Informer<k8s.V1Node>;
  /** kube-public/cluster-info alone: its server is one of the API server's names. */
  clusterInfo?: Informer<k8s.V1ConfigMap>;
  /** The API server's names (api-server-names.ts); read from the cluster by default. */
  apiServerNames?: () => Promise<ApiServerNames>;
  config: () => WinfleetConfig;
  /** Whether nodes may join the pod network now (pull joins are refused otherwise). */
  network?: () => NodeNetworkState;
  events: EventRecorder;
  log: Logger;
}
