/**
 * The operator's side of signed node commands (src/api/node-commands.ts): its Ed25519 key,
 * kept in the Secret commandSigningSecretName of its namespace (made once, by whichever
 * replica gets there first), its public key published in the ConfigMap
 * commandKeyConfigMapName for the agents, and the Node patches that set or remove a command
 * with its signature.
 *
 * The signer belongs to the operator's API client: startOperator registers it on its
 * KubeConfig, and every controller that gives a command finds it there (commandSigner).
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
} from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { installUpdatesAnnotation } from '../api/node-annotations.ts';
import {
  type CommandAnnotation,
  checkCommand,
  commandKeyConfigMapName,
  commandKeyDataKey,
  commandSigningSecretName,
  installLifetimeSeconds,
  signatureAnnotation,
  signatureIssuedAt,
  signCommand,
} from '../api/node-commands.ts';
import { WinfleetError } from '../errors/catalog.ts';
import { isAlreadyExists, isNotFound } from '../kube/client.ts';

export class CommandSigner {
  readonly #privateKey: KeyObject;
  readonly #publicKey: KeyObject;
  readonly #now: () => number;

  constructor(privateKey: KeyObject, now: () => number = Date.now) {
    this.#privateKey = privateKey;
    this.#publicKey = createPublicKey(privateKey);
    this.#now = now;
  }

  /** The public key, SPKI PEM. */
  publicKeyPem(): string {
    return this.#publicKey.export({ type: 'spki', format: 'pem' }).toString();
  }

  /**
   * Whether `node` carries `annotation` = `value` (or neither, for undefined) with a signature
   * of this key that holds for the Node as it is now, and — for an install of updates — that
   * is less than half its lifetime old.
   */
  holds(node: k8s.V1Node, annotation: CommandAnnotation, value: string | undefined): boolean {
    const annotations = node.metadata?.annotations ?? {};
    if (value === undefined)
      return (
        annotations[annotation] === undefined &&
        annotations[signatureAnnotation(annotation)] === undefined
      );
    const check = checkCommand(this.#publicKey, node, node.metadata?.name ?? '', annotation);
    if (check.kind !== 'valid' || check.value !== value) return false;
    if (annotation !== installUpdatesAnnotation) return true;
    const issuedAt = signatureIssuedAt(annotations[signatureAnnotation(annotation)]) ?? 0;
    return this.#seconds() - issuedAt < installLifetimeSeconds / 2;
  }

  /**
   * The annotations of a merge patch that sets `annotation` to `value`, signed for `node` as
   * the operator sees it (its name, uid and boot id), or removes both for null.
   */
  annotations(
    node: k8s.V1Node,
    annotation: CommandAnnotation,
    value: string | null,
  ): Record<string, string | null> {
    if (value === null) return { [annotation]: null, [signatureAnnotation(annotation)]: null };
    const signature = signCommand(this.#privateKey, {
      annotation,
      nodeName: node.metadata?.name ?? '',
      nodeUid: node.metadata?.uid ?? '',
      bootId: node.status?.nodeInfo?.bootID ?? '',
      value,
      issuedAt: this.#seconds(),
    });
    return { [annotation]: value, [signatureAnnotation(annotation)]: signature };
  }

  #seconds(): number {
    return Math.floor(this.#now() / 1000);
  }
}

const signers = new WeakMap<k8s.KubeConfig, CommandSigner>();

/** Registers the operator's signer on its API client. */
export function registerCommandSigner(kc: k8s.KubeConfig, signer: CommandSigner): void {
  signers.set(kc, signer);
}

/** The signer startOperator registered on `kc`. */
export function commandSigner(kc: k8s.KubeConfig): CommandSigner {
  const signer = signers.get(kc);
  if (!signer) {
    throw new WinfleetError(
      'WF_INVARIANT',
      'No node command signer is registered on this API client: startOperator registers one before it starts the controllers',
    );
  }
  return signer;
}

/**
 * Reads the operator's key from its Secret, making it first if there is none, publishes the
 * public key in its ConfigMap, and registers the signer on `kc`.
 */
export async function ensureCommandSigner(
  kc: k8s.KubeConfig,
  namespace: string,
): Promise<CommandSigner> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const signer = new CommandSigner(await signingKey(core, namespace));
  const pem = signer.publicKeyPem();
  const body: k8s.V1ConfigMap = {
    metadata: {
      name: commandKeyConfigMapName,
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'winfleet' },
    },
    data: { [commandKeyDataKey]: pem },
  };
  try {
    const current = await core.readNamespacedConfigMap({
      name: commandKeyConfigMapName,
      namespace,
    });
    if (current.data?.[commandKeyDataKey] !== pem) {
      await core.replaceNamespacedConfigMap({
        name: commandKeyConfigMapName,
        namespace,
        body: {
          ...body,
          metadata: { ...body.metadata, resourceVersion: current.metadata?.resourceVersion },
        },
      });
    }
  } catch (error) {
    if (!isNotFound(error)) throw error;
    await core.createNamespacedConfigMap({ namespace, body });
  }
  registerCommandSigner(kc, signer);
  return signer;
}

async function signingKey(core: k8s.CoreV1Api, namespace: string): Promise<KeyObject> {
  const read = async () => {
    const secret = await core.readNamespacedSecret({ name: commandSigningSecretName, namespace });
    const data = secret.data?.[commandKeyDataKey];
    const key = data ? createPrivateKey(Buffer.from(data, 'base64').toString('utf8')) : undefined;
    if (key?.asymmetricKeyType !== 'ed25519') {
      throw new WinfleetError(
        'WF_INVARIANT',
        `Secret ${namespace}/${commandSigningSecretName} has no Ed25519 private key under ${commandKeyDataKey}: delete the Secret and restart the operator, which makes a new key (commands signed with the old one are signed again)`,
      );
    }
    return key;
  };
  try {
    return await read();
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  const { privateKey } = generateKeyPairSync('ed25519');
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  try {
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: {
          name: commandSigningSecretName,
          namespace,
          labels: { 'app.kubernetes.io/managed-by': 'winfleet' },
        },
        type: 'Opaque',
        data: { [commandKeyDataKey]: Buffer.from(pem).toString('base64') },
      },
    });
    return privateKey;
  } catch (error) {
    // Another replica made it first: its key is the one.
    if (!isAlreadyExists(error)) throw error;
    return read();
  }
}
