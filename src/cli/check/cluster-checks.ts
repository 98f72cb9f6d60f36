/**
 * The cluster-side checks of `winfleet check`. Each asks the API server something it can
 * answer from outside, and says "cannot tell" (warn) when the answer is not conclusive:
 * - api-server-version: /version, read as the skew policy reads it;
 * - node-restriction: a server-side dry-run create of Node B by node A (impersonated, group
 *   system:nodes): the NodeRestriction admission plugin refuses a node touching another Node;
 *   nothing is stored;
 * - bootstrap-token-auth: a bootstrap token made for the check (expiring in 2 minutes, deleted
 *   right after) asks the API server who it is (SelfSubjectReview);
 * - linux-node: a Ready, schedulable Linux Node (CoreDNS and other system pods need one);
 * - cni: the operator's network.mode (winfleet-config, or --network-mode) resolved against
 *   the cluster's CNI as the operator's join resolves it (src/network/, network-check.ts):
 *   never a pass for a network the mode does not join;
 * - webhook: a server-side dry-run create of a Windows pod comes back with winfleet's mutation;
 * - payload-kubelet-skew: the payload's kubelet (--payload) or the managed nodes' kubelets
 *   against the skew policy (src/rollout/kubelet-skew.ts);
 * - bootstrap-auto-approval: the operator's own start-up check (src/controllers/csr).
 */
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import type { ConfiguredNetworkMode } from '../../api/network-mode.ts';
import { managedNodeLabel } from '../../api/node-annotations.ts';
import {
  bootstrapTokensAutoApproved,
  nodeClientRole,
} from '../../controllers/csr/bootstrap-auto-approval.ts';
import {
  bootstrapTokenSecret,
  bootstrapTokenSecretName,
  newBootstrapTokenParts,
} from '../../join/bootstrap-tokens.ts';
import { httpStatus, isForbidden, isNotFound, WinfleetKubeConfig } from '../../kube/client.ts';
import {
  isForbiddenStatus,
  isOkOrCreatedStatus,
  isUnauthorizedStatus,
} from '../../net/http-status.ts';
import { readClusterNetwork } from '../../network/read-cluster-network.ts';
import {
  checkKubeletSkew,
  kubeletMaxMinorsOlder,
  parseKubeVersion,
} from '../../rollout/kubelet-skew.ts';
import { mutationsAnnotation } from '../../webhook/mutate-pod.ts';
import { webhookConfigurationName } from '../../webhook/webhook-configurations.ts';
import { type CheckResult, fail, pass, warn } from './check-report.ts';
import type { ClusterNetwork } from './host-checks.ts';
import { kubeRequest, statusMessage } from './kube-request.ts';
import { checkNetworkConfig, networkVerdict } from './network-check.ts';

export interface ClusterCheckOptions {
  /** The kubelet version of the payload given with --payload (read and checked up front). */
  payload?: { kubernetesVersion: string; source: string };
  /** Namespace the webhook probe pod is dry-run created in. */
  probeNamespace: string;
  /** The operator's namespace: its ConfigMap winfleet-config holds the network configuration. */
  operatorNamespace: string;
  /** --network-mode: replaces the configured network.mode. */
  networkMode?: ConfiguredNetworkMode;
}

export interface ClusterCheck {
  name: string;
  title: string;
  run(kc: k8s.KubeConfig, state: ClusterState): Promise<CheckResult>;
}

/** What one check leaves for the next (the API server's version) and for the host checks. */
export interface ClusterState {
  apiServerVersion?: string;
  /** The pod network the cni check saw (the host checks' patch-level reads it). */
  network?: ClusterNetwork;
  options: ClusterCheckOptions;
}

const errorText = (error: unknown) => {
  const status = httpStatus(error);
  if (status !== undefined) {
    const body = (error as { body?: unknown }).body;
    return `${status}: ${typeof body === 'string' ? statusMessage(body) : (error as Error).message}`;
  }
  return (error as Error)?.message ?? String(error);
};

const apiServerVersion: ClusterCheck = {
  name: 'api-server-version',
  title: 'API server version',
  async run(kc, state) {
    const info = await kc.makeApiClient(k8s.VersionApi).getCode();
    state.apiServerVersion = info.gitVersion;
    try {
      const v = parseKubeVersion(info.gitVersion, 'the API server version');
      const oldest = Math.max(0, v.minor - kubeletMaxMinorsOlder);
      return pass(
        'api-server-version',
        `${info.gitVersion}: Windows nodes may run kubelet v${v.major}.${oldest} to v${v.major}.${v.minor} (the skew policy)`,
      );
    } catch (error) {
      return warn(
        'api-server-version',
        `${(error as Error).message}: the skew policy cannot be applied`,
        'Check the API server version by hand (kubectl version) against your payload’s kubelet',
      );
    }
  },
};

