/**
 * Images before pods (issue 35, item 4): a pool's spec.prePull lists images its hosts pull
 * through containerd after a join, an upgrade or a reboot, before the node takes pods.
 *
 * The operator hands the list to a node's agent as a signed node command (prePullAnnotation,
 * src/api/node-commands.ts): any principal with `patch nodes` can write a Node's annotations,
 * and a list the agent acted on unsigned would let it make nodes pull what it chooses. The
 * value is the canonical JSON of PrePullCommand (formatPrePullCommand), parsed strictly by the
 * agent (parsePrePullCommand) even once its signature holds.
 *
 * While it pulls, the node carries prePullTaint (registered with the kubelet through
 * --register-with-taints when the Node is new, else added by the operator once the agent
 * reports it pulls: NodeRestriction lets a node set taints only when it registers, never
 * change them), and its agent reports the Node condition prePullConditionType; the taint goes
 * once that condition is True or False, whatever its reason: a failure or a timeout never keeps
 * a node from pods.
 *
 * Each message of that condition ends with prePullRunMark: the boot and services version the
 * run was for. A rollout's WaitReady (src/rollout/host-steps.ts) counts only the run of the
 * Node's current boot and services version (prePullState): a PrePulled left from before an
 * upgrade or a reboot is not this one's.
 */
import { isIP } from 'node:net';
import type * as k8s from '@kubernetes/client-node';
import { WinfleetError } from '../errors/catalog.ts';
import type { AddressPolicy } from '../images/address-policy.ts';
import { createAddressPolicy, hostAddress } from '../images/address-policy.ts';
import { formatImageReference, parseImageReference } from '../images/image-reference.ts';
import { servicesVersionAnnotation } from './node-annotations.ts';
import { PrePullReason } from './reasons.ts';

/** spec.prePull of a WindowsNodePool. */
export interface PrePullSpec {
  /** Image references (tag or digest), pulled for the host's own platform. */
  images?: string[];
  /**
   * True: the images the running pods on the cluster's Windows nodes use follow the listed ones
   * (src/controllers/hosts/pre-pull-auto.ts), those the host's build runs, up to maxImages in all.
   */
  auto?: boolean;
  /** How long the node waits for its pulls before it takes pods anyway. Default 900. */
  timeoutSeconds?: number;
  /** How many images are pulled at once. Default 2. */
  maxParallel?: number;
}

export const prePullDefaults = { timeoutSeconds: 900, maxParallel: 2 } as const;
/** Limits the CRD declares too. */
export const prePullLimits = {
  maxImages: 32,
  minTimeoutSeconds: 30,
  maxTimeoutSeconds: 7200,
  maxParallel: 8,
} as const;

/** The signed command on a Node: spec.prePull with its defaults, the references normalised. */
export interface PrePullCommand {
  images: {
    reference: string /** Compressed bytes, when the operator looked them up. */;
    bytes?: number;
  }[];
  timeoutSeconds: number;
  maxParallel: number;
}

/** The Node annotation carrying the signed PrePullCommand. */
export const prePullAnnotation = 'winfleet.io/pre-pull';
/** The taint a pre-pulling node registers with and loses once its pulls ended. */
export const prePullTaint = { key: 'winfleet.io/pre-pulling', effect: 'NoSchedule' } as const;
/** The agent's Node condition: True once every image is there, False with a reason otherwise. */
export const prePullConditionType = 'ImagesPrePulled';

/**
 * How long past spec.prePull.timeoutSeconds a Ready node waits for its agent's report before it
 * takes pods all the same (an agent that never reports keeps no node from pods).
 */
export const prePullGraceMs = 120_000;

/** How long a Ready node of `spec` waits at most for its pulls: the timeout and the grace. */
export function prePullWaitMs(spec: PrePullSpec): number {
  return (spec.timeoutSeconds ?? prePullDefaults.timeoutSeconds) * 1000 + prePullGraceMs;
}

/**
 * The end of every ImagesPrePulled message: the boot (the Node's status.nodeInfo.bootID) and
 * the services version the agent's run was for.
 */
export function prePullRunMark(bootId: string, servicesVersion: string): string {
  return `[boot ${bootId}, services ${servicesVersion}]`;
}

/**
 * The agent's pre-pull for the Node's current boot and services version (its annotation
 * winfleet.io/services-version): 'pulling' while it runs, 'ended' once it ended however it
 * ended, undefined when the Node shows no run of this boot and version (none yet, or one from
 * before an upgrade or a reboot).
 */
