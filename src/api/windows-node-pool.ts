/**
 * The WindowsNodePool custom resource (winfleet.io/v1alpha1, namespaced): a set of
 * WindowsHosts, chosen by a label selector in the pool's namespace, through which every
 * disruptive change (a new payload, patches, a reboot) rolls with at most `maxUnavailable`
 * hosts down at once. Hosts no pool selects form the implicit default pool (maxUnavailable 1).
 * The pure rules behind the fields live in src/rollout/.
 */

import type * as k8s from '@kubernetes/client-node';
import type { Condition } from '../controller-runtime/conditions.ts';
import { apiGroup, apiVersion } from './group-version.ts';
import type { PrePullSpec } from './pre-pull.ts';
import { NodeHealthCondition } from './reasons.ts';

export const windowsNodePoolResource = {
  apiVersion,
  kind: 'WindowsNodePool',
  plural: 'windowsnodepools',
} as const;

/** A Kubernetes label selector requirement (metav1.LabelSelectorRequirement). */
export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  /** Non-empty for In and NotIn, absent or empty for Exists and DoesNotExist. */
  values?: string[];
}

/**
 * A Kubernetes label selector (metav1.LabelSelector): every matchLabels pair and every
 * matchExpressions requirement must hold. An empty selector selects every WindowsHost in the
 * pool's namespace, as an empty selector does in apps/v1 and policy/v1.
 */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export const weekdays = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;
export type Weekday = (typeof weekdays)[number];

/**
 * When disruptive changes may start: on each listed day (in `timeZone`) from `start` to `end`.
 * A window whose end is not after its start crosses midnight and belongs to the day it starts
 * on: {days: [Sat], start: "22:00", end: "02:00"} is Saturday 22:00 to Sunday 02:00.
 */
export interface MaintenanceWindow {
  /** Days the window opens on; default every day. */
  days?: Weekday[];
  /** "HH:MM", 24-hour, local time in timeZone. */
  start: string;
  /** "HH:MM", or "24:00" for the end of the day; never equal to start. */
  end: string;
  /** IANA time zone name, e.g. "Europe/Berlin"; default "UTC". */
  timeZone?: string;
}

export const patchPolicies = ['None', 'Security', 'All'] as const;
/** Which Windows updates the pool installs: none, Security and Critical updates, or all. */
export type PatchPolicy = (typeof patchPolicies)[number];

export interface WindowsNodePoolSpec {
  /** Which WindowsHosts of the pool's namespace belong to the pool. */
  selector: LabelSelector;
  /**
   * How many hosts may be unavailable at once, counting hosts already NotReady: a whole number
   * ≥ 1 or a percentage of the pool's hosts ("25%", rounded down, at least 1). Default 1.
   */
  maxUnavailable?: number | string;
  /** How long a drain may take before the host's change stops (never forced). Default "10m". */
  drainTimeout?: string;
  /**
   * How long each of apply, reboot and waiting for the node to be Ready on the new version may
   * take before the host's change stops. Default "15m".
   */
  readyTimeout?: string;
  /** When changes may start; absent: at any time. */
  maintenanceWindow?: MaintenanceWindow;
  /** Windows updates the pool installs. Default {policy: None}. */
  patches?: { policy?: PatchPolicy };
  /** Every host that has not rebooted through winfleet since this time reboots once, rolling. */
  rebootRequestedAt?: string | null;
  /** A paused pool starts no change; hosts already in one finish it. */
  paused?: boolean;
  /** When a host counts as unhealthy and how winfleet repairs it (src/remediation/). */
  health?: HealthSpec;
  /** How hosts join the pool by themselves (winfleet join-command). */
  join?: PoolJoinSpec;
  /**
   * Joins the pool's hosts to an Active Directory domain before their kubelet first registers
   * (src/controllers/hosts/active-directory-join.ts); absent: hosts stay as they are.
   */
  activeDirectory?: ActiveDirectorySpec;
  /**
   * Images the pool's hosts pull after a join, an upgrade or a reboot, before they take pods
   * (src/api/pre-pull.ts); absent: none.
   */
  prePull?: PrePullSpec;
  /** How the pool's hosts may isolate containers besides process isolation. */
  isolation?: IsolationSpec;
  /**
   * The name of a WindowsNodePool of the same namespace this pool replaces (a pool-to-pool
   * migration, issue 35): once every host of this pool is Ready on its build, the old pool's
   * hosts are cordoned and drained through the old pool's rollout (its maxUnavailable, PDB-aware)
   * and stay cordoned for removal. It stops, naming the workloads, while one has pods on the old
   * pool that cannot run on this pool's build. Status: status.migration and the Migrated condition.
   */
  replaces?: string;
}

/**
 * spec.isolation of a WindowsNodePool. hyperV true: the pool's hosts get containerd's Hyper-V
 * handler (runhcs-wcow-hypervisor) and the Node label winfleet.io/hyperv-isolation=true, and the
 * webhook runs pods whose images are for an older build than the node's under Hyper-V isolation
 * (RuntimeClass windows-<release>-hyperv). The hosts need the Hyper-V role (on a VM, nested
 * virtualization); `winfleet check --host` verifies it. Default false.
 */
