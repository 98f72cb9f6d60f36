/** Reading and writing a WindowsHost's status (merge patches on the /status subresource). */
import * as k8s from '@kubernetes/client-node';
import {
  apiVersion,
  type HostConditionType,
  type WindowsHost,
  type WindowsHostStatus,
} from '../../api/windows-host.ts';
import { type Condition, setCondition } from '../../controller/conditions.ts';

/** A working copy of a host's status that records condition changes. */
export class HostStatus {
  readonly host: WindowsHost;
  status: WindowsHostStatus;

  constructor(host: WindowsHost) {
    this.host = host;
    this.status = structuredClone(host.status ?? {});
  }

  set(type: HostConditionType, status: Condition['status'], reason: string, message = ''): void {
    this.status.conditions = setCondition(this.status.conditions, {
      type,
      status,
      reason,
      message,
      observedGeneration: this.host.metadata.generation,
    });
  }

  error(step: string, message: string): void {
    this.status.lastError = {
      step,
      message: message.slice(0, 2000),
      time: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
  }

  /** True when anything differs from what the API server holds. */
  changed(): boolean {
    return JSON.stringify(this.status) !== JSON.stringify(this.host.status ?? {});
  }
}

/** Writes `status` with a merge patch on the status subresource. */
export async function writeHostStatus(
  kc: k8s.KubeConfig,
  host: WindowsHost,
  status: WindowsHostStatus,
): Promise<void> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const [group, version] = apiVersion.split('/') as [string, string];
  await custom.patchNamespacedCustomObjectStatus(
    {
      group,
      version,
      namespace: host.metadata.namespace!,
      plural: 'windowshosts',
      name: host.metadata.name,
      body: { status: { ...status, observedGeneration: host.metadata.generation } },
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
