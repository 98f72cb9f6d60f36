/**
 * Every condition type, condition reason, Event reason and join step name winfleet writes,
 * as typed constants: product code sets them from here and tests match them from here, so a
 * renamed reason fails to compile instead of silently failing a string comparison. The values
 * are API: users filter on them (`kubectl get events --field-selector reason=HostKeyChanged`),
 * so a value, once released, changes only with the API version. Every value is explained in
 * reason-help.ts, from which docs/troubleshooting.md is generated (reasons.test.ts checks both).
 */

/**
 * Why joining a WindowsHost failed: the Ready condition's reason (Reachable's and Degraded's
 * too where they apply) and the reason of the Warning Event recorded with it. Each catalog
 * error a join can raise has its own (see controllers/hosts/join-failure.ts).
 */
export const JoinFailureReason = {
  /** spec.sshKeySecretRef names a Secret that does not exist. */
  SecretNotFound: 'SecretNotFound',
  /** The Secret has no such key. */
  SecretKeyMissing: 'SecretKeyMissing',
  /** The key in the Secret is not a usable SSH private key. */
  KeyInvalid: 'KeyInvalid',
  /** The host refused the key for spec.username. */
  AuthRefused: 'AuthRefused',
  /** The host presented a host key other than the pinned one. */
  HostKeyChanged: 'HostKeyChanged',
  /** No SSH connection to spec.address:spec.port. */
  Unreachable: 'Unreachable',
  /** The SSH connection dropped while a command ran. */
  ConnectionDropped: 'ConnectionDropped',
  /** A command on the host did not finish in time. */
  CommandTimedOut: 'CommandTimedOut',
  /** Copying a file to the host over SFTP failed. */
  FileCopyFailed: 'FileCopyFailed',
  /** A step ran on the host and failed (a catalog script or the agent's bootstrap). */
  StepFailed: 'StepFailed',
  UnsupportedWindows: 'UnsupportedWindows',
  DiskFull: 'DiskFull',
  /** The Windows Containers feature is missing and winfleet may not (or cannot) install it. */
  ContainersFeatureMissing: 'ContainersFeatureMissing',
  /**
   * The pool's spec.activeDirectory cannot be applied: a node name over the 15-character
   * NetBIOS limit, a bad spec, a missing credentials Secret, another domain already joined.
   */
  ActiveDirectoryRefused: 'ActiveDirectoryRefused',
  /** Add-Computer (or Remove-Computer) failed on the host: wrong credentials, domain unreachable. */
  DomainJoinFailed: 'DomainJoinFailed',
  /**
   * The pool's credentials Secret does not name the pool in winfleet.io/domain-join-pools: it
   * is not read for it (a pool creator must not harvest any basic-auth Secret).
   */
  DomainCredentialsNotOptedIn: 'DomainCredentialsNotOptedIn',
  /**
   * The host of an Active Directory pool has no spec.hostKey an admin pinned: its key was
   * trusted on first use, so it gets no domain credentials.
   */
  HostKeyNotPinned: 'HostKeyNotPinned',
  NodeNameChanged: 'NodeNameChanged',
  /** Another WindowsHost holds the node name (it joined the Node, or it came first). */
  NodeNameTaken: 'NodeNameTaken',
  /** A Node of that name exists without this host's identity: it is not winfleet's to take. */
  NodeNotOwned: 'NodeNotOwned',
  /** The host's Node exists but the host has no credentials for it: it was rebuilt. */
  NodeExistsRebuilt: 'NodeExistsRebuilt',
  /** The operator's payload (payload.json, a file, its services manifest) is invalid. */
  PayloadInvalid: 'PayloadInvalid',
  /** A payload file cannot be downloaded. */
  PayloadUnavailable: 'PayloadUnavailable',
  /**
   * The payload registry (--payload-image) answers neither the host's agent nor the operator:
   * the join waits for it, retrying with backoff (the message names the registry).
   */
  PayloadRegistryUnavailable: 'PayloadRegistryUnavailable',
  /** The payload's services version is already published with a different manifest. */
  ManifestVersionReused: 'ManifestVersionReused',
  /**
   * The cluster's pod network is not one `network.mode` joins (another CNI runs, `auto` found
   * none, the CNI's Windows DaemonSet is missing or installs elsewhere than containerd looks):
   * nothing is joined; the message names the mode, what the cluster runs and the fix.
   */
  NetworkModeMismatch: 'NetworkModeMismatch',
  /**
   * The cluster's CNI cannot carry Windows pods as configured (Flannel's VNI or port, a
   * net-conf.json that is not valid, an encapsulation or CNI Windows lacks): nothing is joined.
   */
  NetworkUnsupported: 'NetworkUnsupported',
  /**
   * The cluster's pod network could not be read (the API server away, a permission missing)
   * since the operator started: no node is joined until it can be.
   */
  NetworkUnverified: 'NetworkUnverified',
  /** Something winfleet waited for did not happen in time. */
  TimedOut: 'TimedOut',
  /** The API server refused or failed a request winfleet made. */
  ApiError: 'ApiError',
  /** winfleet broke one of its own rules. */
  InternalError: 'InternalError',
} as const;
export type JoinFailureReason = (typeof JoinFailureReason)[keyof typeof JoinFailureReason];

