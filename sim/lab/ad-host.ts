/**
 * The lab's Active Directory row (issue 16, item 4): a fake domain the lab's simulated hosts
 * reach (sim/hosts/active-directory.ts), accepting one account whose password is generated at
 * random per run and written only into the Secret the pool names (never printed or logged); a
 * WindowsNodePool `corp` with spec.activeDirectory, its Secret opting in to it; and one SSH host
 * in it, its host key pinned in spec.hostKey, whose 20-character
 * hostname is too long for a NetBIOS name, so the operator renames it, joins it to the domain
 * and registers its Node under the new name, which the agent labels gMSA-ready.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { domainJoinPoolsAnnotation } from '../../src/api/active-directory.ts';
import { gmsaReadyLabel } from '../../src/api/node-annotations.ts';
import { isNotFound } from '../../src/kube/client.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { SimDomain } from '../hosts/active-directory.ts';
import { type SimulatedHost, startSimulatedHosts } from '../hosts/fleet.ts';
import type { TestKey } from '../hosts/ssh-test-client.ts';
import { createPool, readPool } from '../testkit/pools.ts';
import { hostReady, listWindowsHosts, windowsHostFor } from '../testkit/windows-hosts.ts';

export const adDomainName = 'corp.winfleet.lab';
export const adPoolName = 'corp';
export const adOrganizationalUnit = 'OU=Kubernetes,DC=corp,DC=winfleet,DC=lab';
export const adSecretName = 'ad-join';
export const adUsername = 'svc-k8s-join';
/** 20 characters: more than a NetBIOS name's 15, so the join renames it. */
export const adHostLongName = 'winfleet-corp-host-1';
/** After the SSH hosts (127.0.0.10 up) and the pull-joined host (127.0.0.20). */
const adHostAddress = '127.0.0.30';

/** The pool's hosts carry this label (the lab pool's key, another value). */
export const adPoolLabel = { 'winfleet.io/lab-pool': adPoolName };

interface Step {
  dir: string;
  say: (line: string) => void;
  since: () => string;
  stops: (() => Promise<void>)[];
}

/**
 * The fake domain, with a password made for this run: the caller passes it to startAdHost,
 * which writes it into the Secret and nowhere else.
 */
export function createLabDomain(): { domain: SimDomain; password: string } {
  const password = `Wf1-${randomBytes(18).toString('base64url')}`;
  return {
    domain: new SimDomain({ name: adDomainName, username: adUsername, password }),
    password,
  };
}

export interface LabAdHost {
  host: SimulatedHost;
  domain: SimDomain;
  /** The hostname (and node name) the join gave it. */
  nodeName: string;
}

/**
 * The Secret (its password read from the domain, the one place it goes), the pool, and the
 * host's machine; resolves once the operator has observed the pool, so the host is joined by
 * it from its first pass.
 */
export async function startAdHost(
  { dir, say, since, stops }: Step,
  kc: k8s.KubeConfig,
  namespace: string,
  key: TestKey,
  domain: SimDomain,
  password: string,
): Promise<SimulatedHost> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  // The Secret opts in to the pool that uses it (winfleet.io/domain-join-pools).
  const body = {
    metadata: {
      name: adSecretName,
      namespace,
      annotations: { [domainJoinPoolsAnnotation]: adPoolName },
    },
    stringData: { username: adUsername, password },
  };
  await core.replaceNamespacedSecret({ name: adSecretName, namespace, body }).catch((error) => {
    if (!isNotFound(error)) throw error;
    return core.createNamespacedSecret({ namespace, body });
  });
  await createPool(kc, namespace, adPoolName, {
    selector: { matchLabels: adPoolLabel },
    activeDirectory: {
      domain: adDomainName,
      organizationalUnit: adOrganizationalUnit,
      credentialsSecretRef: { name: adSecretName },
    },
  });
  const hosts = await startSimulatedHosts({
    count: 1,
    releases: ['2022'],
    names: [adHostLongName],
    baseAddress: adHostAddress,
    authorizedKeys: [key.publicKey],
    dir: join(dir, 'ad-hosts'),
    activeDirectory: domain,
  });
  stops.push(() => hosts.stop());
  const host = hosts.hosts[0]!;
  await waitFor(
    async () => (await readPool(kc, namespace, adPoolName)).status?.observedGeneration,
    { description: `WindowsNodePool ${adPoolName} observed by the operator`, timeoutMs: 60_000 },
  );
  say(
    `WindowsNodePool ${adPoolName}: Active Directory domain ${adDomainName} (OU ${adOrganizationalUnit}), account ${adUsername} in Secret ${namespace}/${adSecretName} (its password made for this run, written nowhere else) (${since()})`,
  );
  say(
    `simulated Windows Server ${host.release} host ${host.name} (${host.name.length} characters) at ${host.address}:${host.port} (ssh), reaching the fake domain ${adDomainName}`,
  );
  return host;
}

/**
 * Creates the host's WindowsHost in the pool and waits until it is Ready, domain-joined in the
 * simulation and labelled gMSA-ready; says so with its new name.
 */
export async function joinAdHost(
  { say, since }: Step,
  kc: k8s.KubeConfig,
  namespace: string,
  host: SimulatedHost,
  domain: SimDomain,
): Promise<LabAdHost> {
  // The admin pins the host's key before first contact: only then does it get credentials.
  const object = windowsHostFor(host, namespace, { hostKey: host.hostKeyFingerprint });
  object.metadata.labels = adPoolLabel;
  await k8s.KubernetesObjectApi.makeApiClient(kc).create(object);
  say(`created WindowsHost ${object.metadata.name} in WindowsNodePool ${adPoolName}; joining…`);
  const name = object.metadata.name;
  let conditions = '';
  await waitFor(
    async () => {
      const found = (await listWindowsHosts(kc, namespace)).find((h) => h.metadata.name === name);
      conditions = JSON.stringify(found?.status?.conditions ?? []);
      return found && hostReady(found);
    },
    { description: `WindowsHost ${name} Ready`, timeoutMs: 240_000, intervalMs: 500 },
  ).catch((error: Error) => {
    throw new Error(`${error.message}; conditions: ${conditions}`);
  });
  const nodeName = host.machine.hostname;
  const account = domain.computer(nodeName);
  if (host.machine.domain !== adDomainName || !account) {
    throw new Error(`${name} is Ready but not in ${adDomainName} (computer ${nodeName})`);
  }
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await waitFor(
    async () =>
      (await core.readNode({ name: nodeName })).metadata?.labels?.[gmsaReadyLabel] === 'true',
    { description: `Node ${nodeName} labelled ${gmsaReadyLabel}=true`, timeoutMs: 60_000 },
  );
  say(
    `${host.name} joined domain ${adDomainName} renamed ${nodeName}: computer account ${account.name} in ${account.organizationalUnit ?? 'CN=Computers'}, Node ${nodeName} Ready and ${gmsaReadyLabel}=true (${since()})`,
  );
  return { host, domain, nodeName };
}