export interface IsolationSpec {
  hyperV?: boolean;
}

/** spec.activeDirectory of a WindowsNodePool (src/api/active-directory.ts checks it). */
export interface ActiveDirectorySpec {
  /** The domain's DNS name, e.g. corp.example.com. */
  domain: string;
  /**
   * The distinguished name of the OU the computer accounts go into, e.g.
   * OU=Kubernetes,DC=corp,DC=example,DC=com; absent: the domain's default Computers container.
   */
  organizationalUnit?: string;
  /**
   * A Secret in the pool's own namespace with the keys `username` (user, DOMAIN\user or
   * user@domain) and `password` of an account allowed to join computers, and the annotation
   * winfleet.io/domain-join-pools naming this pool (domainJoinPoolsAnnotation).
   */
  credentialsSecretRef: { name: string };
}

/** The kinds of instance identity a pool may require (spec.join.instanceIdentity). */
export const instanceIdentityKinds = ['AWS'] as const;

/** The longest spec.join.nodeNamePattern the CRD takes. */
export const nodeNamePatternMaxLength = 256;

/** spec.join of a WindowsNodePool. */
export interface PoolJoinSpec {
  /**
   * An anchored RE2 regular expression ("^web-[0-9]+$") the node name of a host joining the pool
   * by itself must match (src/api/node-name-pattern.ts). Required for joining by command:
   * without it `winfleet join-command` refuses the pool and the approver denies its tokens' CSRs.
   */
  nodeNamePattern?: string;
  /**
   * AWS: a joining host presents its EC2 instance identity document, AWS-signed, and is named
   * for its instance (src/pki/instance-identity.ts). Absent: none asked for.
   */
  instanceIdentity?: (typeof instanceIdentityKinds)[number];
}

export const conditionStatuses = ['True', 'False', 'Unknown'] as const;
export type ConditionStatus = (typeof conditionStatuses)[number];

/**
 * A Node condition that makes a host unhealthy once it has held for `timeout` (from its
 * lastTransitionTime), as in a Cluster API MachineHealthCheck.
 */
export interface UnhealthyCondition {
  /** A Node condition type: Ready, or one the agent sets (KubeletUnhealthy, …). */
  type: string;
  status: ConditionStatus;
  /** Go duration text, "5m". */
  timeout: string;
}

/** How winfleet repairs an unhealthy host: the ladder's switch and each rung's timeout. */
export interface RemediationSpec {
  /** False: unhealthy hosts are reported (conditions, Events, metrics) and never repaired. Default true. */
  enabled?: boolean;
  /** How long the agent's own repair (restarting the service) may take. Default "5m". */
  restartServiceTimeout?: string;
  /** How long a re-bootstrap over SSH and the host's recovery after it may take. Default "15m". */
  rebootstrapTimeout?: string;
  /** How long after its reboot the host may take to be healthy. Default "15m". */
  rebootTimeout?: string;
}

/** spec.health of a WindowsNodePool; hosts in no pool get healthDefaults. */
export interface HealthSpec {
  /** Any one of these, held past its timeout, makes the host unhealthy. */
  unhealthyConditions?: UnhealthyCondition[];
  /** How long after its bootstrap a host's Node may take to report Ready at all. Default "15m". */
  nodeStartupTimeout?: string;
  /**
   * Above this many unhealthy hosts (a whole number ≥ 0 or a percentage of the pool's hosts,
   * rounded down, at least 1 unless "0%"), no host is repaired: a mass failure is usually the network or the control
   * plane. Default "40%".
   */
  maxUnhealthy?: number | string;
  remediation?: RemediationSpec;
}

/** A host of the pool that is in the middle of a change. */
export interface PoolHostInProgress {
  /** The WindowsHost's name. */
  name: string;
  /** The step it is at (src/rollout/host-steps.ts). */
  step: string;
  /** When it entered that step. */
  since: string;
}

export interface WindowsNodePoolStatus {
  observedGeneration?: number;
  /** WindowsHosts the selector matches (including any another pool matches too). */
  hosts?: number;
  /** Of them, those whose Node is Ready. */
  readyHosts?: number;
  /** Of them, those with no change to make. */
  updatedHosts?: number;
  /** Of them, those NotReady or in a change (cordoned, draining, rebooting, …). */
  unavailableHosts?: number;
  /** Hosts in a change, by name. */
  hostsInProgress?: PoolHostInProgress[];
  /** The migration from the pool spec.replaces names, while it names one. */
  migration?: PoolMigrationStatus;
  /** Available, Progressing and Degraded (and Migrated with spec.replaces). */
  conditions?: Condition[];
}