/** WindowsHost status.conditions[].type. */
export const ConditionType = {
  Reachable: 'Reachable',
  Bootstrapped: 'Bootstrapped',
  NodeRegistered: 'NodeRegistered',
  Ready: 'Ready',
  Degraded: 'Degraded',
} as const;
export type ConditionType = (typeof ConditionType)[keyof typeof ConditionType];

/** WindowsNodePool status.conditions[].type. */
export const PoolConditionType = {
  /** At most maxUnavailable of the pool's hosts are unavailable. */
  Available: 'Available',
  /** A change is rolling through the pool (or why it is not). */
  Progressing: 'Progressing',
  /** Something only a person can fix: the message names the host, the step or the field. */
  Degraded: 'Degraded',
  /** With spec.replaces: the old pool's hosts are all drained (or why not yet). */
  Migrated: 'Migrated',
} as const;
export type PoolConditionType = (typeof PoolConditionType)[keyof typeof PoolConditionType];

/** status.conditions[].reason on WindowsHosts, WindowsNodePools and the CSRs winfleet decides. */
export const ConditionReason = {
  // Any of Reachable, Bootstrapped, NodeRegistered, Ready and Degraded, on a failure
  ...JoinFailureReason,
  // Reachable
  Connected: 'Connected',
  /** A Pull-mode host: winfleet never connects to it; its agent runs it. */
  PullMode: 'PullMode',
  // Bootstrapped
  AgentBootstrapped: 'AgentBootstrapped',
  // NodeRegistered
  NodeExists: 'NodeExists',
  WaitingForNode: 'WaitingForNode',
  /**
   * A Pull-mode host's Node did not register within hosts.joinTimeoutSeconds of the host's
   * creation (its node certificate was approved then): NodeRegistered, Ready and Degraded.
   */
  NodeNeverRegistered: 'NodeNeverRegistered',
  // Ready
  Joining: 'Joining',
  /** The Windows Containers feature is being installed; the host reboots to finish it. */
  InstallingContainersFeature: 'InstallingContainersFeature',
  /** The host was renamed or joined to its pool's domain and restarts to finish it. */
  JoiningDomain: 'JoiningDomain',
  NodeNotReady: 'NodeNotReady',
  ApplyingServices: 'ApplyingServices',
  NodeReady: 'NodeReady',
  Draining: 'Draining',
  /** Removal evicts nothing while pods no controller manages are on the node (like kubectl drain). */
  UnmanagedPods: 'UnmanagedPods',
  /** Removal could not deconfigure the host for hosts.removalTimeoutSeconds; the message says what to do. */
  RemovalBlocked: 'RemovalBlocked',
  /** Removal of a Pull-mode host asked its agent to deconfigure the host and waits for its report. */
  Deconfiguring: 'Deconfiguring',
  // Degraded (True with a failure reason)
  AsExpected: 'AsExpected',
  // WindowsNodePool Available
  MinimumHostsAvailable: 'MinimumHostsAvailable',
  MinimumHostsUnavailable: 'MinimumHostsUnavailable',
  // WindowsNodePool Progressing
  RollingOut: 'RollingOut',
  RolloutComplete: 'RolloutComplete',
  Paused: 'Paused',
  WaitingForWindow: 'WaitingForWindow',
  /**
   * A host's change stopped with maxUnavailable hosts already set aside (Degraded names it): no
   * other host starts one.
   */
  RolloutStopped: 'RolloutStopped',
  // WindowsNodePool Degraded (True), each naming the host or field
  /** A WindowsHost is selected by this pool and another: no change starts on it. */
  HostInMultiplePools: 'HostInMultiplePools',
  /** A host's drain did not finish within spec.drainTimeout (nothing is forced). */
  DrainTimedOut: 'DrainTimedOut',
  /** The agent did not apply the change within spec.readyTimeout. */
  ApplyTimedOut: 'ApplyTimedOut',
  /** A host did not come back from its reboot within spec.readyTimeout. */
  RebootTimedOut: 'RebootTimedOut',
  /** A host's Node was not Ready on the new version within spec.readyTimeout. */
  ReadyTimedOut: 'ReadyTimedOut',
  /** The payload's kubelet is outside the version-skew policy: no host gets it. */
  KubeletVersionSkew: 'KubeletVersionSkew',
  /** A spec value the API schema cannot check (an unknown time zone) is wrong. */
  InvalidSpec: 'InvalidSpec',
  /** More hosts are unhealthy than spec.health.maxUnhealthy: none is repaired (names them). */
  TooManyUnhealthy: 'TooManyUnhealthy',
  /**
   * A host is set aside (its change stopped, or its pending reboot survived winfleet's reboot):
   * the rollout goes on without it until winfleet.io/retry-rollout (names it).
   */
  HostSetAside: 'HostSetAside',
  // WindowsNodePool Migrated (spec.replaces); InvalidSpec when spec.replaces cannot be followed
  /** Migrated=False: the pool's own hosts are not all Ready yet; nothing of the old pool moves. */
  MigrationWaiting: 'MigrationWaiting',
  /** Migrated=False: the old pool's hosts are being cordoned and drained, maxUnavailable at a time. */
  MigrationInProgress: 'MigrationInProgress',
  /** Migrated=False: a workload on the old pool cannot run on the new build (names them). */
  MigrationBlocked: 'MigrationBlocked',
  /** Migrated=True: every host of the old pool is drained and left cordoned. */
  MigrationComplete: 'MigrationComplete',
  // WindowsHost Degraded (True)
  /** Every rung of the remediation ladder ran and the host is still unhealthy: left cordoned. */
  RemediationFailed: 'RemediationFailed',
  // CertificateSigningRequest Approved / Denied
  WinfleetApproved: 'WinfleetApproved',
  WinfleetDenied: 'WinfleetDenied',
} as const;
export type ConditionReason = (typeof ConditionReason)[keyof typeof ConditionReason];

