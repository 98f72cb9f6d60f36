/**
 * The WindowsHost custom resource (winfleet.io/v1alpha1): a Windows machine you bring, joined
 * by address over SSH (mode SSH), or one that joined by itself with a join command (mode Pull:
 * the operator created the object when it approved the machine's node certificate, and never
 * connects to it). Spec is what the user wants; status is what the operator found and did.
 */

import type * as k8s from '@kubernetes/client-node';
import type { Condition } from '../controller-runtime/conditions.ts';
import { WinfleetError } from '../errors/catalog.ts';
import { apiVersion } from './group-version.ts';
import type { HostPrePullStatus } from './pre-pull.ts';
import type { ConditionType } from './reasons.ts';
import type { HostRemediationStatus } from './remediation-status.ts';
import type { HostRolloutStatus } from './rollout-status.ts';

export const windowsHostResource = {
  apiVersion,
  kind: 'WindowsHost',
  plural: 'windowshosts',
} as const;

/** Removes the host's node and services before the object goes. */
export const hostFinalizer = 'winfleet.io/deconfigure';

export interface NodeTaint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

/**
 * How winfleet reaches the host: SSH (the operator connects and joins it) or Pull (the host
 * joined by itself with a join command; its agent pulls what it runs).
 * @package
 */
export const hostModes = ['SSH', 'Pull'] as const;
export type HostMode = (typeof hostModes)[number];

export interface WindowsHostSpec {
  /** SSH (default) or Pull. */
  mode?: HostMode;
  /** IPv4 address or DNS name the operator reaches the host at; required in SSH mode. */
  address?: string;
  /** SSH port (default 22). */
  port?: number;
  /**
   * "SHA256:…" of the SSH host key, pinned by an admin before first contact (`winfleet hosts
   * add --host-key`). Only a host with it gets Active Directory credentials.
   */
  hostKey?: string;
  /** The account the operator logs in as (an administrator); required in SSH mode. */
  username?: string;
  /**
   * The Secret holding the SSH private key, in the WindowsHost's own namespace; required in SSH
   * mode, refused in Pull mode.
   */
  sshKeySecretRef?: { name: string; key?: string };
  /** Node name; default: the host's own hostname, lower-cased. */
  nodeName?: string;
  /** Labels added to the node. */
  labels?: Record<string, string>;
  /** Taints added to the node besides the Windows taint. */
  taints?: NodeTaint[];
  /** The pool this host belongs to, if any. */
  pool?: string;
}

export type HostConditionType = ConditionType;

export interface WindowsHostStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  nodeName?: string;
  /** "10.0.20348" as the node label carries it. */
  windowsBuild?: string;
  /** Full version read from the host, e.g. "10.0.20348.2582". */
  windowsVersion?: string;
  /** Addresses the host reported at its last bootstrap (its node IP is the first). */
  addresses?: string[];
  hostname?: string;
  /**
   * IPs and DNS names the node's serving certificate may carry, besides its node name and
   * spec.address: pinned from what the host reported at its first join, changed only by the
   * allow-serving-addresses annotation (servingAddressesAnnotation).
   */
  servingAddresses?: string[];
  /** "SHA256:…" of the SSH host key, pinned on first contact. */
  hostKeyFingerprint?: string;
  /** The services version applied to the node. */
  servicesVersion?: string;
  /** The last error, with the step it happened in. */
  lastError?: { step: string; message: string; time: string };
  /** The bootstrap token id in use while the node joins (never the secret). */
  bootstrapTokenId?: string;
  /** When `agent bootstrap` last succeeded on the host; the join timeout counts from it. */
  bootstrappedAt?: string;
  /**
   * Since when the node's agent has been expected to apply the services version; it is
   * bootstrapped again when it has not within its patience. Cleared once it has.
   */
  servicesRequestedAt?: string;
  /**
   * The host's part in its pool's rollout (src/rollout/host-steps.ts), written before each
   * action so a restarted operator resumes it.
   */
  rollout?: HostRolloutStatus;
  /**
   * The host's remediation ladder (src/remediation/ladder.ts), written before each action, and
   * its last rungs' results (time, rung, result), newest last, at most 10.
   */
  remediation?: HostRemediationStatus;
  /** What the host's agent last reported of Windows Update, in the current boot. */
  windowsUpdates?: HostWindowsUpdates;
  /**
   * When winfleet restarted the host to finish a pending Containers feature install or
   * uninstall; a pass that finds the state still pending after that restart fails instead of
   * restarting it again (containers-feature.ts). Cleared once the feature is Installed.
   */
  containersFeatureRestartAt?: string;
  /**
   * When winfleet restarted the host to finish a rename or a domain join (its pool's
   * spec.activeDirectory; active-directory-join.ts). Kept: a removal then knows the host may
   * be in the domain even if it never got a bootstrap token.
   */
  activeDirectoryRestartAt?: string;
  /**
   * Images before pods: the host's Node's ImagesPrePulled condition as its agent last reported
   * it (src/api/pre-pull.ts hostPrePullStatus); absent when the Node has none.
   */
  prePull?: HostPrePullStatus;
}

