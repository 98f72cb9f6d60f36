/** What the host controller works with, assembled by the operator. */

import type * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import type { WinfleetConfig } from '../../config/winfleet-config.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import type { Informer } from '../../controller-runtime/informer.ts';
import type { Logger } from '../../log/logger.ts';
import type { NodeNetworkState } from '../../network/cluster-network-watch.ts';
import type { LoadedPayload } from '../../payload/loaded-payload.ts';
import type { ServicesManifest } from '../../servicesmanifest/services-manifest.ts';
import type { WorkloadImages } from './pre-pull-auto.ts';
import type { PrePullSizes } from './pre-pull-sizes.ts';

/** @package */
export interface HostControllerDeps {
  kc: k8s.KubeConfig;
  operatorNamespace: string;
  config: () => WinfleetConfig;
  hosts: Informer<WindowsHost>;
  nodes: Informer<k8s.V1Node>;
  /** The WindowsNodePools (a pool's spec.activeDirectory joins its hosts to a domain). */
  pools?: Informer<WindowsNodePool>;
  /** The SSH key Secrets of the hosts' namespaces, metadata only (host-secrets.ts). */
  secrets?: Informer<k8s.V1Secret>;
  payload: () => Promise<LoadedPayload>;
  /**
   * Publishes a services manifest (manifest-publisher.ts); default a publisher of the host
   * controller's own. The operator shares one with the winfleet-join controller.
   */
  publish?: (manifest: ServicesManifest) => Promise<string>;
  /** How hosts reach the API server, and the CA they trust it with. */
  cluster: { apiServer: string; caCertificate: string };
  /**
   * Apply the ClusterRoleBindings of the bootstrap group and of winfleet's kube-proxies
   * (default true); false when the Helm chart installs them (--no-cluster-bindings,
   * cluster-rbac.ts).
   */
  clusterBindings?: boolean;
  /**
   * Whether a host may be configured now, with which pod network (network.mode against what
   * the cluster runs: cluster-network-watch.ts). Default: routed, allowed.
   */
  network?: () => NodeNetworkState;
  /**
   * The sizes of a pool's spec.prePull images per Windows build (pre-pull-sizes.ts), written
   * into each Node's list for the agent's disk check; without it the list carries none.
   */
  prePullSizes?: PrePullSizes;
  /**
   * The images of the cluster's Windows workloads (pre-pull-auto.ts), for a pool's
   * spec.prePull.auto; without it (or without prePullSizes) an auto pool's list has none.
   */
  prePullWorkloads?: WorkloadImages;
  events: EventRecorder;
  log: Logger;
}