/** core/v1 Event reasons. */
export const EventReason = {
  // WindowsHost: a Warning per failed join pass, aggregated (count) while it repeats
  ...JoinFailureReason,
  // WindowsHost
  HostKeyPinned: 'HostKeyPinned',
  /** winfleet installed the Windows Containers feature and reboots the host to finish it. */
  InstallingContainersFeature: 'InstallingContainersFeature',
  /** winfleet renamed the host or joined it to its pool's domain, and restarts it. */
  JoiningDomain: 'JoiningDomain',
  /** winfleet removed a host from its pool's domain as it deconfigured it. */
  LeftDomain: 'LeftDomain',
  /**
   * The host left its domain locally, without credentials: its computer account is still
   * enabled in the domain, for an AD admin to disable or delete.
   */
  ComputerAccountLeftEnabled: 'ComputerAccountLeftEnabled',
  /** A host bootstrapped before its pool had spec.activeDirectory is configured again unjoined. */
  DomainJoinSkipped: 'DomainJoinSkipped',
  Bootstrapped: 'Bootstrapped',
  /** The host's agent pulled the payload files from the registry itself (SSH hosts too). */
  PayloadPulled: 'PayloadPulled',
  /** The host cannot reach the payload registry, the operator can: it pushed them over SFTP. */
  PayloadPushFallback: 'PayloadPushFallback',
  AgentNotReporting: 'AgentNotReporting',
  Upgrading: 'Upgrading',
  NodeReady: 'NodeReady',
  Deconfigured: 'Deconfigured',
  /** Removal asked a Pull-mode host's agent, through its Node, to deconfigure the host. */
  DeconfigureRequested: 'DeconfigureRequested',
  /** A Pull-mode host's Node did not register within hosts.joinTimeoutSeconds. */
  NodeNeverRegistered: 'NodeNeverRegistered',
  /** Removal evicted a pod from the host's node (one Event per pod). */
  PodEvicted: 'PodEvicted',
  /** Removal refuses to evict pods no controller manages; the message names them. */
  UnmanagedPods: 'UnmanagedPods',
  /** Removal could not deconfigure the host in time; the message gives the annotation. */
  RemovalBlocked: 'RemovalBlocked',
  /** A rebuilt host's stale Node was deleted on the administrator's winfleet.io/rejoin. */
  Rejoining: 'Rejoining',
  // WindowsHost: its part of a pool's rollout
  /** The host was cordoned for a change (the message lists what changes). */
  RolloutStarted: 'RolloutStarted',
  /** winfleet asked the host's agent to reboot it. */
  Rebooting: 'Rebooting',
  /** The host is Ready with the change and uncordoned. */
  RolloutFinished: 'RolloutFinished',
  /** A stopped change goes on: winfleet.io/retry-rollout, or the host made progress. */
  RolloutResumed: 'RolloutResumed',
  DrainTimedOut: 'DrainTimedOut',
  ApplyTimedOut: 'ApplyTimedOut',
  RebootTimedOut: 'RebootTimedOut',
  ReadyTimedOut: 'ReadyTimedOut',
  /** The host is set aside: the rollout goes on without it (the message says why, and how to clear it). */
  HostSetAside: 'HostSetAside',
  // WindowsHost: its health and repair (src/remediation/)
  /** A condition of spec.health.unhealthyConditions held past its timeout (or the Node never started): the ladder starts. */
  HostUnhealthy: 'HostUnhealthy',
  /** A rung did not repair the host within its timeout, or failed: the next rung starts. */
  RemediationEscalated: 'RemediationEscalated',
  /** The host is healthy again (the message names the rung that was running). */
  HostRecovered: 'HostRecovered',
  /** Rung Rebootstrap: the host controller runs the agent bootstrap over SSH again. */
  RemediationRebootstrap: 'RemediationRebootstrap',
  /** A rung this host cannot take was skipped (Rebootstrap needs SSH; a Pull-mode host has none). */
  RemediationRungSkipped: 'RemediationRungSkipped',
  /** The last rung did not repair the host: remediation stops and the node stays cordoned. */
  RemediationFailed: 'RemediationFailed',
  // WindowsNodePool (and the operator's Namespace for the default pool)
  /** More hosts are unhealthy than spec.health.maxUnhealthy: no repair starts or goes on. */
  TooManyUnhealthy: 'TooManyUnhealthy',
  // CertificateSigningRequest (recorded on the WindowsHost when there is one)
  CSRApproved: 'CSRApproved',
  CSRDenied: 'CSRDenied',
  // WindowsHost: the admin's winfleet.io/allow-serving-addresses, applied or refused
  ServingAddressesChanged: 'ServingAddressesChanged',
  ServingAddressesRefused: 'ServingAddressesRefused',
  /** spec.labels has keys NodeRestriction keeps from kubelets: left off the Node (node-labels.ts). */
  NodeLabelsRefused: 'NodeLabelsRefused',
  // The operator's Namespace: the cluster approves node client CSRs of every bootstrap token
  BootstrapAutoApproval: 'BootstrapAutoApproval',
  // RuntimeClass
  UserOwned: 'UserOwned',
  // ConfigMaps winfleet reads (winfleet-config, windows-instances)
  InvalidConfig: 'InvalidConfig',
  /** winfleet-config was deleted or lacks its config.yaml key; the last good config stays. */
  MissingConfig: 'MissingConfig',
  InvalidEntry: 'InvalidEntry',
} as const;
export type EventReason = (typeof EventReason)[keyof typeof EventReason];

