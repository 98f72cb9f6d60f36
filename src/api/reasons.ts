/**
 * Every condition type, condition reason, Event reason and join step name winfleet writes,
 * as typed constants: product code sets them from here and tests match them from here, so a
 * renamed reason fails to compile instead of silently failing a string comparison. The values
 * are API: users filter on them (`kubectl get events --field-selector reason=HostKeyMismatch`),
 * so a value, once released, changes only with the API version.
 */

/** WindowsHost status.conditions[].type. */
export const ConditionType = {
  Reachable: 'Reachable',
  Bootstrapped: 'Bootstrapped',
  NodeRegistered: 'NodeRegistered',
  Ready: 'Ready',
  Degraded: 'Degraded',
} as const;
export type ConditionType = (typeof ConditionType)[keyof typeof ConditionType];

/** status.conditions[].reason on WindowsHosts, and on the CSRs winfleet decides. */
export const ConditionReason = {
  // Reachable
  Connected: 'Connected',
  Unreachable: 'Unreachable',
  AuthenticationFailed: 'AuthenticationFailed',
  HostKeyMismatch: 'HostKeyMismatch',
  // Bootstrapped
  AgentBootstrapped: 'AgentBootstrapped',
  StepFailed: 'StepFailed',
  // NodeRegistered
  NodeExists: 'NodeExists',
  WaitingForNode: 'WaitingForNode',
  /** Another WindowsHost holds the node name (it joined the Node, or it came first). */
  NodeNameTaken: 'NodeNameTaken',
  /** A Node of that name exists without this host's identity: it is not winfleet's to take. */
  NodeNotOwned: 'NodeNotOwned',
  /** The host's Node exists but the host has no credentials for it: it was rebuilt. */
  NodeExistsRebuilt: 'NodeExistsRebuilt',
  // Ready
  Joining: 'Joining',
  NodeNotReady: 'NodeNotReady',
  ApplyingServices: 'ApplyingServices',
  NodeReady: 'NodeReady',
  Draining: 'Draining',
  // Degraded (besides HostKeyMismatch and AuthenticationFailed)
  AsExpected: 'AsExpected',
  UnsupportedWindows: 'UnsupportedWindows',
  NodeNameChanged: 'NodeNameChanged',
  DiskFull: 'DiskFull',
  // CertificateSigningRequest Approved / Denied
  WinfleetApproved: 'WinfleetApproved',
  WinfleetDenied: 'WinfleetDenied',
} as const;
export type ConditionReason = (typeof ConditionReason)[keyof typeof ConditionReason];

/** core/v1 Event reasons. */
export const EventReason = {
  // WindowsHost
  HostKeyPinned: 'HostKeyPinned',
  HostKeyMismatch: 'HostKeyMismatch',
  Bootstrapped: 'Bootstrapped',
  AgentNotReporting: 'AgentNotReporting',
  Upgrading: 'Upgrading',
  NodeReady: 'NodeReady',
  Deconfigured: 'Deconfigured',
  /** The join or the removal left a Node alone: it does not carry the host's identity. */
  NodeNotOwned: 'NodeNotOwned',
  /** Another WindowsHost holds the node name. */
  NodeNameTaken: 'NodeNameTaken',
  NodeExistsRebuilt: 'NodeExistsRebuilt',
  /** A rebuilt host's stale Node was deleted on the administrator's winfleet.io/rejoin. */
  Rejoining: 'Rejoining',
  // CertificateSigningRequest (recorded on the WindowsHost when there is one)
  CSRApproved: 'CSRApproved',
  CSRDenied: 'CSRDenied',
  // WindowsHost: the admin's winfleet.io/allow-serving-addresses, applied or refused
  ServingAddressesChanged: 'ServingAddressesChanged',
  ServingAddressesRefused: 'ServingAddressesRefused',
  // The operator's Namespace: the cluster approves node client CSRs of every bootstrap token
  BootstrapAutoApproval: 'BootstrapAutoApproval',
  // RuntimeClass
  UserOwned: 'UserOwned',
  // ConfigMaps winfleet reads (winfleet-config, windows-instances)
  InvalidConfig: 'InvalidConfig',
  InvalidEntry: 'InvalidEntry',
} as const;
export type EventReason = (typeof EventReason)[keyof typeof EventReason];

/**
 * status.lastError.step: the step of joining or removing a host that failed. A step that ran
 * on the host reports the catalog script (`file-hashes`) or the agent's own step
 * (`agent bootstrap: kubelet`) instead, as the host said it.
 */
export const JoinStep = {
  Connect: 'connect',
  HostFacts: 'host-facts',
  PublishManifest: 'publish-manifest',
  CopyPayload: 'copy-payload',
  CopyConfig: 'copy-config',
  AgentBootstrap: 'agent-bootstrap',
  Deconfigure: 'deconfigure',
} as const;
export type JoinStep = (typeof JoinStep)[keyof typeof JoinStep];
