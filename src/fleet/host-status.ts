/**
 * Reading and writing a WindowsHost's status. Every writer of a host's status (the host
 * controller's passes, the pool's rollout record and Windows Update report, the serving-address
 * controller) goes through patchHostStatus, in one of its two forms:
 *
 * - a merge patch of the fields a writer changed (a field set to null goes), for writers that
 *   own their fields and may write them whatever else changed meanwhile;
 * - a guarded write (`guarded: true`): a JSON Patch whose first operation tests the
 *   resourceVersion the host was read at, so a write computed from a stale copy fails (409/422)
 *   and the caller acts on nothing. The pool's rollout record needs this: a record rolled back
 *   by a stale cache would repeat a cordon, drain or reboot.
 *
 * Why not server-side apply, as ARCHITECTURE.md's conventions say: an apply carries a manager's
 * whole intent (a field it owned and now omits is removed), while a pass computes what changed
 * against its informer copy, which may be older than the pass before's write. Applied as intent,
 * that stale copy would roll back conditions (status.conditions is a list-map keyed on type,
 * so each type would be owned, and dropped, per manager) and fields a previous pass set; the
 * host controller rebases its changed condition types on a fresh read instead
 * (rebaseConditions). Moving to apply would also need three field managers and a migration of
 * the managedFields existing hosts carry from merge patches: a behaviour change, not a
 * refactor. One helper with these two forms keeps each writer's semantics as it was.
 */
import * as k8s from '@kubernetes/client-node';
import { apiVersion } from '../api/group-version.ts';
import type { ConditionReason, ConditionType, JoinStep } from '../api/reasons.ts';
import type { WindowsHost, WindowsHostStatus } from '../api/windows-host.ts';
import { type Condition, findCondition, setCondition } from '../controller-runtime/conditions.ts';
import { sameJson } from '../controller-runtime/same-json.ts';
import { apiTime } from '../kube/api-time.ts';
import { isInvalid, isNotFound } from '../kube/client.ts';

/** The CustomObjectsApi coordinates of a WindowsHost, for the generic client's requests. */
export function hostObject(host: WindowsHost) {
  const [group, version] = apiVersion.split('/') as [string, string];
  return {
    group,
    version,
    namespace: host.metadata.namespace!,
    plural: 'windowshosts',
    name: host.metadata.name,
  };
}

/** A working copy of a host's status that records condition changes. */
export class HostStatus {
  readonly host: WindowsHost;
  status: WindowsHostStatus;

  constructor(host: WindowsHost) {
    this.host = host;
    this.status = structuredClone(host.status ?? {});
  }

  set(
    type: ConditionType,
    status: Condition['status'],
    reason: ConditionReason,
    message = '',
  ): void {
    this.status.conditions = setCondition(this.status.conditions, {
      type,
      status,
      reason,
      message,
      observedGeneration: this.host.metadata.generation,
    });
  }

  /** The condition of `type` as this pass has it. */
  condition(type: ConditionType): Condition | undefined {
    return findCondition(this.status.conditions, type);
  }

  /** Records the failed step: one of winfleet's, or the host's own (see JoinStep). */
  error(step: JoinStep | (string & {}), message: string): void {
    this.status.lastError = { step, message: message.slice(0, 2000), time: apiTime() };
  }

  /**
   * True when anything differs from what the API server holds (in content: the server
   * returns fields in its own key order, so an unchanged status is not written again).
   */
  changed(): boolean {
    return !sameJson(this.status, this.host.status ?? {});
  }
}

/**
 * Writes what this pass changed in `status` with a merge patch on the status subresource: only
 * the fields that differ from the copy the pass read, and a field the pass removed as null
 * (how a merge patch removes one). Other writers (the serving-address controller, an earlier
 * pass that ran on a fresher copy) keep what they wrote unless this pass changed it too.
 */
export async function writeHostStatus(
  kc: k8s.KubeConfig,
  host: WindowsHost,
  status: WindowsHostStatus,
): Promise<void> {
  const before = (host.status ?? {}) as Record<string, unknown>;
  const after = status as Record<string, unknown>;
  const changes: Record<string, unknown> = {};
  for (const field of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (sameJson(after[field], before[field])) continue;
    changes[field] = after[field] ?? null;
  }
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  if ('conditions' in changes) {
    // A merge patch replaces the list whole, and the copy this pass read may be older than
    // the last write (the cache not yet caught up with the pass before): applied to the
    // conditions as they are now, only the types this pass changed change.
    const current = (await custom.getNamespacedCustomObject(hostObject(host))) as WindowsHost;
    changes.conditions = rebaseConditions(
      before.conditions as Condition[] | undefined,
      status.conditions,
      current.status?.conditions,
    );
  }
  await patchHostStatus(custom, host, { ...changes, observedGeneration: host.metadata.generation });
}

