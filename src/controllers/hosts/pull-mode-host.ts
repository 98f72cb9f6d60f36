/**
 * What the host controller does with a Pull-mode WindowsHost for now: nothing over SSH. Such a
 * host joined by itself (winfleet join-command) and its agent runs it; the operator's lifecycle
 * for it (status from the Node and the agent, upgrades, reboots and removal through the agent)
 * is not built yet. Until it is, the host says so in its Reachable condition, and the host
 * controller never connects to it, adds no finalizer and removes nothing.
 */
import type * as k8s from '@kubernetes/client-node';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { HostStatus, writeHostStatus } from './host-status.ts';

export const pullModeMessage =
  'Pull mode: the host joined by itself and its agent runs it; winfleet never connects to it over SSH (the operator does not yet run upgrades, reboots or removal of Pull-mode hosts)';

/** Records that the pull-mode lifecycle is the agent's; writes only when that is news. */
export async function reportPullModeHost(kc: k8s.KubeConfig, host: WindowsHost): Promise<void> {
  const hs = new HostStatus(host);
  hs.set(ConditionType.Reachable, 'Unknown', ConditionReason.PullMode, pullModeMessage);
  if (hs.changed()) await writeHostStatus(kc, host, hs.status);
}
