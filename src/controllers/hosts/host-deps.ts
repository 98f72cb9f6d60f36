/** What the host controller works with, assembled by the operator. */
import type * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WinfleetConfig } from '../../config/winfleet-config.ts';
import type { EventRecorder } from '../../controller/events.ts';
import type { Informer } from '../../controller/informer.ts';
import type { Logger } from '../../log/logger.ts';
import type { Payload } from '../../payload/payload.ts';
import type { ServicesManifest } from '../../servicesmanifest/services-manifest.ts';

/** The payload in use and the services manifest published for it. */
export interface LoadedPayload {
  dir: string;
  payload: Payload;
  manifest: ServicesManifest;
  /** Sum of the payload files' sizes. */
  totalBytes: number;
}

export interface HostControllerDeps {
  kc: k8s.KubeConfig;
  operatorNamespace: string;
  config: () => WinfleetConfig;
  hosts: Informer<WindowsHost>;
  nodes: Informer<k8s.V1Node>;
  /** The SSH key Secrets of the hosts' namespaces, metadata only (host-secrets.ts). */
  secrets?: Informer<k8s.V1Secret>;
  payload: () => Promise<LoadedPayload>;
  /** How hosts reach the API server, and the CA they trust it with. */
  cluster: { apiServer: string; caCertificate: string };
  /**
   * Apply the ClusterRoleBindings of the bootstrap group and of winfleet's kube-proxies
   * (default true); false when the Helm chart installs them (--no-cluster-bindings,
   * cluster-rbac.ts).
   */
  clusterBindings?: boolean;
  events: EventRecorder;
  log: Logger;
}