/**
 * The Node conditions the agent's problem detection writes on its own Node (issue 13, section 1;
 * src/node-health/detector.ts). The types follow Node Problem Detector's Windows names where it has
 * one (KubeletUnhealthy, ContainerRuntimeUnhealthy, KubeProxyUnhealthy, FrequentServiceRestart);
 * the disk one is SystemDiskLow, not DiskPressure, which is the kubelet's own. A condition
 * "cleared" is written with status False and a reason saying so, as Node Problem Detector does:
 * the type stays on the Node so tooling sees it was checked.
 */
export const NodeHealthCondition = {
  KubeletUnhealthy: 'KubeletUnhealthy',
  ContainerRuntimeUnhealthy: 'ContainerRuntimeUnhealthy',
  KubeProxyUnhealthy: 'KubeProxyUnhealthy',
  FrequentServiceRestart: 'FrequentServiceRestart',
  HNSNetworkMissing: 'HNSNetworkMissing',
  StaleHNSEndpoints: 'StaleHNSEndpoints',
  ClockSkew: 'ClockSkew',
  KubeletCertificateExpiring: 'KubeletCertificateExpiring',
  RebootPending: 'RebootPending',
  SystemDiskLow: 'SystemDiskLow',
} as const;
export type NodeHealthCondition = (typeof NodeHealthCondition)[keyof typeof NodeHealthCondition];