const nodeRestriction: ClusterCheck = {
  name: 'node-restriction',
  title: 'NodeRestriction admission',
  async run(kc) {
    const suffix = randomBytes(3).toString('hex');
    const asNode = `winfleet-check-${suffix}-a`;
    const other = `winfleet-check-${suffix}-b`;
    const response = await kubeRequest(kc, 'POST', '/api/v1/nodes?dryRun=All', {
      body: { apiVersion: 'v1', kind: 'Node', metadata: { name: other } },
      headers: { 'Impersonate-User': `system:node:${asNode}`, 'Impersonate-Group': 'system:nodes' },
    });
    const message = statusMessage(response.body);
    const how = `a server-side dry run: node ${asNode} creating Node ${other}`;
    if (isForbiddenStatus(response.status) && /is not allowed to modify node/.test(message))
      return pass('node-restriction', `NodeRestriction is on: ${how} was refused (${message})`);
    if (isOkOrCreatedStatus(response.status))
      return fail(
        'node-restriction',
        `${how} was admitted: NodeRestriction is off, so any node's credentials can change every Node (labels, taints) and winfleet's node annotations`,
        'Add NodeRestriction to kube-apiserver --enable-admission-plugins (with --authorization-mode=Node,RBAC)',
      );
    if (isForbiddenStatus(response.status) && /impersonate/i.test(message))
      return warn(
        'node-restriction',
        `Cannot tell: your credentials may not impersonate a node (${message})`,
        'Run the check with credentials that may impersonate users and groups (cluster-admin), or check kube-apiserver --enable-admission-plugins for NodeRestriction',
      );
    return warn(
      'node-restriction',
      `Cannot tell: ${how} got ${response.status} (${message}); the authorizer answered before admission`,
      'Check kube-apiserver --authorization-mode (Node,RBAC) and --enable-admission-plugins (NodeRestriction)',
    );
  },
};

const bootstrapTokenAuth: ClusterCheck = {
  name: 'bootstrap-token-auth',
  title: 'bootstrap-token authentication',
  async run(kc) {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const { id, secret } = newBootstrapTokenParts();
    const name = bootstrapTokenSecretName(id);
    try {
      await core.createNamespacedSecret({
        namespace: 'kube-system',
        body: bootstrapTokenSecret({
          id,
          secret,
          expires: new Date(Date.now() + 120_000),
          description: 'winfleet check: proves bootstrap-token authentication; deleted at once',
          labels: { 'app.kubernetes.io/managed-by': 'winfleet-check' },
        }),
      });
    } catch (error) {
      return warn(
        'bootstrap-token-auth',
        `Cannot tell: cannot create a short-lived bootstrap token Secret in kube-system to try (${errorText(error)})`,
        'Run the check with credentials that may create Secrets in kube-system, or check kube-apiserver --enable-bootstrap-token-auth',
      );
    }
    try {
      const cluster = kc.getCurrentCluster()!;
      const probe = new WinfleetKubeConfig();
      probe.loadFromOptions({
        clusters: [cluster],
        users: [{ name: 'bootstrap-probe', token: `${id}.${secret}` }],
        contexts: [{ name: 'probe', cluster: cluster.name, user: 'bootstrap-probe' }],
        currentContext: 'probe',
      });
      // The authenticator reads token Secrets through an informer: a new one may take a moment.
      let last: { status: number; body: string } = { status: 0, body: '' };
      for (let attempt = 0; attempt < 10; attempt++) {
        last = await kubeRequest(
          probe,
          'POST',
          '/apis/authentication.k8s.io/v1/selfsubjectreviews',
          {
            body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
          },
        );
        if (!isUnauthorizedStatus(last.status)) break;
        await new Promise((r) => setTimeout(r, 300));
      }
      if (isOkOrCreatedStatus(last.status)) {
        const user = (JSON.parse(last.body) as { status?: { userInfo?: { username?: string } } })
          .status?.userInfo?.username;
        return pass(
          'bootstrap-token-auth',
          `A bootstrap token made for the check authenticated as ${user}`,
        );
      }
      if (isUnauthorizedStatus(last.status))
        return fail(
          'bootstrap-token-auth',
          'A valid bootstrap token made for the check was refused (401): bootstrap-token authentication is off, so no host can join',
          'Start kube-apiserver with --enable-bootstrap-token-auth (kubeadm does; managed clusters may not offer it)',
        );
      return warn(
        'bootstrap-token-auth',
        `Cannot tell: the SelfSubjectReview with the check's bootstrap token got ${last.status} (${statusMessage(last.body)})`,
        'Check kube-apiserver --enable-bootstrap-token-auth',
      );
    } finally {
      await core.deleteNamespacedSecret({ name, namespace: 'kube-system' }).catch(() => {});
    }
  },
};

