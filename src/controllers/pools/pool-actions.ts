/**
 * What the pool controller does to the world for one host, after poolPass said so (see the
 * header of src/rollout/index.ts): record the host's rollout state first, then take the one
 * action. Every action is a level read back from the API, so doing it twice does nothing twice.
 *
 * - writeHostRecord: status.rollout (and remediation's status) through /status as a JSON Patch whose first operation tests
 *   the resourceVersion that was read: a stale cache can never roll the record back, and a
 *   conflict means "read again", never "act anyway".
 * - cordon / uncordon: one Node patch of spec.unschedulable and winfleet.io/cordoned-by;
 *   uncordon only where that annotation is (a node a person cordoned stays cordoned), and it
 *   also drops the rollout levels below.
 * - drain: host-removal's drainNode (Eviction API: PodDisruptionBudgets decide, nothing forced).
 * - apply: the services part is the host controller's (it holds the SSH session): it sees the
 *   host's recorded Apply step and copies the payload and sets the desired version (a Pull-mode
 *   host only gets the desired version: its agent pulls the payload). Here:
 *   winfleet.io/install-updates on the Node when the change brings patches.
 * - reboot: winfleet.io/reboot-request=<token> on the Node; the agent reboots once per token.
 */
import { isDeepStrictEqual } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import {
  cordonedByAnnotation,
  cordonedByValues,
  installUpdatesAnnotation,
  rebootRequestAnnotation,
} from '../../api/node-annotations.ts';
import type { HostRemediationStatus } from '../../api/remediation-status.ts';
import type { HostRolloutStatus } from '../../api/rollout-status.ts';
import type { HostWindowsUpdates, WindowsHost } from '../../api/windows-host.ts';
import { drainUnmanagedPodsAnnotation } from '../../api/windows-host.ts';
import { nodeIsReady } from '../../controller-runtime/informer-factory.ts';
import { commandSigner } from '../../fleet/command-signer.ts';
import { patchHostStatus } from '../../fleet/host-status.ts';
import { isConflict, isFailedPatchTest, isNotFound } from '../../kube/client.ts';
import { drainNode } from '../../kube/drain.ts';
import type { StepAction } from '../../rollout/host-steps.ts';

/** How long past its deletion time a pod on a NotReady node still holds a drain. */
const notReadyDeleteWaitSeconds = 1;

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/** What the pool controller records on a host before acting: its rollout and remediation. */
export interface HostRecord {
  rollout?: HostRolloutStatus;
  remediation?: HostRemediationStatus;
}

/**
 * Writes status.rollout and/or status.remediation in one JSON Patch, guarded by the
 * resourceVersion `host` was read at. Returns the written object's new resourceVersion, or
 * undefined on a conflict (or a host gone): the caller then takes no action and reads again.
 * @package
 */
export async function writeHostRecord(
  kc: k8s.KubeConfig,
  host: WindowsHost,
  record: HostRecord,
): Promise<string | undefined> {
  const fields = Object.fromEntries(
    Object.entries(record).filter(([, value]) => value !== undefined),
  );
  try {
    const written = await patchHostStatus(kc.makeApiClient(k8s.CustomObjectsApi), host, fields, {
      guarded: true,
    });
    return written.metadata.resourceVersion;
  } catch (error) {
    // A failed test operation is 422 (Invalid) for JSON Patch; 409 for a racing writer.
    if (isConflict(error) || isNotFound(error) || isFailedPatchTest(error)) return undefined;
    throw error;
  }
}

/**
 * Copies the agent's Windows Update report into status.windowsUpdates when it differs (a plain
 * merge patch of that one field: it is a copy of the Node's annotation, rewritten whole).
 * @package
 */
