/** What the host controller works with, assembled by the operator. */

import type * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import type { WinfleetConfig } from '../../config/winfleet-config.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import type { Informer } from '../../controller-runtime/informer.ts';
import type { Logger } from '../../log/logger.ts';
import type { NodeNetworkState } from '../../network/cluster-network-watch.ts';
import type { Payload, PayloadFile } from '../../payload/payload.ts';
import type { PayloadFileOnDisk } from '../../payload/payload-file.ts';
import type { ServicesManifest } from '../../servicesmanifest/services-manifest.ts';

/** The payload in use and the services manifest published for it. */
export interface LoadedPayload {
  payload: Payload;
  manifest: ServicesManifest;
  /** Sum of the payload files' sizes. */
  totalBytes: number;
  /**
   * A payload file verified on the operator's disk, to copy over SFTP: the directory's own
   * file, or a registry payload's blob fetched into the download cache as a stream (once).
   */
  fileOnDisk(file: PayloadFile): Promise<PayloadFileOnDisk>;
  /**
   * Where hosts pull this payload from, when the operator serves it from a registry artifact
   * (--payload-image); absent for a payload directory, whose files only the operator can send.
   * The winfleet-join controller publishes it for hosts joining by command.
   */
  registry?: PayloadRegistrySource;
  /**
   * Resolves once the operator itself reads the artifact's manifest from its registry (or a
   * mirror), asked afresh; throws WF_PAYLOAD_DOWNLOAD otherwise. A registry payload only: it
   * tells a host that cannot reach the registry (push the files over SFTP) from a registry
   * that is down for everyone (wait for it).
   */
  reachRegistry?: () => Promise<void>;
}

/** A payload artifact in a registry, as hosts pull it (src/join/join-info.ts JoinPayloadSource). */
export interface PayloadRegistrySource {
  /** "host[:port]/path" of the artifact's repository, without tag or digest. */
  repository: string;
  /** The artifact's manifest digest, "sha256:<64 hex>". */
  digest: string;
  /** Plain HTTP to the registry (loopback test registries only). */
  insecure?: boolean;
  /** A dockerconfigjson Secret in the operator's namespace with read-only pull credentials. */
  pullSecretName?: string;
}

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
  events: EventRecorder;
  log: Logger;
}
