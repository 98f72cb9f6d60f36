/**
 * Opening a session to a WindowsHost: its key from the Secret the spec names, its address,
 * and the host key that must match (the one a user chose to trust, else the pinned one; none
 * on first contact). Joining, upgrading and removal all connect through here.
 */
import * as k8s from '@kubernetes/client-node';
import { trustHostKeyAnnotation, type WindowsHost } from '../api/windows-host.ts';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import { WinfleetError } from '../errors/catalog.ts';
import { isNotFound } from '../kube/client.ts';
import { RemoteHost } from './remote-host.ts';
import { SshSession } from './ssh-session.ts';

/** The key a Secret holds when spec.sshKeySecretRef.key is not set. */
const defaultSecretKey = 'ssh-privatekey';
/** The key WMCO's cloud-private-key Secret uses, accepted as a fallback. */
const wmcoSecretKey = 'private-key.pem';

/**
 * The private key from the host's Secret. A missing Secret (WF_SSH_SECRET_MISSING) or key
 * (WF_SSH_KEY_MISSING) is the user's to fix; any other API error passes through to be retried.
 */
export async function sshKey(kc: k8s.KubeConfig, host: WindowsHost): Promise<string> {
  const ref = host.spec.sshKeySecretRef;
  const namespace = host.metadata.namespace!;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let secret: k8s.V1Secret;
  try {
    secret = await core.readNamespacedSecret({ name: ref.name, namespace });
  } catch (error) {
    if (!isNotFound(error)) throw error;
    throw new WinfleetError(
      'WF_SSH_SECRET_MISSING',
      `spec.sshKeySecretRef.name: Secret ${namespace}/${ref.name} does not exist; create it with the host's SSH private key (kubectl create secret generic ${ref.name} --from-file=${defaultSecretKey}=<key file>)`,
      { cause: error },
    );
  }
  const key = ref.key ?? defaultSecretKey;
  const data = secret.data?.[key] ?? secret.data?.[wmcoSecretKey];
  if (!data) {
    throw new WinfleetError(
      'WF_SSH_KEY_MISSING',
      `spec.sshKeySecretRef.key: Secret ${namespace}/${ref.name} has no key "${key}" (keys: ${Object.keys(secret.data ?? {}).join(', ') || 'none'}); set spec.sshKeySecretRef.key`,
    );
  }
  return Buffer.from(data, 'base64').toString('utf8');
}

/** Connects to the host, checking its key against the trusted or pinned fingerprint. */
export async function openHostSession(
  kc: k8s.KubeConfig,
  config: WinfleetConfig,
  host: WindowsHost,
): Promise<SshSession> {
  return SshSession.connect({
    host: host.spec.address,
    port: host.spec.port ?? 22,
    username: host.spec.username,
    privateKey: await sshKey(kc, host),
    pinnedFingerprint:
      host.metadata.annotations?.[trustHostKeyAnnotation] ?? host.status?.hostKeyFingerprint,
    connectTimeoutMs: config.hosts.sshConnectTimeoutSeconds * 1000,
  });
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