export function prePullState(node: k8s.V1Node): 'pulling' | 'ended' | undefined {
  const condition = node.status?.conditions?.find((c) => c.type === prePullConditionType);
  if (!condition) return undefined;
  const mark = prePullRunMark(
    node.status?.nodeInfo?.bootID ?? '',
    node.metadata?.annotations?.[servicesVersionAnnotation] ?? '',
  );
  if (!(condition.message ?? '').endsWith(` ${mark}`)) return undefined;
  return condition.reason === PrePullReason.PrePulling ? 'pulling' : 'ended';
}

/** The address policy's fixed ranges (loopback, link-local, private, …), no configuration. */
const fixedRanges = createAddressPolicy();

/**
 * Problems with a pool's spec.prePull, each naming the field and the fix: references that do
 * not parse, duplicates, a registry given as an IP address the address policy refuses, and
 * numbers out of range.
 */
export function prePullProblems(spec: PrePullSpec, policy: AddressPolicy = fixedRanges): string[] {
  const problems: string[] = [];
  const images = Array.isArray(spec.images) ? spec.images : [];
  if (spec.auto !== undefined && typeof spec.auto !== 'boolean')
    problems.push('spec.prePull.auto: write true or false');
  if (spec.images !== undefined && !Array.isArray(spec.images))
    problems.push('spec.prePull.images: write a list of image references');
  else if (images.length === 0 && spec.auto !== true)
    problems.push(
      'spec.prePull.images: list at least one image, or set spec.prePull.auto: true, or remove spec.prePull',
    );
  if (images.length > prePullLimits.maxImages)
    problems.push(`spec.prePull.images: at most ${prePullLimits.maxImages} images`);
  const seen = new Set<string>();
  images.forEach((image, i) => {
    const field = `spec.prePull.images[${i}]`;
    try {
      const ref = parseImageReference(image);
      const canonical = formatImageReference(ref);
      if (seen.has(canonical)) problems.push(`${field}: "${image}" is listed twice; remove one`);
      seen.add(canonical);
      const host = hostAddress(ref.registry.replace(/:[0-9]+$/, ''));
      const why = isIP(host) ? policy.forbiddenAddress(host) : undefined;
      if (why)
        problems.push(
          `${field}: the registry of "${image}" is ${why}, which the image address policy refuses; use a registry or mirror winfleet-config names`,
        );
    } catch (error) {
      problems.push(`${field}: ${(error as Error).message}`);
    }
  });
  const number = (value: unknown, name: string, min: number, max: number) => {
    if (value === undefined) return;
    if (!Number.isInteger(value) || (value as number) < min || (value as number) > max)
      problems.push(`spec.prePull.${name}: write a whole number from ${min} to ${max}`);
  };
  number(
    spec.timeoutSeconds,
    'timeoutSeconds',
    prePullLimits.minTimeoutSeconds,
    prePullLimits.maxTimeoutSeconds,
  );
  number(spec.maxParallel, 'maxParallel', 1, prePullLimits.maxParallel);
  return problems;
}

/**
 * The command for a valid spec (prePullProblems empty); sizes by normalised reference. `auto`:
 * the images of spec.prePull.auto for this node (normalised references), after the listed ones,
 * those listed already left out, up to prePullLimits.maxImages in all.
 */
export function prePullCommand(
  spec: PrePullSpec,
  sizes: ReadonlyMap<string, number> = new Map(),
  auto: readonly string[] = [],
): PrePullCommand {
  const references = (spec.images ?? []).map((image) =>
    formatImageReference(parseImageReference(image)),
  );
  for (const reference of auto) {
    if (references.length >= prePullLimits.maxImages) break;
    if (!references.includes(reference)) references.push(reference);
  }
  return {
    images: references.map((reference) => {
      const bytes = sizes.get(reference);
      return bytes === undefined ? { reference } : { reference, bytes };
    }),
    timeoutSeconds: spec.timeoutSeconds ?? prePullDefaults.timeoutSeconds,
    maxParallel: spec.maxParallel ?? prePullDefaults.maxParallel,
  };
}

/** The annotation's value: canonical JSON (key order fixed), as signed. */
export function formatPrePullCommand(command: PrePullCommand): string {
  return JSON.stringify({
    images: command.images.map((i) =>
      i.bytes === undefined
        ? { reference: i.reference }
        : { reference: i.reference, bytes: i.bytes },
    ),
    timeoutSeconds: command.timeoutSeconds,
    maxParallel: command.maxParallel,
  });
}

/**
 * Parses the annotation's value strictly: only formatPrePullCommand's shape, normalised
 * references, numbers in range. Throws a WinfleetError (WF_SCHEMA_INVALID) saying what is wrong.
 */
