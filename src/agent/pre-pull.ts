/**
 * Images before pods (src/api/pre-pull.ts): the agent pulls the images of its pool's
 * spec.prePull through containerd once per boot and services version — after a join, an
 * upgrade or a reboot — and reports the Node condition ImagesPrePulled. It obeys the list only
 * as the operator signed it for this Node (commandView in command-check.ts has taken out any
 * other), and parses it strictly all the same.
 *
 * - the free space of containerd's volume is checked first, against three times the images'
 *   compressed size (the downloaded blobs stay in the content store, and the unpacked layers of
 *   a Windows image take about twice their compressed size); images already there count nothing;
 * - at most maxParallel pulls at once, all of them bounded by timeoutSeconds;
 * - every ending is a condition reason: PrePulled, PrePullFailed (naming each image and
 *   containerd's error), PrePullNoSpace, PrePullTimedOut. None keeps the node from pods: the
 *   operator lifts the node's pre-pull taint once the condition is anything but PrePulling
 *   (a node may not change its own taints: NodeRestriction).
 *
 * Every run reports PrePulling first and ends each message with prePullRunMark (the Node's boot
 * id and the services version it ran for), so that a rollout waiting on the Node never takes an
 * ending left from before its upgrade or reboot for this one's (prePullState).
 */
import { createHash } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import {
  type PrePullCommand,
  parsePrePullCommand,
  prePullAnnotation,
  prePullConditionType,
  prePullRunMark,
} from '../api/pre-pull.ts';
import { PrePullReason } from '../api/reasons.ts';
import { winfleetDir } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import type { HostOS } from './host-os.ts';

/** Where containerd keeps its content and snapshots on Windows (its default root). */
const containerdRoot = 'C:\\ProgramData\\containerd';
/** Disk needed per compressed byte: the blob, and its unpacked layer at about twice its size. */
export const diskBytesPerCompressedByte = 3;
/** Where the agent records the boot and version its last pre-pull ran for. */
export const prePullRecordPath = `${winfleetDir}\\pre-pull.json`;

/** How a pre-pull ended (or how it stands), as the Node condition says it. */
export interface PrePullOutcome {
  status: 'True' | 'False';
  reason: PrePullReason;
  message: string;
}

/** @package */
export interface PullImagesOptions {
  /** Stops the pulls (the agent stops). */
  signal?: AbortSignal;
  /** The command's timeout in ms (tests shorten it). Default timeoutSeconds × 1000. */
  timeoutMs?: number;
  /** Called after each image, with the count done (pulled, there already, or failed). */
  onProgress?: (done: number, total: number) => void;
}

function formatBytes(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}

/** Pulls the command's images (see the header) and says how it ended. @package */
export async function pullImages(
  host: HostOS,
  command: PrePullCommand,
  options: PullImagesOptions = {},
): Promise<PrePullOutcome> {
  const total = command.images.length;
  const missing: PrePullCommand['images'] = [];
  for (const image of command.images)
    if (!(await host.hasImage(image.reference).catch(() => false))) missing.push(image);
  if (missing.length === 0)
    return {
      status: 'True',
      reason: PrePullReason.PrePulled,
      message: `All ${total} images were there`,
    };
  const need = missing.reduce((sum, i) => sum + (i.bytes ?? 0), 0) * diskBytesPerCompressedByte;
  const free = await host.freeDiskBytes(containerdRoot);
  if (need > free) {
    return {
      status: 'False',
      reason: PrePullReason.PrePullNoSpace,
      message: `${missing.map((i) => (i.bytes === undefined ? i.reference : `${i.reference} (${formatBytes(i.bytes)})`)).join(', ')} need about ${formatBytes(need)} (3 × ${formatBytes(need / diskBytesPerCompressedByte)} compressed) on ${containerdRoot}'s volume, which has ${formatBytes(free)} free; nothing was pulled`,
    };
  }
  const timeoutMs = options.timeoutMs ?? command.timeoutSeconds * 1000;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const failed: string[] = [];
  let done = total - missing.length;
  let pulled = 0;
  let next = 0;
  const worker = async () => {
    while (next < missing.length && !signal.aborted) {
      const image = missing[next++]!;
      try {
        await host.pullImage(image.reference, signal);
        pulled++;
      } catch (error) {
        if (signal.aborted) return;
        failed.push(`${image.reference}: ${(error as Error).message}`);
      }
      options.onProgress?.(++done, total);
    }
  };
  await Promise.all(Array.from({ length: Math.min(command.maxParallel, missing.length) }, worker));
  if (timeout.aborted) {
    return {
      status: 'False',
      reason: PrePullReason.PrePullTimedOut,
      message:
        `${total - missing.length + pulled} of ${total} images there after ${Math.round(timeoutMs / 1000)}s (spec.prePull.timeoutSeconds)${failed.length > 0 ? `, ${failed.length} failed (${failed.join('; ')})` : ''}; the node takes pods without the rest`.slice(
          0,
          1024,
        ),
    };
  }
  if (failed.length > 0) {
    return {
      status: 'False',
      reason: PrePullReason.PrePullFailed,
      message:
        `${failed.length} of ${total} images could not be pulled: ${failed.join('; ')}`.slice(
          0,
          1024,
        ),
    };
  }
  return { status: 'True', reason: PrePullReason.PrePulled, message: `${total} images pulled` };
}

