/**
 * The one watch a simulated kubelet keeps on the pods bound to its node (as the real kubelet's
 * pod config source does: `spec.nodeName=<node>`, with the node's own credentials). Its pod
 * sandboxes (pod-sandboxes.ts) and container log files (container-logs.ts) both read it.
 */
import type * as k8s from '@kubernetes/client-node';
import { Informer } from '../../src/controller-runtime/informer.ts';

export function nodePodInformer(options: {
  kc: k8s.KubeConfig;
  nodeName: string;
  signal: AbortSignal;
  log: (severity: 'I' | 'W' | 'E', message: string) => void;
}): Informer<k8s.V1Pod> {
  const informer = new Informer<k8s.V1Pod>(options.kc, {
    resource: { apiVersion: 'v1', kind: 'Pod', plural: 'pods' },
    fieldSelector: `spec.nodeName=${options.nodeName}`,
    maxBackoffMs: 5000,
    onError: (error) => {
      if (!options.signal.aborted) {
        options.log(
          'W',
          `Cannot watch the pods of node "${options.nodeName}": ${(error as Error).message}`,
        );
      }
    },
  });
  options.signal.addEventListener('abort', () => informer.stop(), { once: true });
  return informer;
}
