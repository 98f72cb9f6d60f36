/**
 * The agent's side of signed node commands (src/api/node-commands.ts): what it obeys of its
 * Node. commandView returns the Node with every command annotation the operator did not sign
 * for this node, this Node object (and, where bound, this boot) taken out, so that the rest
 * of the agent acts only on the operator's commands. Each refusal is logged once per value,
 * naming the annotation and why, never the signature.
 *
 * Beyond the signature:
 * - replays: the agent records, per command, the newest issue time it obeyed, and refuses an
 *   older one; when a level it obeyed (install-updates, reboot-request) is gone from the Node,
 *   the floor moves past it, so a saved copy put back later is refused too
 *   (C:\k\winfleet\commands.json);
 * - install-updates is obeyed only while its signature is at most installLifetimeSeconds old
 *   by the host's clock (the operator signs it again while it wants it);
 * - deconfigure-requested only on a host that joined by command (pullsPayload): the operator
 *   removes an SSH host over SSH and never asks its agent.
 */
import type { KeyObject } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import {
  deconfigureRequestAnnotation,
  installUpdatesAnnotation,
  rebootRequestAnnotation,
} from '../api/node-annotations.ts';
import {
  type CommandAnnotation,
  checkCommand,
  commandAnnotations,
  commandKeyConfigMapName,
  commandKeyDataKey,
  installLifetimeSeconds,
  parseCommandPublicKey,
} from '../api/node-commands.ts';
import { type AgentConfig, winfleetDir } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import type { HostOS } from './host-os.ts';

/** Reads the operator's public key (ConfigMap commandKeyConfigMapName) with the node's client. */
export function operatorKeyReader(
  core: k8s.CoreV1Api,
  config: AgentConfig,
): () => Promise<string | undefined> {
  return async () =>
    (
      await core.readNamespacedConfigMap({
        name: commandKeyConfigMapName,
        namespace: config.operatorNamespace,
      })
    ).data?.[commandKeyDataKey];
}

/** Where the agent records the issue times of the commands it obeyed. */
export const commandRecordPath = `${winfleetDir}\\commands.json`;

/** Per command: the issue time of the newest one obeyed, and whether it is spent (withdrawn). */
type CommandFloors = Partial<Record<CommandAnnotation, { issuedAt: number; spent?: true }>>;

/** Levels: gone from the Node, they are spent. */
const levels: ReadonlySet<CommandAnnotation> = new Set([
  installUpdatesAnnotation,
  rebootRequestAnnotation,
]);
/** How far ahead of the host's clock an issue time may be (clock skew). */
const skewSeconds = 300;
/** How often, at most, the key is read again after a signature it did not verify. */
const keyRereadMs = 30_000;

interface KeyCache {
  key: KeyObject | undefined;
  readAt: number;
}
const keys = new WeakMap<AgentContext, KeyCache>();
/** The last refusal logged per command, per agent. */
const logged = new WeakMap<AgentContext, Map<string, string>>();

async function readFloors(host: HostOS): Promise<CommandFloors> {
  const data = await host.readFile(commandRecordPath).catch(() => undefined);
  if (!data) return {};
  try {
    const parsed = JSON.parse(data.toString('utf8')) as { floors?: unknown };
    const floors: CommandFloors = {};
    for (const annotation of commandAnnotations) {
      const value = (parsed.floors as Record<string, { issuedAt?: unknown; spent?: unknown }>)?.[
        annotation
      ];
      if (typeof value?.issuedAt === 'number' && Number.isSafeInteger(value.issuedAt))
        floors[annotation] = {
          issuedAt: value.issuedAt,
          ...(value.spent === true ? { spent: true } : {}),
        };
    }
    return floors;
  } catch {
    // A damaged record: what is obeyed is still bound to this Node and, for levels, this boot.
    return {};
  }
}

