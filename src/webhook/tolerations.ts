/** Whether a pod's tolerations already tolerate a taint (the scheduler's rules). */
import type * as k8s from '@kubernetes/client-node';
import type { TaintConfig } from '../config/winfleet-config.ts';

/** True when `toleration` tolerates `taint` as the scheduler decides it. */
export function toleratesTaint(toleration: k8s.V1Toleration, taint: TaintConfig): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  // An empty key with Exists tolerates everything.
  if (!toleration.key) return toleration.operator === 'Exists';
  if (toleration.key !== taint.key) return false;
  if (toleration.operator === 'Exists') return true;
  return (toleration.value ?? '') === taint.value;
}

/** True when any of `tolerations` tolerates `taint`. */
export function podTolerates(
  tolerations: k8s.V1Toleration[] | undefined,
  taint: TaintConfig,
): boolean {
  return (tolerations ?? []).some((t) => toleratesTaint(t, taint));
}

/** The toleration that matches `taint` exactly. */
export function tolerationFor(taint: TaintConfig): k8s.V1Toleration {
  return { key: taint.key, operator: 'Equal', value: taint.value, effect: taint.effect };
}

/** "key=value:Effect", the form kubectl prints. */
export function describeTaint(taint: TaintConfig): string {
  return `${taint.key}=${taint.value}:${taint.effect}`;
}