export const migrationPhases = ['Invalid', 'Waiting', 'Migrating', 'Blocked', 'Complete'] as const;
/**
 * Invalid: spec.replaces cannot be followed (the message says why); Waiting: this pool's hosts are
 * not all Ready yet; Migrating: the old pool's hosts are being cordoned and drained; Blocked: a
 * workload on the old pool cannot run on this pool's build (nothing more is cordoned, the old
 * pool's hosts are uncordoned); Complete: every host of the old pool is drained and cordoned.
 */
export type MigrationPhase = (typeof migrationPhases)[number];

/** A workload a migration cannot move, as status.migration.blockedWorkloads lists it. */
export interface BlockedWorkload {
  namespace: string;
  kind: string;
  name: string;
  /** Its container images. */
  images: string[];
  /** Why it cannot move (an image with no variant for the build, a pinned build, …). */
  reasons: string[];
}

/** WindowsNodePool status.migration: the migration from spec.replaces. */
export interface PoolMigrationStatus {
  /** The pool replaced (spec.replaces when this was computed). */
  replaces: string;
  phase: MigrationPhase;
  /** The pool's metadata.generation this was computed for. */
  observedGeneration?: number;
  /** The Windows build of this pool's hosts (major.minor.build). */
  build?: string;
  /** Hosts of the old pool. */
  oldHosts: number;
  /** Of them, drained and left cordoned. */
  retiredHosts: number;
  /** Blocked: the workloads that cannot move. */
  blockedWorkloads?: BlockedWorkload[];
  /** What is happening, or what to do. */
  message: string;
}

export interface WindowsNodePool extends k8s.KubernetesObject {
  apiVersion: typeof apiVersion;
  kind: 'WindowsNodePool';
  metadata: k8s.V1ObjectMeta & { name: string; namespace?: string };
  spec: WindowsNodePoolSpec;
  status?: WindowsNodePoolStatus;
}

/**
 * The agent's Node condition types (issue 13, section 1; src/api/reasons.ts names them)
 * that make a host unhealthy by default, each True while its problem lasts. The others the agent
 * writes (KubeletCertificateExpiring, RebootPending, SystemDiskLow) warn or feed the rollout
 * instead of starting a repair.
 * @package
 */
export const agentConditionTypes = [
  NodeHealthCondition.KubeletUnhealthy,
  NodeHealthCondition.ContainerRuntimeUnhealthy,
  NodeHealthCondition.KubeProxyUnhealthy,
  NodeHealthCondition.HNSNetworkMissing,
  NodeHealthCondition.FrequentServiceRestart,
  NodeHealthCondition.ClockSkew,
] as const;

/**
 * spec.health's defaults (the CRD declares the same; hosts in no pool use them): Ready False or
 * Unknown for 5m, the kubelet's and the other services' health conditions for 2m, the HNS
 * network missing for 2m, a restart loop at once (the agent already counted the restarts), the
 * clock skewed for 5m.
 */
export const healthDefaults = {
  unhealthyConditions: [
    { type: 'Ready', status: 'False', timeout: '5m' },
    { type: 'Ready', status: 'Unknown', timeout: '5m' },
    { type: 'KubeletUnhealthy', status: 'True', timeout: '2m' },
    { type: 'ContainerRuntimeUnhealthy', status: 'True', timeout: '2m' },
    { type: 'KubeProxyUnhealthy', status: 'True', timeout: '2m' },
    { type: 'HNSNetworkMissing', status: 'True', timeout: '2m' },
    { type: 'FrequentServiceRestart', status: 'True', timeout: '0s' },
    { type: 'ClockSkew', status: 'True', timeout: '5m' },
  ] as readonly Readonly<UnhealthyCondition>[],
  nodeStartupTimeout: '15m',
  maxUnhealthy: '40%',
  remediationEnabled: true,
  restartServiceTimeout: '5m',
  rebootstrapTimeout: '15m',
  rebootTimeout: '15m',
} as const;

/** The spec defaults the CRD declares (and the implicit default pool uses). */
export const poolDefaults = {
  maxUnavailable: 1,
  drainTimeout: '10m',
  readyTimeout: '15m',
  patchPolicy: 'None',
  timeZone: 'UTC',
} as const;

/**
 * Annotation on a WindowsHost asking for one reboot of that host, through its pool's rollout:
 * an RFC 3339 time, as spec.rebootRequestedAt on a pool.
 */
export const rebootRequestedAnnotation = `${apiGroup}/reboot-requested`;

/**
 * Annotation on a WindowsHost whose change stopped (a drain or another step timed out): a value
 * not used before restarts the stopped step's clock. winfleet acts on each value once and may
 * remove the annotation afterwards.
 */
export const retryRolloutAnnotation = `${apiGroup}/retry-rollout`;

/**
 * Annotation on a WindowsHost (any value) that keeps winfleet from repairing it: it is still
 * checked and reported (conditions, Events, metrics), and counts towards maxUnhealthy, but no
 * rung of the remediation ladder starts on it; a ladder under way stops where it is.
 */
export const skipRemediationAnnotation = `${apiGroup}/skip-remediation`;