/** WindowsHost status.windowsUpdates: the agent's report, summarised for people. */
export interface HostWindowsUpdates {
  searchedAt?: string;
  /** "KB5040437 (Security Updates)". */
  available?: string[];
  installed?: string[];
  /** "KB5040437: 0x80240022 …". */
  failed?: string[];
  rebootPending?: boolean;
  error?: string;
}

export interface WindowsHost extends k8s.KubernetesObject {
  apiVersion: typeof apiVersion;
  kind: 'WindowsHost';
  metadata: k8s.V1ObjectMeta & { name: string };
  spec: WindowsHostSpec;
  status?: WindowsHostStatus;
}

/** The spec of a host the operator reaches over SSH: what SSH mode requires is there. */
export type SshHostSpec = WindowsHostSpec &
  Required<Pick<WindowsHostSpec, 'address' | 'username' | 'sshKeySecretRef'>>;

/** True for a host that joined by itself (spec.mode Pull): the operator never connects to it. */
export function isPullHost(host: Pick<WindowsHost, 'spec'>): boolean {
  return host.spec.mode === 'Pull';
}

/** Where the host is reached, for people: "address:port", or "(pull)" for a Pull host. */
export function hostAddressLabel(host: Pick<WindowsHost, 'spec'>): string {
  if (isPullHost(host)) return '(pull)';
  return `${host.spec?.address ?? '?'}:${host.spec?.port ?? 22}`;
}

/**
 * The host's spec as SSH access reads it. The CRD requires address, username and
 * sshKeySecretRef in SSH mode and the host controller never connects to a Pull host, so a
 * host without them here is winfleet's own mistake.
 */
export function sshHostSpec(host: Pick<WindowsHost, 'spec' | 'metadata'>): SshHostSpec {
  const { spec } = host;
  if (isPullHost(host) || !spec.address || !spec.username || !spec.sshKeySecretRef) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `WindowsHost ${host.metadata.namespace}/${host.metadata.name} is in ${spec.mode ?? 'SSH'} mode without address, username and sshKeySecretRef, and was about to be reached over SSH`,
    );
  }
  return spec as SshHostSpec;
}

/**
 * An SSH host key fingerprint as `ssh-keygen -lf` prints it (and spec.hostKey takes it):
 * "SHA256:" and the unpadded base64 of the key's SHA-256, 43 characters.
 * @package
 */
export const hostKeyFingerprintPattern = '^SHA256:[A-Za-z0-9+/]{43}$';

/** Annotation a user sets to accept a changed host key: the new "SHA256:…" fingerprint. */
export const trustHostKeyAnnotation = 'winfleet.io/trust-host-key';
/**
 * Annotation an admin sets to change a host's pinned serving addresses: the complete new list,
 * comma-separated (`10.1.2.3,win-a.example.com`). winfleet applies it to status.servingAddresses
 * (or refuses it), records an Event and removes the annotation.
 */
export const servingAddressesAnnotation = 'winfleet.io/allow-serving-addresses';

/**
 * Annotation an administrator sets to let a rebuilt host rejoin (any value, e.g. a time):
 * the operator deletes the host's stale Node — only one carrying this host's identity — and
 * bootstraps the host again, then removes the annotation.
 */
export const rejoinAnnotation = 'winfleet.io/rejoin';

/** Annotation with which a user lets removal evict pods no controller manages (`drain --force`). */
export const drainUnmanagedPodsAnnotation = 'winfleet.io/drain-unmanaged-pods';
