/**
 * Commands the operator gives an agent on its Node, signed so that only the operator can give
 * them. Any principal with `patch nodes` (cluster-autoscaler, kured, node-feature-discovery,
 * several CNI agents) and the node itself may write a Node's annotations; none of them holds
 * the operator's signing key. The agent obeys a command annotation only with a valid signature
 * beside it (`<annotation>-signature`), made with the operator's Ed25519 key over:
 *
 *   [ "winfleet-node-command/v1", annotation, node name, Node uid, boot id, value, issued at ]
 *
 * - the node name is the agent's own (agent.json), so a command signed for another node is
 *   refused;
 * - the Node uid is immutable and new for every Node object: a command signed for an earlier
 *   Node of the same name (a host removed and joined again) is refused;
 * - the boot id (status.nodeInfo.bootID, written by the kubelet through nodes/status, which
 *   `patch nodes` does not grant) binds a reboot request and an install of updates to the boot
 *   the operator saw: after the reboot the command is spent. Empty for the other commands;
 * - issued at (Unix seconds, the operator's clock) orders the commands: the agent records the
 *   newest it obeyed per annotation and refuses an older one, so an attacker who saved a
 *   signed value cannot put back an earlier desired services version, and an install of
 *   updates is obeyed only while its signature is at most installLifetimeSeconds old (the
 *   operator signs it again while it still wants it).
 *
 * The public key is in the ConfigMap commandKeyConfigMapName of the operator's namespace, which
 * nodes may read by name and only the operator writes; the private key is in the Secret
 * commandSigningSecretName there, which nodes cannot read.
 */
import { createPublicKey, type KeyObject, sign, verify } from 'node:crypto';
import {
  deconfigureRequestAnnotation,
  desiredServicesVersionAnnotation,
  installUpdatesAnnotation,
  rebootRequestAnnotation,
} from './node-annotations.ts';
import { prePullAnnotation } from './pre-pull.ts';

/** Every annotation the agent obeys as a command, each signed. */
export const commandAnnotations = [
  desiredServicesVersionAnnotation,
  installUpdatesAnnotation,
  rebootRequestAnnotation,
  deconfigureRequestAnnotation,
  prePullAnnotation,
] as const;
export type CommandAnnotation = (typeof commandAnnotations)[number];

/** The annotation holding the signature of `annotation`'s value. */
export function signatureAnnotation(annotation: CommandAnnotation): string {
  return `${annotation}-signature`;
}

/** The commands bound to the boot the operator saw. */
const bootBound: ReadonlySet<string> = new Set([installUpdatesAnnotation, rebootRequestAnnotation]);

/** The ConfigMap with the operator's public key (key commandKeyDataKey, SPKI PEM). */
export const commandKeyConfigMapName = 'winfleet-command-key';
/** The Secret with the operator's private key (key commandKeyDataKey, PKCS#8 PEM). */
export const commandSigningSecretName = 'winfleet-command-signing-key';
export const commandKeyDataKey = 'ed25519.pem';
/** How long a signed install of updates is obeyed; the operator signs again at half of it. */
export const installLifetimeSeconds = 3600;

/** What a command is signed over. */
export interface CommandFacts {
  annotation: CommandAnnotation;
  nodeName: string;
  nodeUid: string;
  /** The Node's boot id for a boot-bound command; ignored (empty) for the others. */
  bootId: string;
  value: string;
  issuedAt: number;
}

function message(facts: CommandFacts): Buffer {
  return Buffer.from(
    JSON.stringify([
      'winfleet-node-command/v1',
      facts.annotation,
      facts.nodeName,
      facts.nodeUid,
      bootBound.has(facts.annotation) ? facts.bootId : '',
      facts.value,
      facts.issuedAt,
    ]),
  );
}

/** The signature annotation's value: "v1.<issued at>.<base64url signature>". */
export function signCommand(privateKey: KeyObject, facts: CommandFacts): string {
  const signature = sign(null, message(facts), privateKey).toString('base64url');
  return `v1.${facts.issuedAt}.${signature}`;
}

const signaturePattern = /^v1\.([1-9][0-9]{0,11})\.([A-Za-z0-9_-]{86})$/;

/** When a signature annotation's value says it was issued, or undefined when malformed. */
export function signatureIssuedAt(text: string | undefined): number | undefined {
  const m = text === undefined ? null : signaturePattern.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** The Node's facts a command on it is checked against. */
export interface NodeFacts {
  metadata?: { uid?: string; annotations?: Record<string, string> };
  status?: { nodeInfo?: { bootID?: string } };
}

/** The outcome of checking one command annotation on a Node. */
export type CommandCheck =
  | { kind: 'absent' }
  | { kind: 'valid'; value: string; issuedAt: number }
  | { kind: 'refused'; value: string; why: string };

/**
 * Checks `annotation` on `node` (the agent's own, named `nodeName` in its own config) against
 * the operator's public key. Never echoes the signature in `why`.
 */
export function checkCommand(
  publicKey: KeyObject | undefined,
  node: NodeFacts,
  nodeName: string,
  annotation: CommandAnnotation,
): CommandCheck {
  const annotations = node.metadata?.annotations ?? {};
  const value = annotations[annotation];
  if (value === undefined) return { kind: 'absent' };
  const text = annotations[signatureAnnotation(annotation)];
  if (text === undefined)
    return { kind: 'refused', value, why: `it has no ${signatureAnnotation(annotation)}` };
  const m = signaturePattern.exec(text);
  if (!m)
    return {
      kind: 'refused',
      value,
      why: `${signatureAnnotation(annotation)} is not a winfleet signature ("v1.<issued at>.<Ed25519 signature>")`,
    };
  if (!publicKey)
    return {
      kind: 'refused',
      value,
      why: `the operator's public key (ConfigMap ${commandKeyConfigMapName}) could not be read`,
    };
  const issuedAt = Number(m[1]);
  const facts: CommandFacts = {
    annotation,
    nodeName,
    nodeUid: node.metadata?.uid ?? '',
    bootId: node.status?.nodeInfo?.bootID ?? '',
    value,
    issuedAt,
  };
  if (!verify(null, message(facts), publicKey, Buffer.from(m[2]!, 'base64url'))) {
    return {
      kind: 'refused',
      value,
      why: `its signature is not the operator's for this node${bootBound.has(annotation) ? ', this Node object and this boot' : ' and this Node object'}`,
    };
  }
  return { kind: 'valid', value, issuedAt };
}

/** Parses the public key PEM of commandKeyConfigMapName, or undefined when it is not Ed25519. */
export function parseCommandPublicKey(pem: string | undefined): KeyObject | undefined {
  if (!pem) return undefined;
  try {
    const key = createPublicKey(pem);
    return key.asymmetricKeyType === 'ed25519' ? key : undefined;
  } catch {
    return undefined;
  }
}