/** The pre-pull under way per agent (its key), so that a pass does not start a second. */
const running = new WeakMap<AgentContext, string>();
/** The last malformed command logged per agent. */
const refused = new WeakMap<AgentContext, string>();

/** What the pass gives syncPrePull. */
export interface PrePullPass {
  context: AgentContext;
  nodeName: string;
  core: k8s.CoreV1Api;
  /** The Node as the operator's signed commands leave it (commandView). */
  node: k8s.V1Node;
  /** The services version the host runs now. */
  servicesVersion: string;
  /** Asks the loop for another pass (when the pulls end). */
  wake?: () => void;
  /** Tests shorten the timeout. */
  timeoutMs?: number;
}

/**
 * Starts the pre-pull the Node's signed command asks for, once per boot, services version and
 * list (recorded in prePullRecordPath), in the background: the pass goes on. Returns the
 * pulls' promise (as `done`) when it started them (tests wait on it), else undefined.
 */
export async function syncPrePull(pass: PrePullPass): Promise<{ done: Promise<void> } | undefined> {
  const { context, node } = pass;
  const value = node.metadata?.annotations?.[prePullAnnotation];
  if (value === undefined) return undefined;
  const key = createHash('sha256')
    .update(JSON.stringify([node.status?.nodeInfo?.bootID ?? '', pass.servicesVersion, value]))
    .digest('hex');
  if (running.get(context) === key) return undefined;
  const recorded = await context.hostOS.readFile(prePullRecordPath).catch(() => undefined);
  if (recorded?.toString('utf8').trim() === key) return undefined;
  let command: PrePullCommand;
  try {
    command = parsePrePullCommand(value);
  } catch (error) {
    if (refused.get(context) !== value) {
      refused.set(context, value);
      context.stderr(`Ignoring ${prePullAnnotation} on this Node: ${(error as Error).message}\n`);
    }
    await reportCondition(pass, {
      status: 'False',
      reason: PrePullReason.PrePullFailed,
      message: `The pre-pull list on this Node is not one the operator writes: ${(error as Error).message}`,
    });
    return undefined;
  }
  running.set(context, key);
  return { done: runPrePull(pass, command, key) };
}

async function runPrePull(pass: PrePullPass, command: PrePullCommand, key: string): Promise<void> {
  const { context } = pass;
  const total = command.images.length;
  // Progress reports go one after the other, and all before the outcome: a late one must not
  // put PrePulling back over it.
  let reports: Promise<void> = Promise.resolve();
  const progress = (done: number) => {
    reports = reports.then(() =>
      reportCondition(pass, {
        status: 'False',
        reason: PrePullReason.PrePulling,
        message: `${done} of ${total} images done`,
      }).catch(() => undefined),
    );
    return reports;
  };
  try {
    await progress(0);
    context.stderr(`pre-pulling ${total} images (at most ${command.maxParallel} at once)\n`);
    const outcome = await pullImages(context.hostOS, command, {
      ...(context.signal ? { signal: context.signal } : {}),
      ...(pass.timeoutMs !== undefined ? { timeoutMs: pass.timeoutMs } : {}),
      onProgress: (done) => void progress(done),
    });
    if (context.signal?.aborted) return;
    context.stderr(`pre-pull: ${outcome.reason}: ${outcome.message}\n`);
    await reports;
    await reportCondition(pass, outcome);
    await context.hostOS.writeFile(prePullRecordPath, `${key}\n`);
  } catch (error) {
    context.stderr(`pre-pull failed: ${(error as Error).message}\n`);
    await reports;
    await reportCondition(pass, {
      status: 'False',
      reason: PrePullReason.PrePullFailed,
      message: (error as Error).message.slice(0, 1024),
    }).catch(() => undefined);
    // Not again in this boot, version and list, failed or not: a run started again on a node
    // that took pods since would put the pre-pull taint back on it. The next boot, upgrade or
    // list tries again.
    await context.hostOS.writeFile(prePullRecordPath, `${key}\n`).catch(() => undefined);
  } finally {
    running.delete(context);
    pass.wake?.();
  }
}

/**
 * Writes the ImagesPrePulled condition on the Node's status (the node's own credentials), its
 * message ending with the run's mark (boot id and services version).
 */
async function reportCondition(pass: PrePullPass, outcome: PrePullOutcome): Promise<void> {
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const mark = prePullRunMark(pass.node.status?.nodeInfo?.bootID ?? '', pass.servicesVersion);
  const message = `${outcome.message.slice(0, 1023 - mark.length)} ${mark}`;
  await pass.core.patchNodeStatus(
    {
      name: pass.nodeName,
      body: {
        status: {
          conditions: [
            {
              type: prePullConditionType,
              ...outcome,
              message,
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            },
          ],
        },
      },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
  );
}
