/**
 * Opening an SSH session to a WindowsHost: its key from the Secret the spec names, its
 * address, and the host key that must match (the one a user chose to trust, else the pinned
 * one; none on first contact). Joining and removal both connect through here.
 */
import * as k8s from '@kubernetes/client-node';
import { trustHostKeyAnnotation, type WindowsHost } from '../api/windows-host.ts';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import { TerminalError } from '../controller/work-queue.ts';
import { SshSession } from './ssh-session.ts';

/** The private key from the host's Secret; a missing Secret or key is the user's to fix. */
export async function sshKey(kc: k8s.KubeConfig, host: WindowsHost): Promise<string> {
  const ref = host.spec.sshKeySecretRef;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let secret: k8s.V1Secret;
  try {
    secret = await core.readNamespacedSecret({
      name: ref.name,
      namespace: host.metadata.namespace!,
    });
  } catch {
    throw new TerminalError(
      `spec.sshKeySecretRef.name: Secret ${host.metadata.namespace}/${ref.name} does not exist; create it with the host's SSH private key (kubectl create secret generic ${ref.name} --from-file=ssh-privatekey=<key file>)`,
    );
  }
  const key = ref.key ?? 'ssh-privatekey';
  const data = secret.data?.[key] ?? secret.data?.['private-key.pem'];
  if (!data) {
    throw new TerminalError(
      `spec.sshKeySecretRef.key: Secret ${host.metadata.namespace}/${ref.name} has no key "${key}" (keys: ${Object.keys(secret.data ?? {}).join(', ') || 'none'}); set spec.sshKeySecretRef.key`,
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
