/** What the host controller works with, assembled by the operator. */
import type * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WinfleetConfig } from '../../config/winfleet-config.ts';
import type { EventRecorder } from '../../controller/events.ts';
import type { Informer } from '../../controller/informer.ts';
import type { Logger } from '../../log/logger.ts';
import type { Payload, PayloadFile } from '../../payload/payload.ts';
import type { PayloadFileOnDisk } from '../../payload/payload-file.ts';
import type { ServicesManifest } from '../../servicesmanifest/services-manifest.ts';

/** Where the payload in use comes from. */
export type PayloadSourceKind =
  /** A payload directory on the operator's disk (--payload-dir). */
  | { kind: 'directory'; dir: string }
  /**
   * A payload artifact in an OCI registry, pinned by digest (--payload-image): hosts that
   * reach the registry can pull it themselves (the winfleet-join ConfigMap tells them where).
   */
  | {
      kind: 'registry';
      /** Registry host[:port]. */
      registry: string;
      /** The repository path on it. */
      repository: string;
      /** "sha256:…" of the artifact's manifest. */
      digest: string;
      /** The registry itself is reached over plain HTTP (loopback registries). */
      plainHttp: boolean;
      /** The dockerconfigjson Secret (operator namespace) with credentials for it, if any. */
      pullSecretName?: string;
    };

/** The payload in use and the services manifest published for it. */
export interface LoadedPayload {
  source: PayloadSourceKind;
  payload: Payload;
  manifest: ServicesManifest;
  /** Sum of the payload files' sizes. */
  totalBytes: number;
  /**
   * A payload file verified on the operator's disk, to copy over SFTP: the directory's own
   * file, or a registry payload's blob fetched into the download cache as a stream (once).
   */
  fileOnDisk(file: PayloadFile): Promise<PayloadFileOnDisk>;
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
