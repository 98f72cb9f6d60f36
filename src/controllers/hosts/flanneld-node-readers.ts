/**
 * What flanneld needs on a flannel node (flannel-vxlan, flannel-host-gw) besides the node's own credentials: reading
 * every Node (its kube subnet manager lists and watches them for the other nodes' leases).
 * Since Kubernetes 1.32 the Node authorizer lets a node read only its own Node object
 * ("node 'x' cannot read all nodes, only its own Node object"), so flanneld with the node's
 * kubeconfig would never see another lease. Its writes stay the node's: it patches only its own
 * Node's annotations, which the Node authorizer and NodeRestriction already confine.
 *
 * The ClusterRole `winfleet:flanneld-node-reader` (get, list, watch nodes: nothing else) is
 * bound by the ClusterRoleBinding of the same name to the users `system:node:<name>` of the
 * nodes winfleet itself joined — a WindowsHost's status.nodeName (SSH) or spec.nodeName (Pull),
 * both written by the operator or an administrator, never by a node — and only while the
 * nodes' network is a flannel mode (flanneld runs) or ovn-hybrid (hybrid-overlay-node, which lists
 * and watches every Node for the other nodes' subnets, node_windows.go initSelf and AddNode, with
 * the same credentials). A Linux node, or a node that labels itself, gains nothing.
 * On a winfleet host the grant adds nothing its own kube-proxy credential (system:node-proxier,
 * which reads all Nodes) does not already hold.
 *
 * The ClusterRole is the chart's (or the operator's without it, --no-cluster-bindings unset);
 * the binding's subjects change with the fleet, so the operator always applies it (the chart
 * lets it create and patch only that name).
 */
import type * as k8s from '@kubernetes/client-node';
import { isPullHost, type WindowsHost } from '../../api/windows-host.ts';
import { Controller, everythingKey } from '../../controller-runtime/controller.ts';
import type { Informer } from '../../controller-runtime/informer.ts';
import type { Logger } from '../../log/logger.ts';
import {
  type NodeNetwork,
  runsFlanneld,
  runsHybridOverlay,
} from '../../servicesmanifest/node-network.ts';
import { applier } from './cluster-rbac.ts';

/** The ClusterRole and ClusterRoleBinding that let winfleet's flannel nodes read all Nodes. */
export const flanneldNodeReaderName = 'winfleet:flanneld-node-reader';

/** The ClusterRole: get, list and watch Nodes, nothing else. */
export function flanneldNodeReaderRole(labels: Record<string, string>): k8s.V1ClusterRole {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: flanneldNodeReaderName, labels },
    rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] }],
  };
}

/**
 * The node names whose users the binding names: every WindowsHost's node (Pull: spec.nodeName;
 * SSH: status.nodeName once the operator chose it), sorted, each once — none unless the
 * nodes' network is a flannel mode (flanneld runs) or ovn-hybrid (hybrid-overlay-node runs).
 * @package
 */
export function flanneldReaderNodes(
  hosts: readonly WindowsHost[],
  network: NodeNetwork | undefined,
): string[] {
  if (!network || !(runsFlanneld(network) || runsHybridOverlay(network))) return [];
  const names = new Set<string>();
  for (const host of hosts) {
    const name = isPullHost(host) ? host.spec.nodeName : host.status?.nodeName;
    if (name) names.add(name);
  }
  return [...names].sort();
}

/** The ClusterRoleBinding of the reader role to the users of `nodeNames`. */
export function flanneldNodeReadersBinding(
  nodeNames: readonly string[],
  labels: Record<string, string>,
): k8s.V1ClusterRoleBinding {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: flanneldNodeReaderName, labels },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: flanneldNodeReaderName,
    },
    subjects: nodeNames.map((name) => ({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'User',
      name: `system:node:${name}`,
    })),
  };
}

export interface FlanneldReadersControllerDeps {
  kc: k8s.KubeConfig;
  hosts: Informer<WindowsHost>;
  /** The network the published manifests carry (the last one joining was allowed with). */
  network: () => NodeNetwork | undefined;
  /** Apply the ClusterRole too (default true); false when the Helm chart renders it. */
  clusterBindings?: boolean;
  log: Logger;
}

const labels = { 'app.kubernetes.io/managed-by': 'winfleet' };

/** Keeps the binding's subjects to the fleet's flannel nodes; applies only on a change. */
export function createFlanneldReadersController(deps: FlanneldReadersControllerDeps): Controller {
  const apply = applier(deps.kc);
  const log = deps.log.child({ controller: 'flanneld-node-readers' });
  let applied: string | undefined;
  let roleApplied = !(deps.clusterBindings ?? true);
  const controller = new Controller({
    name: 'flanneld-node-readers',
    log: deps.log,
    async reconcile() {
      const nodes = flanneldReaderNodes(deps.hosts.list(), deps.network());
      const key = nodes.join(',');
      if (key === applied) return undefined;
      if (!roleApplied) {
        await apply(flanneldNodeReaderRole(labels));
        roleApplied = true;
      }
      await apply(flanneldNodeReadersBinding(nodes, labels));
      applied = key;
      log.info('flanneld may read Nodes on', { nodes: nodes.length });
      return undefined;
    },
  });
  const enqueue = () => controller.enqueue(everythingKey);
  deps.hosts.on('add', enqueue).on('update', enqueue).on('delete', enqueue);
  return controller;
}
