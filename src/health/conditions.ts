/**
 * The Node conditions and Event reasons the agent's problem detection writes (issue 13,
 * section 1). The condition types follow Node Problem Detector's Windows names where it has
 * one (KubeletUnhealthy, ContainerRuntimeUnhealthy, KubeProxyUnhealthy, FrequentServiceRestart);
 * the disk one is SystemDiskLow, not DiskPressure, which is the kubelet's own. A condition
 * "cleared" is written with status False and a reason saying so, as Node Problem Detector does:
 * the type stays on the Node so `kubectl get node -o wide` tooling sees it was checked.
 *
 * These are API values (users filter on them); they live here, beside the detector, until the
 * README's Troubleshooting tables document them and they join src/api/reasons.ts.
 */

export const NodeHealthCondition = {
  KubeletUnhealthy: 'KubeletUnhealthy',
  ContainerRuntimeUnhealthy: 'ContainerRuntimeUnhealthy',
  KubeProxyUnhealthy: 'KubeProxyUnhealthy',
  FrequentServiceRestart: 'FrequentServiceRestart',
  HNSNetworkMissing: 'HNSNetworkMissing',
  ClockSkew: 'ClockSkew',
  KubeletCertificateExpiring: 'KubeletCertificateExpiring',
  RebootPending: 'RebootPending',
  SystemDiskLow: 'SystemDiskLow',
} as const;
export type NodeHealthCondition = (typeof NodeHealthCondition)[keyof typeof NodeHealthCondition];

/** Every condition type, in the order they are written. */
export const nodeHealthConditions: readonly NodeHealthCondition[] =
  Object.values(NodeHealthCondition);

/** The reasons of those conditions. */
export const NodeHealthReason = {
  // Problems (status True).
  ServiceMissing: 'ServiceMissing',
  ServiceNotRunning: 'ServiceNotRunning',
  HealthzFailed: 'HealthzFailed',
  RestartLoop: 'RestartLoop',
  NetworkMissing: 'NetworkMissing',
  ClockSkewed: 'ClockSkewed',
  CertificateExpiring: 'CertificateExpiring',
  RebootRequired: 'RebootRequired',
  FreeSpaceLow: 'FreeSpaceLow',
  // Cleared (status False).
  ServiceHealthy: 'ServiceHealthy',
  NoRestartLoop: 'NoRestartLoop',
  NetworkPresent: 'NetworkPresent',
  ClockInSync: 'ClockInSync',
  CertificateValid: 'CertificateValid',
  NoRebootPending: 'NoRebootPending',
  FreeSpaceSufficient: 'FreeSpaceSufficient',
} as const;
export type NodeHealthReason = (typeof NodeHealthReason)[keyof typeof NodeHealthReason];

/** Reasons of the Events for transient things. */
export const NodeHealthEventReason = {
  /** Free space on the system drive fell below the Event threshold (before the condition). */
  SystemDiskLow: 'SystemDiskLow',
  /** Microsoft Defender reports a threat (Get-MpThreat). */
  DefenderThreatDetected: 'DefenderThreatDetected',
} as const;
export type NodeHealthEventReason =
  (typeof NodeHealthEventReason)[keyof typeof NodeHealthEventReason];