const noScheduleEffects = new Set(['NoSchedule', 'NoExecute']);

const linuxNode: ClusterCheck = {
  name: 'linux-node',
  title: 'a schedulable Linux node',
  async run(kc) {
    const nodes = (await kc.makeApiClient(k8s.CoreV1Api).listNode()).items;
    const linux = nodes.filter((n) => n.metadata?.labels?.['kubernetes.io/os'] === 'linux');
    const ready = linux.filter(
      (n) =>
        !n.spec?.unschedulable &&
        n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    const untainted = ready.filter(
      (n) => !(n.spec?.taints ?? []).some((t) => noScheduleEffects.has(t.effect ?? '')),
    );
    const names = (list: k8s.V1Node[]) =>
      list
        .slice(0, 5)
        .map((n) => n.metadata?.name)
        .join(', ') + (list.length > 5 ? ', …' : '');
    if (untainted.length > 0)
      return pass(
        'linux-node',
        `${untainted.length} Ready, schedulable Linux node(s): ${names(untainted)}`,
      );
    if (ready.length > 0)
      return warn(
        'linux-node',
        `${ready.length} Ready Linux node(s), all tainted NoSchedule/NoExecute (${names(ready)}): only pods that tolerate the taints run there`,
        'Make sure CoreDNS and the CNI tolerate those taints (winfleet’s Linux-taint mode adds its toleration to Linux pods), or add an untainted Linux node',
      );
    return fail(
      'linux-node',
      `No Ready, schedulable Linux node among ${nodes.length} node(s) (${linux.length} labelled kubernetes.io/os=linux): CoreDNS, the CNI's controllers and other system pods have nowhere to run`,
      'Add a Linux worker node (or uncordon one) before joining Windows nodes',
    );
  },
};

const cni: ClusterCheck = {
  name: 'cni',
  title: 'the pod network network.mode joins',
  async run(kc, state) {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const configured = await checkNetworkConfig(
      (name, namespace) => core.readNamespacedConfigMap({ name, namespace }),
      state.options.operatorNamespace,
      state.options.networkMode,
    );
    const { result, network } = networkVerdict(
      configured,
      await readClusterNetwork(kc, configured.config),
    );
    state.network = network;
    return result;
  },
};

/** The pod the webhook probe dry-run creates: a HostProcess pod, so no registry is asked. */
export function probePod(namespace: string): k8s.V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `winfleet-check-${randomBytes(3).toString('hex')}`, namespace },
    spec: {
      os: { name: 'windows' },
      hostNetwork: true,
      securityContext: {
        windowsOptions: { hostProcess: true, runAsUserName: 'NT AUTHORITY\\Local service' },
      },
      containers: [{ name: 'probe', image: 'mcr.microsoft.com/oss/kubernetes/pause:3.10' }],
    },
  };
}

const webhook: ClusterCheck = {
  name: 'webhook',
  title: 'the webhook reachable from the API server',
  async run(kc, state) {
    try {
      await kc
        .makeApiClient(k8s.AdmissionregistrationV1Api)
        .readMutatingWebhookConfiguration({ name: webhookConfigurationName });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      return warn(
        'webhook',
        `No MutatingWebhookConfiguration ${webhookConfigurationName}: the winfleet operator is not installed (or not started yet)`,
        'Install the winfleet operator, then run winfleet check again',
      );
    }
    const namespace = state.options.probeNamespace;
    const pod = probePod(namespace);
    const response = await kubeRequest(
      kc,
      'POST',
      `/api/v1/namespaces/${namespace}/pods?dryRun=All`,
      {
        body: pod,
        timeoutMs: 30_000,
      },
    );
    const how = `a server-side dry-run create of Windows pod ${namespace}/${pod.metadata!.name}`;
    if (!isOkOrCreatedStatus(response.status))
      return fail(
        'webhook',
        `${how} failed: ${response.status} ${statusMessage(response.body)}`,
        'Check the operator’s pods and logs, and that the API server can reach the webhook Service (network policy, firewall on the control plane)',
      );
    const created = JSON.parse(response.body) as k8s.V1Pod;
    const mutations = created.metadata?.annotations?.[mutationsAnnotation];
    if (mutations)
      return pass(
        'webhook',
        `The API server called the webhook: ${how} came back with ${mutationsAnnotation}: ${mutations}`,
      );
    return fail(
      'webhook',
      `${how} came back without winfleet's mutation (${mutationsAnnotation}): the API server did not reach the webhook, and its failurePolicy Ignore let the pod through`,
      `Check that the API server can reach the webhook Service (network policy, firewall, the control plane's egress), and that namespace ${namespace} is not excluded (--probe-namespace)`,
    );
  },
};