export function parsePrePullCommand(value: string): PrePullCommand {
  if (value.length > 16384)
    throw new WinfleetError('WF_SCHEMA_INVALID', 'the pre-pull command is longer than 16 KiB');
  const fail = (why: string): never => {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `the pre-pull command is not one the operator writes: ${why}`,
    );
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return fail('it is not JSON');
  }
  if (!isRecord(parsed) || Object.keys(parsed).join() !== 'images,timeoutSeconds,maxParallel')
    fail('expected exactly {images, timeoutSeconds, maxParallel}');
  const { images, timeoutSeconds, maxParallel } = parsed as Record<string, unknown>;
  if (!Array.isArray(images) || images.length === 0 || images.length > prePullLimits.maxImages)
    fail(`images must list 1 to ${prePullLimits.maxImages} images`);
  const command: PrePullCommand = {
    images: (images as unknown[]).map((item) => parseCommandImage(item, fail)),
    timeoutSeconds: inRange(
      timeoutSeconds,
      prePullLimits.minTimeoutSeconds,
      prePullLimits.maxTimeoutSeconds,
      fail,
    ),
    maxParallel: inRange(maxParallel, 1, prePullLimits.maxParallel, fail),
  };
  if (formatPrePullCommand(command) !== value) fail('it is not in canonical form');
  return command;
}

function parseCommandImage(
  item: unknown,
  fail: (why: string) => never,
): PrePullCommand['images'][number] {
  if (!isRecord(item)) return fail('an image is not an object');
  const keys = Object.keys(item).join();
  if (keys !== 'reference' && keys !== 'reference,bytes') fail('an image has unknown fields');
  const reference = item.reference;
  if (typeof reference !== 'string') return fail('an image reference is not a string');
  let canonical: string;
  try {
    canonical = formatImageReference(parseImageReference(reference));
  } catch (error) {
    return fail((error as Error).message);
  }
  if (canonical !== reference) fail(`"${reference}" is not normalised`);
  if (item.bytes === undefined) return { reference };
  return { reference, bytes: inRange(item.bytes, 0, Number.MAX_SAFE_INTEGER, fail) };
}

function inRange(value: unknown, min: number, max: number, fail: (why: string) => never): number {
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max)
    fail(`${String(value)} is not a whole number from ${min} to ${max}`);
  return value as number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * WindowsHost status.prePull: the host's Node's ImagesPrePulled condition, copied by the host
 * controller on each pass so that `kubectl get windowshosts` and the dashboard show it.
 */
export interface HostPrePullStatus {
  /** The condition's status: True once every image is there. */
  status: 'True' | 'False';
  /** PrePulling, PrePulled, PrePullFailed, PrePullNoSpace or PrePullTimedOut. */
  reason: string;
  /** The agent's message, ending with the boot and services version the run was for. */
  message: string;
  /** Images there (pulled, there already, or failed) of those listed, when the message says. */
  imagesDone?: number;
  imagesTotal?: number;
  /** When the agent last reported it. */
  lastTransitionTime?: string;
}

/**
 * The status.prePull for a host whose Node is `node`: its ImagesPrePulled condition, with the
 * counts its message gives ("2 of 5 images done", "All 5 images were there", "5 images
 * pulled", "1 of 5 images could not be pulled", "3 of 5 images there after 900s"); undefined
 * when the Node has no such condition.
 */
export function hostPrePullStatus(node: k8s.V1Node | undefined): HostPrePullStatus | undefined {
  const condition = node?.status?.conditions?.find((c) => c.type === prePullConditionType);
  if (!condition) return undefined;
  const message = (condition.message ?? '').slice(0, 1024);
  const counts = prePullCounts(condition.reason ?? '', message);
  const at = condition.lastTransitionTime;
  return {
    status: condition.status === 'True' ? 'True' : 'False',
    reason: (condition.reason ?? '').slice(0, 64),
    message,
    ...counts,
    ...(at ? { lastTransitionTime: new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z') } : {}),
  };
}

function prePullCounts(
  reason: string,
  message: string,
): Pick<HostPrePullStatus, 'imagesDone' | 'imagesTotal'> {
  const all = /^(?:All (\d+) images were there|(\d+) images pulled)\b/.exec(message);
  if (all && reason === PrePullReason.PrePulled) {
    const total = Number(all[1] ?? all[2]);
    return { imagesDone: total, imagesTotal: total };
  }
  const some = /^(\d+) of (\d+) images (done|there after|could not be pulled)\b/.exec(message);
  if (!some) return {};
  const [first, total] = [Number(some[1]), Number(some[2])];
  // "1 of 5 images could not be pulled": every image was tried, one failed.
  return { imagesDone: some[3] === 'could not be pulled' ? total : first, imagesTotal: total };
}
