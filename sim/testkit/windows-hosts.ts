/**
 * Registering simulated hosts with winfleet the way a user would: an SSH key Secret in the
 * operator's namespace and one WindowsHost per host.
 */
import * as k8s from '@kubernetes/client-node';
import { apiVersion } from '../../src/api/group-version.ts';
import type { WindowsHost } from '../../src/api/windows-host.ts';
import { isAlreadyExists } from '../../src/kube/client.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import type { SimulatedHost } from '../hosts/fleet.ts';
import { writeSecret } from './secrets.ts';

export const sshKeySecretName = 'winfleet-ssh-key';

/** Creates (or replaces) the SSH private key Secret. */
export async function writeSshKeySecret(
  kc: k8s.KubeConfig,
  namespace: string,
  privateKey: string,
  name = sshKeySecretName,
): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  try {
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  await writeSecret(kc, namespace, name, { 'ssh-privatekey': privateKey });
}

/** The WindowsHost for a simulated host. */
export function windowsHostFor(
  host: Pick<SimulatedHost, 'name' | 'address' | 'port'>,
  namespace: string,
  extra: Partial<WindowsHost['spec']> = {},
): WindowsHost {
  return {
    apiVersion,
    kind: 'WindowsHost',
    metadata: { name: host.name.toLowerCase(), namespace },
    spec: {
      address: host.address,
      port: host.port,
      username: 'Administrator',
      sshKeySecretRef: { name: sshKeySecretName },
      ...extra,
    },
  };
}

/** Creates WindowsHosts for `hosts`. */
export async function createWindowsHosts(
  kc: k8s.KubeConfig,
  namespace: string,
  hosts: SimulatedHost[],
  extra: Partial<WindowsHost['spec']> = {},
): Promise<WindowsHost[]> {
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const created: WindowsHost[] = [];
  for (const host of hosts)
    created.push(await objects.create(windowsHostFor(host, namespace, extra)));
  return created;
}

/** Lists the WindowsHosts of a namespace. */
export async function listWindowsHosts(
  kc: k8s.KubeConfig,
  namespace: string,
): Promise<WindowsHost[]> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const list = (await custom.listNamespacedCustomObject({
    group: 'winfleet.io',
    version: 'v1alpha1',
    namespace,
    plural: 'windowshosts',
  })) as {
    items: WindowsHost[];
  };
  return list.items;
}

/** True when the host's Ready condition is True. */
export function hostReady(host: WindowsHost): boolean {
  return host.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** The namespace's first WindowsHost once its Node registered (Ready or not). */
export async function firstHostWithNode(
  kc: k8s.KubeConfig,
  namespace: string,
  timeoutMs = 90_000,
): Promise<WindowsHost> {
  return waitFor(
    async () => {
      const [host] = await listWindowsHosts(kc, namespace);
      const registered = host?.status?.conditions?.some(
        (c) => c.type === 'NodeRegistered' && c.status === 'True',
      );
      return registered ? host : undefined;
    },
    { description: 'the host’s Node registered', timeoutMs },
  );
}

/** The approver's decision on a CSR, "Approved: <message>" or "Denied: <message>", once made. */
export async function csrDecision(admin: k8s.CertificatesV1Api, name: string): Promise<string> {
  return waitFor(
    async () => {
      const csr = await admin.readCertificateSigningRequest({ name });
      const c = csr.status?.conditions?.find((x) => x.type === 'Approved' || x.type === 'Denied');
      return c ? `${c.type}: ${c.message}` : undefined;
    },
    { description: `a decision on CSR ${name}`, timeoutMs: 30_000 },
  );
}

/** Waits until the namespace has exactly `count` WindowsHosts, all Ready; returns them. */
export function waitForReadyHosts(
  kc: k8s.KubeConfig,
  namespace: string,
  count: number,
  timeoutMs = 180_000,
): Promise<WindowsHost[]> {
  let last: WindowsHost[] = [];
  return waitFor(
    async () => {
      const list = await listWindowsHosts(kc, namespace);
      last = list;
      return list.length === count && list.every(hostReady) ? list : undefined;
    },
    { description: `all ${count} WindowsHosts Ready`, timeoutMs },
  ).catch((error: Error) => {
    // Say where each host stood, so a join that hangs names its step.
    const where = last.map((h) => {
      const ready = h.status?.conditions?.find((c) => c.type === 'Ready');
      return `${h.metadata.name}: Ready=${ready?.status ?? '-'} ${ready?.reason ?? ''} ${ready?.message ?? ''} lastError=${JSON.stringify(h.status?.lastError ?? null)}`;
    });
    error.message += `\n${where.join('\n')}`;
    throw error;
  });
}

/**
 * Creates a WindowsHost at a non-loopback address no test host answers on: for tests of the
 * API side (pools, status) that must never reach a host.
 */
export async function createUnreachableHost(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<WindowsHost> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  return (await custom.createNamespacedCustomObject({
    group: 'winfleet.io',
    version: 'v1alpha1',
    namespace,
    plural: 'windowshosts',
    body: {
      apiVersion,
      kind: 'WindowsHost',
      metadata: { name, namespace, labels },
      spec: { address: '10.1.42.7', username: 'Administrator', sshKeySecretRef: { name: 'none' } },
    },
  })) as WindowsHost;
}

/** Reads one WindowsHost. */
export async function readWindowsHost(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
): Promise<WindowsHost> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  return (await custom.getNamespacedCustomObject({
    group: 'winfleet.io',
    version: 'v1alpha1',
    namespace,
    plural: 'windowshosts',
    name,
  })) as WindowsHost;
}
