/**
 * The agent's Kubernetes client with node-scoped credentials: the kubeconfig the kubelet
 * wrote after its TLS bootstrap (C:\k\kubeconfig), read through HostOS, with every file it
 * references inlined. The agent never holds admin or operator credentials. The agent keeps one
 * client (and its connection pool) per host while that kubeconfig reads the same; a renewed
 * certificate gets a new one.
 */
import type * as k8s from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { WinfleetError } from '../errors/catalog.ts';
import { userAgents } from '../kube/user-agent.ts';
import { WinfleetKubeConfig } from '../kube/winfleet-kube-config.ts';
import { paths } from './agent-config.ts';
import type { HostOS } from './host-os.ts';

interface RawKubeconfig {
  clusters?: { cluster?: Record<string, string> }[];
  users?: { user?: Record<string, string> }[];
}

/** The client built from each host's kubeconfig, with the text it was built from. */
const clients = new WeakMap<HostOS, { text: string; kc: WinfleetKubeConfig }>();

/** The node's client, or undefined while the kubelet has not bootstrapped yet. */
export async function nodeKubeConfig(host: HostOS): Promise<k8s.KubeConfig | undefined> {
  const text = await host.readFile(paths.kubeconfig);
  if (!text) return undefined;
  const raw = parse(text.toString('utf8')) as RawKubeconfig;
  const inline = async (
    entry: Record<string, string> | undefined,
    fileKey: string,
    dataKey: string,
  ) => {
    const file = entry?.[fileKey];
    if (!entry || !file) return;
    const data = await host.readFile(file);
    if (!data) {
      throw new WinfleetError(
        'WF_AGENT_FILE_MISSING',
        `${paths.kubeconfig} refers to ${file}, which does not exist; the node has not finished joining or the file was removed: check the kubelet log`,
      );
    }
    entry[dataKey] = data.toString('base64');
    delete entry[fileKey];
  };
  for (const c of raw.clusters ?? [])
    await inline(c.cluster, 'certificate-authority', 'certificate-authority-data');
  for (const u of raw.users ?? []) {
    await inline(u.user, 'client-certificate', 'client-certificate-data');
    await inline(u.user, 'client-key', 'client-key-data');
  }
  const inlined = stringify(raw);
  const known = clients.get(host);
  if (known?.text === inlined) return known.kc;
  const kc = new WinfleetKubeConfig({ userAgent: userAgents.agent });
  kc.loadFromString(inlined);
  clients.set(host, { text: inlined, kc });
  // Requests and watches still open on the old client finish on its pool, which then closes.
  void known?.kc.close();
  return kc;
}
