/**
 * Is a host unhealthy? Pure: from its Node's conditions (with their lastTransitionTime), its
 * bootstrap time, the pool's health policy and now. As in a Cluster API MachineHealthCheck, a
 * condition of the policy's type and status that has held for its timeout makes the host
 * unhealthy; a host whose Node has not reported Ready at all within nodeStartupTimeout of its
 * bootstrap (no Node, or a Node without a Ready condition) is unhealthy too (NodeStartup).
 */
import { parseApiTime } from '../kube/api-time.ts';
import type { HealthPolicy } from './health-spec.ts';

/** A Node condition as the Node's status carries it. */
export interface NodeCondition {
  type: string;
  status: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface HealthInput {
  /** The host's own Node (identity-checked by the caller), if it has one. */
  node?: { name: string; conditions: readonly NodeCondition[] };
  /** WindowsHost status.bootstrappedAt; undefined while the host has never been bootstrapped. */
  bootstrappedAt?: string;
  policy: HealthPolicy;
  now: Date;
}

/** The pseudo condition type of a Node that never reported Ready after its bootstrap. */
export const nodeStartupProblem = 'NodeStartup';

/** @package */
export interface HealthProblem {
  /** The Node condition type, or NodeStartup. */
  type: string;
  /** The condition's status (NodeStartup: "Unknown"). */
  status: string;
  /** Since when it holds (the condition's lastTransitionTime; the bootstrap for NodeStartup). */
  since: string;
  timeoutMs: number;
  /** The condition's reason and message, as the Node gives them. */
  reason?: string;
  message?: string;
}

/** @package */
export interface HealthAssessment {
  /** Problems of the policy that hold now, past their timeout or not. Empty: healthy. */
  holding: HealthProblem[];
  /** Those past their timeout, in policy order (NodeStartup first). Non-empty: unhealthy. */
  due: HealthProblem[];
  /** When the next holding problem passes its timeout. */
  dueAt?: Date;
}

/** A time that cannot be read, or lies in the future, counts from now (it is never due early). */
function sinceMs(time: string | undefined, now: number): number {
  if (time === undefined) return now;
  try {
    return Math.min(parseApiTime(time, 'lastTransitionTime'), now);
  } catch {
    return now;
  }
}

/** @package */
export function assessHealth(input: HealthInput): HealthAssessment {
  const { node, policy } = input;
  const now = input.now.getTime();
  const holding: HealthProblem[] = [];
  const hasReady = node?.conditions.some((c) => c.type === 'Ready') === true;
  if (input.bootstrappedAt !== undefined && !hasReady) {
    holding.push({
      type: nodeStartupProblem,
      status: 'Unknown',
      since: new Date(sinceMs(input.bootstrappedAt, now)).toISOString(),
      timeoutMs: policy.nodeStartupTimeoutMs,
      message: node
        ? `Node ${node.name} has reported no Ready condition since the host’s bootstrap`
        : 'the host has no Node since its bootstrap',
    });
  }
  for (const rule of policy.unhealthyConditions) {
    const c = node?.conditions.find((x) => x.type === rule.type);
    if (!c || c.status !== rule.status) continue;
    holding.push({
      type: c.type,
      status: c.status,
      since: new Date(sinceMs(c.lastTransitionTime, now)).toISOString(),
      timeoutMs: rule.timeoutMs,
      ...(c.reason ? { reason: c.reason } : {}),
      ...(c.message ? { message: c.message } : {}),
    });
  }
  const dueTime = (p: HealthProblem) => Date.parse(p.since) + p.timeoutMs;
  const due = holding.filter((p) => dueTime(p) <= now);
  const pending = holding.filter((p) => dueTime(p) > now).map(dueTime);
  return {
    holding,
    due,
    ...(pending.length > 0 ? { dueAt: new Date(Math.min(...pending)) } : {}),
  };
}

/** "KubeletUnhealthy=True for 3m (reason: message)", for messages. */
export function describeProblem(p: HealthProblem, now: Date): string {
  const minutes = Math.max(0, Math.round((now.getTime() - Date.parse(p.since)) / 60_000));
  const detail = [p.reason, p.message].filter(Boolean).join(': ');
  const what = p.type === nodeStartupProblem ? 'no Ready Node' : `${p.type}=${p.status}`;
  return `${what} for ${minutes}m${detail ? ` (${detail})` : ''}`;
}