async function publicKey(
  context: AgentContext,
  readKey: () => Promise<string | undefined>,
  reread: boolean,
): Promise<KeyObject | undefined> {
  const now = Date.now();
  const cached = keys.get(context);
  // A key read is kept until a signature fails with it; a failed read is tried again, and
  // either at most every keyRereadMs.
  if (cached && ((cached.key && !reread) || now - cached.readAt < keyRereadMs)) return cached.key;
  let key = cached?.key;
  try {
    key = parseCommandPublicKey(await readKey());
  } catch {
    // Unreadable now: the cached key (if any) stands; commands wait.
  }
  keys.set(context, { key, readAt: now });
  return key;
}

function logOnce(context: AgentContext, annotation: string, value: string, message: string) {
  const seen = logged.get(context) ?? new Map<string, string>();
  logged.set(context, seen);
  if (seen.get(annotation) === value) return;
  seen.set(annotation, value);
  context.stderr(`${message}\n`);
}

/**
 * `node` with only the commands the agent obeys (see the module comment); updates the record
 * of issue times. `now` is the host's clock, ms.
 * @package
 */
export async function commandView(
  context: AgentContext,
  readKey: () => Promise<string | undefined>,
  config: AgentConfig,
  node: k8s.V1Node,
  now: number = Date.now(),
): Promise<k8s.V1Node> {
  const annotations = { ...(node.metadata?.annotations ?? {}) };
  const floors = await readFloors(context.hostOS);
  const before = JSON.stringify(floors);
  const seconds = Math.floor(now / 1000);
  const present = commandAnnotations.filter((a) => annotations[a] !== undefined);
  let key = present.length > 0 ? await publicKey(context, readKey, false) : undefined;
  for (const annotation of commandAnnotations) {
    const value = annotations[annotation];
    if (value === undefined) {
      // A level the operator took away is spent: a copy put back later is refused.
      const floor = floors[annotation];
      if (levels.has(annotation) && floor && !floor.spent)
        floors[annotation] = { ...floor, spent: true };
      continue;
    }
    let check = checkCommand(key, node, config.nodeName, annotation);
    if (check.kind === 'refused') {
      // The operator may have a new key: read it again (rate-limited).
      const fresh = await publicKey(context, readKey, true);
      if (fresh && fresh !== key) {
        key = fresh;
        check = checkCommand(key, node, config.nodeName, annotation);
      }
    }
    let why: string | undefined;
    if (check.kind === 'refused') why = check.why;
    else if (check.kind === 'valid') {
      const floor = floors[annotation];
      if (annotation === deconfigureRequestAnnotation && !config.pullsPayload)
        why =
          'this host did not join by command: the operator removes it over SSH and never asks its agent';
      else if (
        floor &&
        (check.issuedAt < floor.issuedAt || (check.issuedAt === floor.issuedAt && floor.spent))
      )
        why =
          'it is not newer than a command of the operator this agent already obeyed (or saw withdrawn): a replay';
      else if (check.issuedAt > seconds + skewSeconds)
        why = `it is issued in the future by this host's clock`;
      else if (
        annotation === installUpdatesAnnotation &&
        seconds - check.issuedAt > installLifetimeSeconds
      )
        why = `its signature is older than ${installLifetimeSeconds}s (the operator signs it again while it wants updates installed)`;
      else if (check.issuedAt !== floor?.issuedAt)
        floors[annotation] = { issuedAt: check.issuedAt };
    }
    if (why !== undefined) {
      const shown = JSON.stringify(value.slice(0, 80));
      logOnce(
        context,
        annotation,
        `${value}\n${why}`,
        `Ignoring ${annotation}=${shown} on Node ${config.nodeName}: ${why}. Only the operator gives commands to the agent; check who wrote it`,
      );
      delete annotations[annotation];
    }
  }
  if (JSON.stringify(floors) !== before) {
    await context.hostOS.writeFile(commandRecordPath, `${JSON.stringify({ floors }, null, 2)}\n`);
  }
  return { ...node, metadata: { ...node.metadata, annotations } };
}