/** The WindowsHost /status request patchHostStatus makes: the generic client's, or a test's. */
export type HostStatusApi = Pick<k8s.CustomObjectsApi, 'patchNamespacedCustomObjectStatus'>;

/**
 * The one write of a WindowsHost's status (see the header): `fields` as a merge patch of
 * status (a null field goes), or with `guarded`, as a JSON Patch that first tests the
 * resourceVersion `host` was read at and then adds each field (the whole status when the host
 * has none yet). Returns the host as written; errors (a conflict, a failed test, a host gone)
 * are the caller's to judge.
 */
export async function patchHostStatus(
  api: HostStatusApi,
  host: WindowsHost,
  fields: Record<string, unknown>,
  options: { guarded?: boolean } = {},
): Promise<WindowsHost> {
  if (!options.guarded) {
    return (await api.patchNamespacedCustomObjectStatus(
      { ...hostObject(host), body: { status: fields } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    )) as WindowsHost;
  }
  return (await api.patchNamespacedCustomObjectStatus(
    { ...hostObject(host), body: guardedStatusPatch(host, fields) },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
  )) as WindowsHost;
}

/**
 * The JSON Patch of a guarded status write: test the resourceVersion `host` was read at, then
 * add each field under /status (or /status whole when the host has no status yet).
 * @package
 */
export function guardedStatusPatch(host: WindowsHost, fields: Record<string, unknown>): object[] {
  const entries = Object.entries(fields);
  return [
    { op: 'test', path: '/metadata/resourceVersion', value: host.metadata.resourceVersion },
    ...(host.status
      ? entries.map(([field, value]) => ({ op: 'add', path: `/status/${field}`, value }))
      : [{ op: 'add', path: '/status', value: Object.fromEntries(entries) }]),
  ];
}

/**
 * The conditions `current` holds with what a pass changed from `before` to `after` applied:
 * each type it set or changed takes its value, each it removed goes, the rest stay as they are
 * now (another writer's, or an earlier pass's the pass never saw).
 * @package
 */
export function rebaseConditions(
  before: readonly Condition[] | undefined,
  after: readonly Condition[] | undefined,
  current: readonly Condition[] | undefined,
): Condition[] {
  const byType = (list: readonly Condition[] | undefined) =>
    new Map((list ?? []).map((c) => [c.type, c]));
  const was = byType(before);
  const now = byType(after);
  const result = byType(current);
  for (const type of new Set([...was.keys(), ...now.keys()])) {
    const wanted = now.get(type);
    if (sameJson(wanted, was.get(type))) continue;
    if (wanted) result.set(type, wanted);
    else result.delete(type);
  }
  return [...result.values()];
}

/**
 * Merge-patches the host's metadata. Lists (finalizers) are replaced whole, so those patches
 * carry the resourceVersion they were computed from (`guarded`, the default); a single
 * annotation can be set or removed without it.
 */
export async function patchHostMetadata(
  kc: k8s.KubeConfig,
  host: WindowsHost,
  metadata: Record<string, unknown>,
  guarded = true,
): Promise<void> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  await custom.patchNamespacedCustomObject(
    {
      ...hostObject(host),
      body: {
        metadata: guarded
          ? { ...metadata, resourceVersion: host.metadata.resourceVersion }
          : metadata,
      },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}

/**
 * Removes annotation `key` only while it still holds `value` (a JSON patch that tests it
 * first), so a value the user set meanwhile is kept. True when it was removed.
 */
export async function removeHostAnnotation(
  kc: k8s.KubeConfig,
  host: WindowsHost,
  key: string,
  value: string,
): Promise<boolean> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const path = `/metadata/annotations/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
  try {
    await custom.patchNamespacedCustomObject(
      {
        ...hostObject(host),
        body: [
          { op: 'test', path, value },
          { op: 'remove', path },
        ],
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
    );
    return true;
  } catch (error) {
    // 422: the test failed (the annotation changed or went); 404: the host went.
    if (isInvalid(error) || isNotFound(error)) return false;
    throw error;
  }
}
