/** Kubeconfig files for the clusters the launcher starts. */
import { stringify } from 'yaml';

/** Where a kubeconfig points and who it authenticates as. */
export interface KubeconfigParams {
  server: string;
  caFile: string;
  user: string;
  clientCertFile?: string;
  clientKeyFile?: string;
  token?: string;
  contextName?: string;
}

/** Renders a kubeconfig with one cluster, one user and one context, as YAML. */
export function renderKubeconfig(params: KubeconfigParams): string {
  const context = params.contextName ?? 'winfleet';
  const user: Record<string, string> = {};
  if (params.clientCertFile) user['client-certificate'] = params.clientCertFile;
  if (params.clientKeyFile) user['client-key'] = params.clientKeyFile;
  if (params.token) user.token = params.token;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: context, cluster: { server: params.server, 'certificate-authority': params.caFile } },
    ],
    users: [{ name: params.user, user }],
    contexts: [{ name: context, context: { cluster: context, user: params.user } }],
    'current-context': context,
  });
}