/** Every NodeHealthCondition type, in the order the agent writes them. */
export const nodeHealthConditions: readonly NodeHealthCondition[] =
  Object.values(NodeHealthCondition);

/** The reasons of the NodeHealthCondition conditions. */
export const NodeHealthReason = {
  // Problems (status True)
  /** KubeletUnhealthy, ContainerRuntimeUnhealthy, KubeProxyUnhealthy: the SCM does not know the service. */
  ServiceMissing: 'ServiceMissing',
  /** The same three: the service is not running. */
  ServiceNotRunning: 'ServiceNotRunning',
  /** KubeletUnhealthy, KubeProxyUnhealthy: the service runs but its /healthz fails. */
  HealthzFailed: 'HealthzFailed',
  /** FrequentServiceRestart: a node service restarts too often; the agent stopped restarting it. */
  RestartLoop: 'RestartLoop',
  /** HNSNetworkMissing: the CNI's HNS network existed in this boot and is gone. */
  NetworkMissing: 'NetworkMissing',
  /** StaleHNSEndpoints: endpoints on winfleet's pod network hold addresses no pod on the node has. */
  EndpointsLeftBehind: 'EndpointsLeftBehind',
  /** StaleHNSEndpoints: two or more endpoints hold the address a pod on the node has. */
  DuplicateEndpointIP: 'DuplicateEndpointIP',
  /** ClockSkew: the host's clock is off the API server's Date header. */
  ClockSkewed: 'ClockSkewed',
  /** KubeletCertificateExpiring: the kubelet's client certificate is near expiry, not renewed. */
  CertificateExpiring: 'CertificateExpiring',
  /** RebootPending: Windows waits for a reboot. */
  RebootRequired: 'RebootRequired',
  /** SystemDiskLow: the system drive's free space is below the condition threshold. */
  FreeSpaceLow: 'FreeSpaceLow',
  // Cleared (status False)
  ServiceHealthy: 'ServiceHealthy',
  /** KubeProxyUnhealthy=False: kube-proxy runs and waits for the pod network (no endpoint yet). */
  WaitingForPodNetwork: 'WaitingForPodNetwork',
  NoRestartLoop: 'NoRestartLoop',
  NetworkPresent: 'NetworkPresent',
  NoStaleEndpoints: 'NoStaleEndpoints',
  ClockInSync: 'ClockInSync',
  CertificateValid: 'CertificateValid',
  NoRebootPending: 'NoRebootPending',
  FreeSpaceSufficient: 'FreeSpaceSufficient',
} as const;
export type NodeHealthReason = (typeof NodeHealthReason)[keyof typeof NodeHealthReason];

