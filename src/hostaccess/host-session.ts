/**
 * Opening a session to a WindowsHost: its key from the Secret the spec names, its address,
 * and the host key that must match (the one a user chose to trust, else the pinned one; none
 * on first contact). Joining, upgrading and removal all connect through here.
 */
import * as k8s from '@kubernetes/client-node';
import { sshHostSpec, trustHostKeyAnnotation, type WindowsHost } from '../api/windows-host.ts';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import { errorCode, WinfleetError } from '../errors/catalog.ts';
import { isNotFound } from '../kube/client.ts';
import { RemoteHost } from './remote-host.ts';
import { SshSession } from './ssh-session.ts';

/** The key a Secret holds when spec.sshKeySecretRef.key is not set. */
const defaultSecretKey = 'ssh-privatekey';
/** The key WMCO's cloud-private-key Secret uses, accepted as a fallback. */
const wmcoSecretKey = 'private-key.pem';

/** The private key from the host's Secret, and the Secret's key it came from. */
export interface SshKey {
  privateKey: string;
  /** "namespace/name" of the Secret. */
  secret: string;
  /** The data key the private key was read from. */
  key: string;
}

/** The kubectl command that (re)writes the host's key Secret from a key file. */
function secretCommand(host: WindowsHost, key: string): string {
  const name = sshHostSpec(host).sshKeySecretRef.name;
  return `kubectl create secret generic ${name} -n ${host.metadata.namespace} --from-file=${key}=<key file>`;
}

/**
 * The private key from the host's Secret. A missing Secret (WF_SSH_SECRET_MISSING) or key
 * (WF_SSH_KEY_MISSING) is the user's to fix; any other API error passes through to be retried.
 */
export async function sshKey(kc: k8s.KubeConfig, host: WindowsHost): Promise<SshKey> {
  const ref = sshHostSpec(host).sshKeySecretRef;
  const namespace = host.metadata.namespace!;
  const wanted = ref.key ?? defaultSecretKey;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let secret: k8s.V1Secret;
  try {
    secret = await core.readNamespacedSecret({ name: ref.name, namespace });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    throw new WinfleetError(
      'WF_SSH_SECRET_MISSING',
      `spec.sshKeySecretRef.name: Secret ${namespace}/${ref.name} does not exist; create it with the host's SSH private key: ${secretCommand(host, wanted)}`,
      { cause: error },
    );
  }
  const key =
    secret.data?.[wanted] === undefined && secret.data?.[wmcoSecretKey] ? wmcoSecretKey : wanted;
  const data = secret.data?.[key];
  if (!data) {
    throw new WinfleetError(
      'WF_SSH_KEY_MISSING',
      `spec.sshKeySecretRef.key: Secret ${namespace}/${ref.name} has no key "${wanted}" (keys: ${Object.keys(secret.data ?? {}).join(', ') || 'none'}); set spec.sshKeySecretRef.key, or rewrite the Secret: ${secretCommand(host, wanted)} --dry-run=client -o yaml | kubectl apply -f -`,
    );
  }
  return {
    privateKey: Buffer.from(data, 'base64').toString('utf8'),
    secret: `${namespace}/${ref.name}`,
    key,
  };
}

/**
 * A connect failure with what only this layer knows added: the Secret and key a bad key came
 * from, the user name a refused key was offered for, what to check for an unreachable host.
 */
function explainConnectFailure(error: unknown, host: WindowsHost, key: SshKey): unknown {
  const inner = error as Error;
  const detail = `${inner.message[0]?.toLowerCase() ?? ''}${inner.message.slice(1)}`;
  const keyRef = `key "${key.key}" of Secret ${key.secret}`;
  const rewrite = `${secretCommand(host, key.key)} --dry-run=client -o yaml | kubectl apply -f -`;
  let message: string;
  switch (errorCode(error)) {
    case 'WF_SSH_KEY_INVALID':
      message = `spec.sshKeySecretRef: ${keyRef} holds no usable SSH private key: ${detail}; to replace it: ${rewrite}`;
      break;
    case 'WF_SSH_AUTH_REFUSED':
      message = `${inner.message}; check spec.username ("${host.spec.username}") is the account the key is authorized for, and that the public half of ${keyRef} is in that account's authorized keys (C:\\ProgramData\\ssh\\administrators_authorized_keys for an administrator)`;
      break;
    case 'WF_SSH_UNREACHABLE':
      message = `${inner.message}; check spec.address and spec.port, that sshd runs on the host and that its firewall lets the operator in; winfleet keeps trying`;
      break;
    case 'WF_SSH_HOST_KEY_CHANGED':
      if (!host.spec.hostKey) return error;
      message = `${inner.message.replace(/; if the host was rebuilt on purpose.*$/, '')}; spec.hostKey pins ${host.spec.hostKey}: if the host was rebuilt on purpose, set spec.hostKey to its new key (winfleet.io/trust-host-key does not override spec.hostKey)`;
      break;
    default:
      return error;
  }
  const { code, details } = error as WinfleetError;
  return new WinfleetError(code, message, { cause: error, details });
}

/**
 * The host key a session must present: spec.hostKey when an admin pinned it (nothing overrides
 * it: a rebuilt host gets a new spec.hostKey), else the one a user chose to trust, else the one
 * pinned on first contact; undefined on first contact without a pin (trust on first use).
 * @package
 */
export function expectedHostKey(host: Pick<WindowsHost, 'spec' | 'metadata' | 'status'>) {
  return (
    host.spec.hostKey ??
    host.metadata.annotations?.[trustHostKeyAnnotation] ??
    host.status?.hostKeyFingerprint
  );
}

/** Connects to the host, checking its key against the trusted or pinned fingerprint. */
export async function openHostSession(
  kc: k8s.KubeConfig,
  config: WinfleetConfig,
  host: WindowsHost,
): Promise<SshSession> {
  const spec = sshHostSpec(host);
  const key = await sshKey(kc, host);
  try {
    return await SshSession.connect({
      host: spec.address,
      port: spec.port ?? 22,
      username: spec.username,
      privateKey: key.privateKey,
      pinnedFingerprint: expectedHostKey(host),
      connectTimeoutMs: config.hosts.sshConnectTimeoutSeconds * 1000,
    });
  } catch (error) {
    throw explainConnectFailure(error, host, key);
  }
}

/** Connects and wraps the session for catalog scripts, file sync and the agent; close it. */
export async function openRemoteHost(
  kc: k8s.KubeConfig,
  config: WinfleetConfig,
  host: WindowsHost,
): Promise<RemoteHost> {
  const session = await openHostSession(kc, config, host);
  return new RemoteHost(session, config.hosts.commandTimeoutSeconds * 1000);
}
