/**
 * kubectl's connection flags for every command that talks to a cluster: --kubeconfig,
 * --context, -n/--namespace and -A/--all-namespaces, read the way kubectl reads them
 * (KUBECONFIG when --kubeconfig is absent, the context's namespace when -n is absent).
 * WindowsHosts live in the operator's namespace, so a context without a namespace means
 * winfleet-system rather than kubectl's "default".
 */

import type * as k8s from '@kubernetes/client-node';
import { type Command, InvalidArgumentError } from 'commander';
import { defaultOperatorNamespace } from '../api/operator-namespace.ts';
import { userAgents } from '../kube/user-agent.ts';
import { WinfleetKubeConfig } from '../kube/winfleet-kube-config.ts';
import { cliExit, ExitCode } from './exit-codes.ts';

/** The namespace WindowsHosts and pools live in when nothing says otherwise. */
export const defaultHostNamespace = defaultOperatorNamespace;

export interface KubeFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  allNamespaces?: boolean;
}

/** A namespace name (DNS-1123 label), as -n and --probe-namespace take it. */
export function namespaceName(value: string): string {
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(value))
    throw new InvalidArgumentError(
      `"${value}" is not a namespace name (lower-case letters, digits and '-', at most 63)`,
    );
  return value;
}

/** Adds the connection flags; `namespaced` adds -n and -A. */
export function withKubeFlags(command: Command, namespaced = true): Command {
  command
    .option('--kubeconfig <file>', 'kubeconfig file (default: $KUBECONFIG or ~/.kube/config)')
    .option('--context <name>', 'kubeconfig context to use (default: the current context)');
  if (namespaced)
    command
      .option(
        '-n, --namespace <name>',
        `namespace (default: the context's, else ${defaultHostNamespace})`,
        namespaceName,
      )
      .option('-A, --all-namespaces', 'every namespace');
  return command;
}

/** The kubeconfig the flags name, on the context they name. */
export function kubeConfigFrom(flags: KubeFlags): k8s.KubeConfig {
  const kc = new WinfleetKubeConfig({ userAgent: userAgents.cli });
  try {
    if (flags.kubeconfig) kc.loadFromFile(flags.kubeconfig);
    else kc.loadFromDefault();
  } catch (error) {
    const source = flags.kubeconfig
      ? `--kubeconfig: cannot read ${flags.kubeconfig}`
      : process.env.KUBECONFIG
        ? `$KUBECONFIG: cannot read ${process.env.KUBECONFIG}`
        : 'cannot read ~/.kube/config';
    throw cliExit(
      ExitCode.usage,
      `${source}: ${(error as Error).message}; pass --kubeconfig <file> or fix the file`,
    );
  }
  if (flags.context) {
    if (!kc.getContextObject(flags.context))
      throw cliExit(
        ExitCode.usage,
        `--context: no context "${flags.context}" in the kubeconfig (it has: ${kc.contexts.map((c) => c.name).join(', ') || 'none'})`,
      );
    kc.setCurrentContext(flags.context);
  }
  if (!kc.getCurrentCluster())
    throw cliExit(
      ExitCode.usage,
      'no cluster to talk to: pass --kubeconfig, set KUBECONFIG, or select a context with --context',
    );
  return kc;
}

/** The namespace to work in; undefined for -A. */
export function namespaceFrom(flags: KubeFlags, kc: k8s.KubeConfig): string | undefined {
  if (flags.allNamespaces) {
    if (flags.namespace)
      throw cliExit(ExitCode.usage, '-n and -A cannot be used together; pick one');
    return undefined;
  }
  if (flags.namespace) return flags.namespace;
  const context = kc.getContextObject(kc.getCurrentContext());
  return context?.namespace || defaultHostNamespace;
}