/** The kubelet versions to hold against the skew policy, and where they came from. */
async function kubeletVersions(
  kc: k8s.KubeConfig,
  payload: ClusterCheckOptions['payload'],
): Promise<{ versions: string[]; source: string }> {
  if (payload) return { versions: [payload.kubernetesVersion], source: payload.source };
  const nodes = (
    await kc.makeApiClient(k8s.CoreV1Api).listNode({ labelSelector: `${managedNodeLabel}=true` })
  ).items;
  const versions = [
    ...new Set(nodes.map((n) => n.status?.nodeInfo?.kubeletVersion).filter(Boolean)),
  ] as string[];
  return { versions, source: `the kubelets of ${nodes.length} winfleet node(s)` };
}

const payloadSkew: ClusterCheck = {
  name: 'payload-kubelet-skew',
  title: "the payload's kubelet inside the skew policy",
  async run(kc, state) {
    const api =
      state.apiServerVersion ?? (await kc.makeApiClient(k8s.VersionApi).getCode()).gitVersion;
    const { versions, source } = await kubeletVersions(kc, state.options.payload);
    if (versions.length === 0)
      return warn(
        'payload-kubelet-skew',
        'Cannot tell: no payload given and no winfleet node runs yet, so no kubelet version to compare',
        'Pass --payload <dir> (the directory with payload.json the operator serves)',
      );
    const refused = versions
      .map((v) => checkKubeletSkew(v, api, source))
      .flatMap((v) => (v.ok ? [] : [v.message]));
    if (refused.length > 0)
      return fail(
        'payload-kubelet-skew',
        refused.join('; '),
        'Use a payload whose kubelet is inside the skew policy (see the message), or upgrade the control plane first',
      );
    return pass(
      'payload-kubelet-skew',
      `Kubelet ${versions.join(', ')} (${source}) is inside the skew policy for API server ${api}`,
    );
  },
};

const autoApproval: ClusterCheck = {
  name: 'bootstrap-auto-approval',
  title: 'no auto-approval of bootstrap node CSRs',
  async run(kc) {
    let reason: string | undefined;
    try {
      reason = await bootstrapTokensAutoApproved(kc);
    } catch (error) {
      return warn(
        'bootstrap-auto-approval',
        `Cannot tell: the SubjectAccessReview was refused (${errorText(error)})`,
        'Run the check with credentials that may create subjectaccessreviews',
      );
    }
    if (!reason)
      return pass(
        'bootstrap-auto-approval',
        'Bootstrap tokens may not create node client CSRs that kube-controller-manager approves by itself',
      );
    return fail(
      'bootstrap-auto-approval',
      `The cluster approves node client certificates for every bootstrap token (${reason}): anyone holding one host's token can get a certificate for any node name without winfleet's checks`,
      `Remove the binding of ClusterRole ${nodeClientRole} to system:bootstrappers (bind it to a group only your own tokens carry)`,
    );
  },
};

/** Every cluster check, in the order they run (api-server-version first: it proves reachability). */
export const clusterChecks: readonly ClusterCheck[] = [
  apiServerVersion,
  nodeRestriction,
  bootstrapTokenAuth,
  linuxNode,
  cni,
  webhook,
  payloadSkew,
  autoApproval,
];

/** Runs one check; an error it did not expect becomes a warn saying it could not be made. */
export async function runClusterCheck(
  check: ClusterCheck,
  kc: k8s.KubeConfig,
  state: ClusterState,
): Promise<CheckResult> {
  try {
    return await check.run(kc, state);
  } catch (error) {
    return warn(
      check.name,
      `Cannot tell: the check could not be made (${errorText(error)})`,
      isForbidden(error)
        ? 'Run the check with credentials allowed to read what it names (RBAC)'
        : 'Run the check again; if it persists, report it',
    );
  }
}
