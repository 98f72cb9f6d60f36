/**
 * The kubelet's own node status: the conditions only the kubelet posts for its Node
 * (MemoryPressure, DiskPressure, PIDPressure, then Ready last), computed as kubelet v1.36's
 * setters compute them (pkg/kubelet/nodestatus/setters.go ReadyCondition,
 * MemoryPressureCondition, DiskPressureCondition, PIDPressureCondition) and posted as
 * tryUpdateNodeStatus posts them (pkg/kubelet/kubelet_node_status.go): looked at every
 * nodeStatusUpdateFrequency (10 s), patched when a condition changed, heartbeats aside
 * (nodeStatusHasChanged), or when nodeStatusReportFrequency (5 min) passed since the last post.
 *
 * So a kubelet that stops posting (a frozen host) leaves its Node to the node lifecycle
 * controller, which marks these conditions Unknown ("NodeStatusUnknown", "Kubelet stopped
 * posting node status.") once neither the Lease nor the status was renewed within its grace
 * period; and a kubelet that comes back sees its Node differ from what it would post, and
 * posts Ready again at once. kwok never writes these conditions for a simulated host's Node.
 */
import type * as k8s from '@kubernetes/client-node';

/** KubeletConfiguration nodeStatusUpdateFrequency's default: how often status is looked at. */
export const nodeStatusUpdateFrequencyMs = 10_000;
/** KubeletConfiguration nodeStatusReportFrequency's default: a post at least this often. */
export const nodeStatusReportFrequencyMs = 5 * 60_000;

/** What the kubelet's Ready condition says: ready, or the errors that keep it NotReady. */
export type KubeletReadiness = { ready: true } | { ready: false; message: string };

/** The condition types the kubelet owns, in the order it posts them (Ready last). */
export const kubeletConditionTypes = ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready'];

interface Wanted {
  type: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
}

function wanted(readiness: KubeletReadiness): Wanted[] {
  return [
    {
      type: 'MemoryPressure',
      status: 'False',
      reason: 'KubeletHasSufficientMemory',
      message: 'kubelet has sufficient memory available',
    },
    {
      type: 'DiskPressure',
      status: 'False',
      reason: 'KubeletHasNoDiskPressure',
      message: 'kubelet has no disk pressure',
    },
    {
      type: 'PIDPressure',
      status: 'False',
      reason: 'KubeletHasSufficientPID',
      message: 'kubelet has sufficient PID available',
    },
    readiness.ready
      ? {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'kubelet is posting ready status',
        }
      : { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: readiness.message },
  ];
}

/**
 * The kubelet's conditions for a Node whose current conditions are `current`: each with a new
 * heartbeat, its transition time kept while its status is unchanged (the setters' rule).
 */
export function kubeletConditions(
  current: readonly k8s.V1NodeCondition[],
  readiness: KubeletReadiness,
  now: Date,
): k8s.V1NodeCondition[] {
  return wanted(readiness).map((w) => {
    const before = current.find((c) => c.type === w.type);
    const kept = before?.status === w.status && before.lastTransitionTime !== undefined;
    return {
      ...w,
      lastHeartbeatTime: now,
      lastTransitionTime: kept ? before.lastTransitionTime : now,
    };
  });
}

/**
 * Whether posting `next` changes the kubelet's conditions on the Node, heartbeats aside
 * (nodeConditionsHaveChanged, for the conditions the kubelet owns).
 */
export function kubeletConditionsChanged(
  current: readonly k8s.V1NodeCondition[],
  next: readonly k8s.V1NodeCondition[],
): boolean {
  const time = (t: Date | string | undefined) => (t === undefined ? '' : new Date(t).getTime());
  return next.some((n) => {
    const c = current.find((x) => x.type === n.type);
    return (
      !c ||
      c.status !== n.status ||
      c.reason !== n.reason ||
      c.message !== n.message ||
      time(c.lastTransitionTime) !== time(n.lastTransitionTime)
    );
  });
}
