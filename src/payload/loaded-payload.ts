/**
 * The payload the operator serves, as its consumers (the host controller, the join-info
 * publisher, the operator's payload source) see it: the files, the services manifest published
 * for them, and where hosts pull a registry payload from.
 */
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import type { Payload, PayloadFile } from './payload.ts';
import type { PayloadFileOnDisk } from './payload-file.ts';

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