/** core/v1 Event reasons the agent records about its own Node (transient things). */
export const NodeHealthEventReason = {
  /** Free space on the system drive fell below the Event threshold (before the condition). */
  SystemDiskLow: 'SystemDiskLow',
  /** Microsoft Defender reports a threat (Get-MpThreat). */
  DefenderThreatDetected: 'DefenderThreatDetected',
  /** A node service ended and was started again since the last check (not yet a loop). */
  ServiceRestarted: 'ServiceRestarted',
} as const;
/**
 * Why a Node's winfleet.io/gmsa-ready label is what it is: the start of its
 * winfleet.io/gmsa-readiness annotation, written by the agent (src/agent/gmsa-readiness.ts).
 */
export const GmsaReadinessReason = {
  // Ready ("true")
  /** Joined to an Active Directory domain, with Container Credential Guard. */
  DomainJoined: 'DomainJoined',
  /** Not joined, but a CCG plug-in is registered (a portable identity). */
  CcgPluginRegistered: 'CcgPluginRegistered',
  // Not ready ("false")
  /** No ccg.exe or no CCG COMClasses key: Windows before 2019, or no Containers feature. */
  CcgUnavailable: 'CcgUnavailable',
  /** Not joined, and a plug-in is listed whose COM class is not registered. */
  CcgPluginNotRegistered: 'CcgPluginNotRegistered',
  /** Not joined, and no CCG plug-in. */
  NotDomainJoined: 'NotDomainJoined',
  /** The agent could not read the host's facts. */
  CheckFailed: 'CheckFailed',
} as const;
export type GmsaReadinessReason = (typeof GmsaReadinessReason)[keyof typeof GmsaReadinessReason];

export type NodeHealthEventReason =
  (typeof NodeHealthEventReason)[keyof typeof NodeHealthEventReason];

/**
 * status.lastError.step: the step of joining or removing a host that failed. A step that ran
 * on the host reports the catalog script (`file-hashes`) or the agent's own step
 * (`agent bootstrap: kubelet`) instead, as the host said it.
 */
export const JoinStep = {
  Connect: 'connect',
  HostFacts: 'host-facts',
  ContainersFeature: 'containers-feature',
  /** The pool's Active Directory join: rename, join (active-directory-join.ts). */
  ActiveDirectory: 'active-directory',
  PublishManifest: 'publish-manifest',
  CopyPayload: 'copy-payload',
  CopyConfig: 'copy-config',
  AgentBootstrap: 'agent-bootstrap',
  Deconfigure: 'deconfigure',
} as const;
export type JoinStep = (typeof JoinStep)[keyof typeof JoinStep];

/**
 * The reasons of the agent's ImagesPrePulled Node condition (src/agent/pre-pull.ts): the
 * images of its pool's spec.prePull, pulled before the node takes pods.
 */
export const PrePullReason = {
  /** True: every image is in containerd. */
  PrePulled: 'PrePulled',
  /** False while the pulls run; the message counts them. */
  PrePulling: 'PrePulling',
  /** False: an image could not be pulled (missing, refused, a registry error); named. */
  PrePullFailed: 'PrePullFailed',
  /** False: the images would not fit the disk, so none was pulled. */
  PrePullNoSpace: 'PrePullNoSpace',
  /** False: the pulls outlasted spec.prePull.timeoutSeconds. */
  PrePullTimedOut: 'PrePullTimedOut',
} as const;
export type PrePullReason = (typeof PrePullReason)[keyof typeof PrePullReason];
