/**
 * Kubeconfig files as the kubelet stand-in reads and writes them on a simulated host: paths
 * inside them are Windows paths on the simulated drive C: (resolved against the kubeconfig's
 * own directory when relative), and the result becomes an API client whose every call is
 * bounded by a timeout and the process's abort signal.
 */
import * as k8s from '@kubernetes/client-node';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import type { SimFileSystem } from './file-system.ts';
import { formatWindowsPath, windowsPathSegments } from './windows-path.ts';

/** Where a kubeconfig points and how it authenticates. */
export interface KubeCredentials {
  server: string;
  caPem: string;
  /** Kept so a kubeconfig derived from this one refers to the CA the same way. */
  caFile?: string;
  token?: string;
  certPem?: string;
  keyPem?: string;
}

interface KubeconfigDocument {
  clusters?: { name: string; cluster: Record<string, string> }[];
  users?: { name: string; user: Record<string, string> }[];
  contexts?: { name: string; context: { cluster: string; user: string } }[];
  'current-context'?: string;
}

/** The PEM blocks of `type` ("CERTIFICATE", "PRIVATE KEY", ...) in a text. */
export function pemBlocks(text: string, type: RegExp): string[] {
  const blocks: string[] = [];
  for (const match of text.matchAll(/-----BEGIN ([A-Z ]+)-----[\s\S]*?-----END \1-----/g)) {
    if (type.test(match[1]!)) blocks.push(`${match[0]}\n`);
  }
  return blocks;
}

/** Reads a kubeconfig from the simulated file system; throws naming what is missing. */
export async function readKubeconfig(fs: SimFileSystem, path: string): Promise<KubeCredentials> {
  const text = (await fs.readFile(path)).toString('utf8');
  let document: KubeconfigDocument;
  try {
    document = (parseYaml(text) ?? {}) as KubeconfigDocument;
  } catch (error) {
    throw new Error(`invalid kubeconfig ${path}: ${(error as Error).message}`);
  }
  const contextName = document['current-context'] ?? document.contexts?.[0]?.name;
  const context = document.contexts?.find((c) => c.name === contextName)?.context;
  const cluster = document.clusters?.find((c) => c.name === context?.cluster)?.cluster;
  const user = document.users?.find((u) => u.name === context?.user)?.user;
  if (!context || !cluster || !user) {
    throw new Error(
      `invalid kubeconfig ${path}: its current context "${contextName ?? ''}" does not name a cluster and a user`,
    );
  }
  if (!cluster.server) throw new Error(`invalid kubeconfig ${path}: the cluster has no server`);
  const directory = formatWindowsPath(windowsPathSegments(path).slice(0, -1));
  const fileOrData = async (fileKey: string, dataKey: string, source: Record<string, string>) => {
    if (source[dataKey]) return Buffer.from(source[dataKey], 'base64').toString('utf8');
    if (source[fileKey]) {
      const file = formatWindowsPath(windowsPathSegments(source[fileKey], directory));
      return (await fs.readFile(file)).toString('utf8');
    }
    return undefined;
  };
  const caPem = await fileOrData('certificate-authority', 'certificate-authority-data', cluster);
  if (!caPem) {
    throw new Error(`invalid kubeconfig ${path}: the cluster has no certificate authority`);
  }
  const credentials: KubeCredentials = { server: cluster.server, caPem };
  if (cluster['certificate-authority']) credentials.caFile = cluster['certificate-authority'];
  if (user.token) credentials.token = user.token;
  const certText = await fileOrData('client-certificate', 'client-certificate-data', user);
  const keyText = await fileOrData('client-key', 'client-key-data', user);
  if (certText) credentials.certPem = pemBlocks(certText, /^CERTIFICATE$/).join('');
  if (keyText) credentials.keyPem = pemBlocks(keyText, /PRIVATE KEY$/)[0];
  if (!credentials.token && !(credentials.certPem && credentials.keyPem)) {
    throw new Error(
      `invalid kubeconfig ${path}: the user has neither a token nor a client certificate and key`,
    );
  }
  return credentials;
}

/**
 * The kubeconfig the kubelet writes after its TLS bootstrap: the bootstrap kubeconfig's
 * cluster, and the client certificate file for both certificate and key.
 */
export function nodeKubeconfig(cluster: KubeCredentials, certificateFile: string): string {
  const clusterEntry: Record<string, string> = { server: cluster.server };
  if (cluster.caFile) clusterEntry['certificate-authority'] = cluster.caFile;
  else clusterEntry['certificate-authority-data'] = Buffer.from(cluster.caPem).toString('base64');
  return stringifyYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'default-cluster', cluster: clusterEntry }],
    contexts: [
      {
        name: 'default-context',
        context: { cluster: 'default-cluster', namespace: 'default', user: 'default-auth' },
      },
    ],
    'current-context': 'default-context',
    preferences: {},
    users: [
      {
        name: 'default-auth',
        user: { 'client-certificate': certificateFile, 'client-key': certificateFile },
      },
    ],
  });
}

/** A client-node KubeConfig for the credentials. */
export function kubeConfigFor(credentials: KubeCredentials): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  const base64 = (text: string) => Buffer.from(text).toString('base64');
  const user: Record<string, string> = { name: 'kubelet' };
  if (credentials.token) user.token = credentials.token;
  if (credentials.certPem) user.certData = base64(credentials.certPem);
  if (credentials.keyPem) user.keyData = base64(credentials.keyPem);
  kc.loadFromOptions({
    clusters: [{ name: 'cluster', server: credentials.server, caData: base64(credentials.caPem) }],
    users: [user],
    contexts: [{ name: 'kubelet', cluster: 'cluster', user: 'kubelet' }],
    currentContext: 'kubelet',
  });
  return kc;
}

/**
 * Per-call options for client-node: abort after `timeoutMs` or when `signal` fires, and send
 * a merge patch when `mergePatch`.
 */
export function callOptions(
  signal: AbortSignal | undefined,
  timeoutMs: number,
  mergePatch: boolean | 'strategic' = false,
): k8s.ConfigurationOptions {
  const bound = signal
    ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
    : AbortSignal.timeout(timeoutMs);
  const middleware: k8s.ObservableMiddleware = {
    pre: (context) => {
      context.setSignal(bound);
      if (mergePatch)
        context.setHeaderParam(
          'Content-Type',
          mergePatch === 'strategic'
            ? k8s.PatchStrategy.StrategicMergePatch
            : k8s.PatchStrategy.MergePatch,
        );
      return new k8s.Observable(Promise.resolve(context));
    },
    post: (context) => new k8s.Observable(Promise.resolve(context)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}
