/** Reading and writing a WindowsHost's status (merge patches on the /status subresource). */
import * as k8s from '@kubernetes/client-node';
import type { ConditionReason, ConditionType, JoinStep } from '../../api/reasons.ts';
import { apiVersion, type WindowsHost, type WindowsHostStatus } from '../../api/windows-host.ts';
import { type Condition, findCondition, setCondition } from '../../controller/conditions.ts';
import { httpStatus, isNotFound } from '../../kube/client.ts';

/** An API timestamp without fractions, as Kubernetes writes them. */
export function apiTime(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
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

  /** True when anything differs from what the API server holds. */
  changed(): boolean {
    return JSON.stringify(this.status) !== JSON.stringify(this.host.status ?? {});
  }
}

/**
 * Writes `status` with a merge patch on the status subresource. A field the server holds but
 * `status` no longer has is sent as null, which is how a merge patch removes it.
 */
export async function writeHostStatus(
  kc: k8s.KubeConfig,
  host: WindowsHost,
  status: WindowsHostStatus,
): Promise<void> {
  const removed = Object.fromEntries(
    Object.keys(host.status ?? {})
      .filter((field) => !(field in status))
      .map((field) => [field, null]),
  );
  // The serving-address controller writes servingAddresses too (an admin's change): sent only
  // when this pass changed it, so a copy read before that change never undoes it.
  const { servingAddresses, ...fields } = status;
  const serving =
    JSON.stringify(servingAddresses) === JSON.stringify(host.status?.servingAddresses)
      ? {}
      : { servingAddresses };
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const [group, version] = apiVersion.split('/') as [string, string];
  await custom.patchNamespacedCustomObjectStatus(
    {
      group,
      version,
      namespace: host.metadata.namespace!,
      plural: 'windowshosts',
      name: host.metadata.name,
      body: {
        status: {
          ...removed,
          ...fields,
          ...serving,
          observedGeneration: host.metadata.generation,
        },
      },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
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
  const [group, version] = apiVersion.split('/') as [string, string];
  await custom.patchNamespacedCustomObject(
    {
      group,
      version,
      namespace: host.metadata.namespace!,
      plural: 'windowshosts',
      name: host.metadata.name,
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
  const [group, version] = apiVersion.split('/') as [string, string];
  const path = `/metadata/annotations/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
  try {
    await custom.patchNamespacedCustomObject(
      {
        group,
        version,
        namespace: host.metadata.namespace!,
        plural: 'windowshosts',
        name: host.metadata.name,
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
    if (httpStatus(error) === 422 || isNotFound(error)) return false;
    throw error;
  }
}
