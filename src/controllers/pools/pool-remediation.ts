/**
 * The pool controller's health part (issue 13): what one pass reads of each member host for
 * healthPass (src/remediation), the remediation cordon it keeps, and how the pool's Degraded
 * condition merges health's reason with the rollout's.
 *
 * The ladder's requests are levels in WindowsHost status.remediation, written (with
 * status.rollout, in one guarded patch) before anything acts on them:
 * - Rebootstrap: the host controller runs the agent bootstrap while status.bootstrappedAt is
 *   before the request (host-join.ts);
 * - Reboot: the request becomes PoolPassHost.repairRequestedAt, a 'repair' change of the pool's
 *   rollout, inside maxUnavailable;
 * - RemediationFailed: the Node cordoned with winfleet.io/cordoned-by=remediation, which the
 *   rollout never lifts (its own cordon says "winfleet").
 */
import type * as k8s from '@kubernetes/client-node';
import { cordonedByAnnotation, cordonedByValues } from '../../api/node-annotations.ts';
import { isPullHost, type WindowsHost } from '../../api/windows-host.ts';
import { skipRemediationAnnotation } from '../../api/windows-node-pool.ts';
import type { ConditionInput } from '../../controller-runtime/conditions.ts';
import type { HealthPassHost, NodeCondition, RemediationAction } from '../../remediation/index.ts';

/** An API time as client-node gives it (a Date for some fields), as RFC 3339 text. */
function timeText(value: unknown): string | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString();
  return typeof value === 'string' ? value : undefined;
}

/** The Node's conditions as the health core reads them. */
export function nodeConditions(node: k8s.V1Node): NodeCondition[] {
  return (node.status?.conditions ?? []).map((c) => {
    const since = timeText(c.lastTransitionTime);
    return {
      type: c.type,
      status: c.status,
      ...(since ? { lastTransitionTime: since } : {}),
      ...(c.reason ? { reason: c.reason } : {}),
      ...(c.message ? { message: c.message } : {}),
    };
  });
}

/** One member host for healthPass; `node` is its own Node (identity-checked), if any. */
export function healthHost(
  key: string,
  host: WindowsHost,
  node: k8s.V1Node | undefined,
): HealthPassHost {
  const status = host.status ?? {};
  const lastError = status.lastError;
  const errorTime = timeText(lastError?.time);
  return {
    key,
    status: status.remediation ?? {},
    ...(node ? { node: { name: node.metadata!.name!, conditions: nodeConditions(node) } } : {}),
    ...(status.bootstrappedAt ? { bootstrappedAt: timeText(status.bootstrappedAt)! } : {}),
    ...(lastError && errorTime
      ? { bootstrapError: { time: errorTime, message: lastError.message } }
      : {}),
    ...(status.rollout ? { rollout: status.rollout } : {}),
    // The annotation, which the node itself may write, counts only with the ladder's record.
    cordonedByRemediation:
      node?.metadata?.annotations?.[cordonedByAnnotation] === cordonedByValues.remediation &&
      host.status?.remediation?.cordoned === true,
    skipRemediation: host.metadata.annotations?.[skipRemediationAnnotation] !== undefined,
    deleting: Boolean(host.metadata.deletionTimestamp),
    ...(isPullHost(host) ? { rebootstrapUnavailable: pullRebootstrapUnavailable } : {}),
  };
}

/** Why a Pull-mode host skips the ladder's Rebootstrap. */
export const pullRebootstrapUnavailable =
  'the host is in Pull mode (it joined by itself with a join command) and winfleet never reaches it over SSH, which re-bootstrapping needs; its agent keeps repairing its services, and a reboot goes through its agent';

/** The Node patch for a remediation cordon or uncordon, or undefined when there is none. */
export function remediationNodePatch(
  action: RemediationAction,
  node: k8s.V1Node,
  host?: WindowsHost,
): object | undefined {
  const by = node.metadata?.annotations?.[cordonedByAnnotation];
  switch (action.kind) {
    case 'cordon':
      // Over the rollout's cordon too: RemediationFailed keeps the node cordoned after the
      // change ends, which the rollout's uncordon (only of "winfleet") then leaves alone.
      if (node.spec?.unschedulable === true && by === cordonedByValues.remediation)
        return undefined;
      // Anyone else's cordon (a person's, or one a node marked "winfleet" on itself without
      // the rollout's record) stays theirs: taken over, it would be lifted when the host heals.
      if (
        node.spec?.unschedulable === true &&
        !(
          by === cordonedByValues.rollout && host?.status?.rollout?.cordoned === node.metadata?.name
        )
      )
        return undefined;
      return {
        spec: { unschedulable: true },
        metadata: { annotations: { [cordonedByAnnotation]: cordonedByValues.remediation } },
      };
    case 'uncordon':
      if (by !== cordonedByValues.remediation) return undefined;
      return {
        spec: { unschedulable: null },
        metadata: { annotations: { [cordonedByAnnotation]: null } },
      };
    default:
      return undefined;
  }
}

/**
 * The pool's conditions with health's Degraded merged in: the rollout's Degraded (a stuck or
 * refused change) keeps its reason and gains health's message; otherwise health's reason.
 * @package
 */
export function mergeHealthDegraded(
  conditions: readonly ConditionInput[],
  health: { reason: string; message: string } | undefined,
): ConditionInput[] {
  if (!health) return [...conditions];
  const at = conditions.findIndex((c) => c.type === 'Degraded');
  const rollout = at >= 0 ? conditions[at] : undefined;
  const merged: ConditionInput =
    rollout?.status === 'True'
      ? { ...rollout, message: `${rollout.message}; ${health.message}` }
      : { type: 'Degraded', status: 'True', reason: health.reason, message: health.message };
  return at >= 0 ? conditions.map((c, i) => (i === at ? merged : c)) : [...conditions, merged];
}