export async function copyReport(
  kc: k8s.KubeConfig,
  host: WindowsHost,
  summary: HostWindowsUpdates,
): Promise<void> {
  if (isDeepStrictEqual(host.status?.windowsUpdates, summary)) return;
  try {
    // null for each field the new report lacks (error), which a merge patch would keep.
    await patchHostStatus(kc.makeApiClient(k8s.CustomObjectsApi), host, {
      windowsUpdates: { ...nulls, ...summary },
    });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

const nulls = {
  searchedAt: null,
  available: null,
  installed: null,
  failed: null,
  rebootPending: null,
  error: null,
};

export interface ActionTarget {
  kc: k8s.KubeConfig;
  host: WindowsHost;
  /** The host's own Node (identity-checked by the caller). */
  node: k8s.V1Node;
}

/** Merge-patches a Node; a Node gone is left to the next pass. */
export async function patchNode(kc: k8s.KubeConfig, name: string, body: object): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  try {
    await core.patchNode({ name, body }, mergePatch);
  } catch (error) {
    if (isNotFound(error)) return; // the Node went; the next pass sees it
    throw error;
  }
}

/** What a drain left, for the next observation (undefined: not drained this pass). */
export interface DrainOutcome {
  drained: boolean;
  blockers: string[];
  evicted: string[];
}

/** Takes one action on the host's Node. */
export async function takeAction(
  { kc, host, node }: ActionTarget,
  action: StepAction,
): Promise<DrainOutcome | undefined> {
  const name = node.metadata!.name!;
  const annotations = node.metadata?.annotations ?? {};
  switch (action.kind) {
    case 'none':
      return undefined;
    case 'cordon':
      await patchNode(kc, name, {
        spec: { unschedulable: true },
        metadata: { annotations: { [cordonedByAnnotation]: cordonedByValues.rollout } },
      });
      return undefined;
    case 'uncordon': {
      if (annotations[cordonedByAnnotation] !== cordonedByValues.rollout) {
        await dropLevels(kc, node);
        return undefined;
      }
      const signer = commandSigner(kc);
      await patchNode(kc, name, {
        spec: { unschedulable: null },
        metadata: {
          annotations: {
            [cordonedByAnnotation]: null,
            ...signer.annotations(node, installUpdatesAnnotation, null),
            ...signer.annotations(node, rebootRequestAnnotation, null),
          },
        },
      });
      return undefined;
    }
    case 'drain': {
      const result = await drainNode(kc, name, {
        evictUnmanaged: host.metadata.annotations?.[drainUnmanagedPodsAnnotation] === 'true',
        cordonAnnotations: { [cordonedByAnnotation]: cordonedByValues.rollout },
        // A NotReady node's kubelet never confirms its pods gone (a repair of a dead host):
        // once their grace period is over they do not hold the drain.
        ...(nodeIsReady(node) ? {} : { skipWaitForDeleteSeconds: notReadyDeleteWaitSeconds }),
      });
      return {
        drained: result.drained,
        blockers: [...result.blocked, ...result.unmanaged, ...result.terminating],
        evicted: result.evicted,
      };
    }
    case 'apply': {
      const policy = action.target.patchPolicy;
      const wanted = policy === 'None' ? undefined : policy;
      // Signed again while wanted, so that the agent's lifetime of the signature never ends a
      // change half-way (node-commands.ts).
      const signer = commandSigner(kc);
      if (!signer.holds(node, installUpdatesAnnotation, wanted)) {
        await patchNode(kc, name, {
          metadata: {
            annotations: signer.annotations(node, installUpdatesAnnotation, wanted ?? null),
          },
        });
      }
      return undefined;
    }
    case 'reboot':
      if (!commandSigner(kc).holds(node, rebootRequestAnnotation, action.token)) {
        await patchNode(kc, name, {
          metadata: {
            annotations: commandSigner(kc).annotations(node, rebootRequestAnnotation, action.token),
          },
        });
      }
      return undefined;
  }
}

/**
 * Removes the rollout levels (install-updates) from a Node whose host is in no change: the
 * agent must not install updates outside a change. The reboot token may stay (the agent has it
 * recorded), but it goes too, so a Node out of a change carries nothing of one.
 * @package
 */
export async function dropLevels(kc: k8s.KubeConfig, node: k8s.V1Node): Promise<void> {
  const signer = commandSigner(kc);
  if (
    signer.holds(node, installUpdatesAnnotation, undefined) &&
    signer.holds(node, rebootRequestAnnotation, undefined)
  ) {
    return;
  }
  await patchNode(kc, node.metadata!.name!, {
    metadata: {
      annotations: {
        ...signer.annotations(node, installUpdatesAnnotation, null),
        ...signer.annotations(node, rebootRequestAnnotation, null),
      },
    },
  });
}
