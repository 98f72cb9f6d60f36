/**
 * The cluster DNS of a lab world, answered on the Linux side by the real CoreDNS (built by
 * hack/build-netlab.sh) as a kubeadm cluster runs it: a Deployment kube-system/coredns whose
 * pod the scheduler binds to a Linux lab node, the Service kube-system/kube-dns at the cluster
 * DNS address (port 53 UDP and TCP, selecting that pod), the EndpointSlice the controller
 * manager makes of the pod once it is Ready with its IP, and CoreDNS's kubernetes plugin reading
 * Services and EndpointSlices with the ServiceAccount kube-system/coredns, bound to the ClusterRole
 * of kubernetes' cluster/addons/dns/coredns manifest, through the pod namespace's API relay.
 *
 * The lab plays the kubelet's part for that pod (runLabPod): it wires a pod namespace with the
 * real CNI plugins on the node (the node must be added with `labPods`, so that no kwok gives the
 * pod an address of its own), reports the address as the pod's podIP, and starts CoreDNS in the
 * namespace; the second kwok then marks the pod Running and Ready.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { waitFor } from '../../src/kube/wait-for.ts';
import type { ComponentProcess } from '../cluster/component-process.ts';
import type { ApiRelay } from './api-relay.ts';
import { runInNetns } from './command.ts';
import { createInNetnsAccount, type InNetnsAccount } from './in-netns-account.ts';
import { wireBoundPod } from './lab-kubelet.ts';
import type { LinuxFlannelNode } from './linux-flannel-node.ts';
import type { LabPod, NetLab } from './net-lab.ts';
import { waitForLogLine } from './netns-process.ts';

/** The cluster DNS Service's address: the tenth of the service range, as kubeadm picks it. */
export const clusterDnsIp = '10.96.0.10';
export const clusterDomain = 'cluster.local';
export const dnsNamespace = 'kube-system';
export const dnsServiceAccount = 'coredns';
const labels = { 'k8s-app': 'kube-dns' };
/** CoreDNS's readiness port (the ready plugin's default). */
const readyPort = 8181;

/** The ClusterRole system:coredns of kubernetes' cluster/addons/dns/coredns manifest. */
export const corednsClusterRoleRules: k8s.V1PolicyRule[] = [
  {
    apiGroups: [''],
    resources: ['endpoints', 'services', 'pods', 'namespaces'],
    verbs: ['list', 'watch'],
  },
  { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
];

/** The Corefile: the cluster domain from the API server, its queries logged; nothing forwarded. */
export function corefile(kubeconfig: string): string {
  return [
    '.:53 {',
    '    errors',
    '    log',
    `    ready :${readyPort}`,
    `    kubernetes ${clusterDomain} in-addr.arpa ip6.arpa {`,
    `        kubeconfig ${kubeconfig}`,
    '        pods insecure',
    '        fallthrough in-addr.arpa ip6.arpa',
    '        ttl 30',
    '    }',
    '}',
    '',
  ].join('\n');
}

/**
 * The objects: the ServiceAccount and its ClusterRole (waited on until allowed), the Deployment
 * (its pod's nodeSelector naming `nodeName`) and the Service kube-dns at `clusterIP`
 * (default clusterDnsIp).
 */
export async function createClusterDnsObjects(
  kc: k8s.KubeConfig,
  o: { nodeName: string; kubeconfigPath: string; image?: string; clusterIP?: string },
): Promise<InNetnsAccount> {
  const account = await createInNetnsAccount(kc, {
    namespace: dnsNamespace,
    createNamespace: false,
    serviceAccount: dnsServiceAccount,
    clusterRole: 'system:coredns',
    rules: corednsClusterRoleRules,
    labels,
    kubeconfigPath: o.kubeconfigPath,
  });
  await kc.makeApiClient(k8s.AppsV1Api).createNamespacedDeployment({
    namespace: dnsNamespace,
    body: {
      metadata: { name: 'coredns', labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: dnsServiceAccount,
            nodeSelector: { 'kubernetes.io/hostname': o.nodeName },
            containers: [
              {
                name: 'coredns',
                image: o.image ?? 'registry.k8s.io/coredns/coredns:v1.15.0',
                args: ['-conf', '/etc/coredns/Corefile'],
                ports: [
                  { name: 'dns', containerPort: 53, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
                ],
              },
            ],
          },
        },
      },
    },
  });
  await kc.makeApiClient(k8s.CoreV1Api).createNamespacedService({
    namespace: dnsNamespace,
    body: {
      metadata: { name: 'kube-dns', labels },
      spec: {
        clusterIP: o.clusterIP ?? clusterDnsIp,
        selector: labels,
        ports: [
          { name: 'dns', port: 53, targetPort: 53, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53, targetPort: 53, protocol: 'TCP' },
        ],
      },
    },
  });
  return account;
}

/**
 * The kubelet's part for one pod bound to `linux`'s Node: waits for a pod matching
 * `labelSelector` in `namespace` to be bound there, wires its namespace with the real CNI
 * plugins and sets its hostIP and podIP as the kubelet's status manager does.
 */
export async function runLabPod(
  kc: k8s.KubeConfig,
  linux: LinuxFlannelNode,
  o: { namespace: string; labelSelector: string; label: string },
): Promise<LabPod & { name: string }> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const pod = await waitFor(
    async () =>
      (await core.listNamespacedPod({ namespace: o.namespace, labelSelector: o.labelSelector }))
        .items[0],
    {
      description: `a pod ${o.labelSelector} in ${o.namespace} bound to ${linux.nodeName}`,
      timeoutMs: 30_000,
    },
  );
  const bound = await waitFor(
    async () => {
      const p = await core.readNamespacedPod({ namespace: o.namespace, name: pod.metadata!.name! });
      return p.spec?.nodeName ? p : undefined;
    },
    { description: `${pod.metadata!.name} scheduled`, timeoutMs: 30_000 },
  );
  if (bound.spec!.nodeName !== linux.nodeName)
    throw new Error(`${pod.metadata!.name} went to ${bound.spec!.nodeName}, not ${linux.nodeName}`);
  return wireBoundPod(core, linux, bound, o.label);
}

/**
 * Starts CoreDNS in `pod`'s namespace with corefile(), its kubeconfig through the namespace's
 * API relay, and resolves once its ready plugin answers 200 (the kubernetes plugin has synced).
 */
export async function startCoreDns(o: {
  lab: NetLab;
  relay: ApiRelay;
  binDir: string;
  pod: LabPod;
  kubeconfig: string;
}): Promise<ComponentProcess> {
  await o.relay.enter(o.pod.netns);
  const dir = join(o.lab.dir, `coredns-${o.pod.label}`);
  await mkdir(dir, { recursive: true });
  const conf = join(dir, 'Corefile');
  await writeFile(conf, corefile(o.kubeconfig));
  const proc = o.lab.start({
    netns: o.pod.netns,
    name: `coredns ${o.pod.label}`,
    file: join(o.binDir, 'coredns'),
    args: ['-conf', conf],
  });
  await waitForLogLine(proc, /^CoreDNS-/, { description: 'CoreDNS started', timeoutMs: 30_000 });
  const probe = `fetch('http://127.0.0.1:${readyPort}/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))`;
  await waitFor(
    async () => {
      if (proc.exited) throw new Error(`CoreDNS exited:\n${proc.logTail(30)}`);
      return runInNetns(o.pod.netns, process.execPath, ['-e', probe]).then(
        () => true,
        () => undefined,
      );
    },
    { description: 'CoreDNS ready (its kubernetes plugin synced)', timeoutMs: 30_000 },
  ).catch((error: Error) => {
    error.message += `\nCoreDNS log:\n${proc.logTail(30)}`;
    throw error;
  });
  return proc;
}

export interface ClusterDns {
  /** The CoreDNS pod, wired on the Linux node, and CoreDNS running in it. */
  pod: LabPod & { name: string };
  coredns: ComponentProcess;
  clusterIP: string;
}

/**
 * The whole cluster DNS on `linux`'s Node: the objects (createClusterDnsObjects), the CoreDNS
 * pod run by `runPod` (default runLabPod; a LabKubelet's pod() where one serves the Node),
 * CoreDNS started in it, and kube-dns's EndpointSlice holding the pod's address, ready.
 */
export async function startClusterDns(o: {
  kc: k8s.KubeConfig;
  lab: NetLab;
  relay: ApiRelay;
  binDir: string;
  linux: LinuxFlannelNode;
  clusterIP?: string;
  runPod?: (p: {
    namespace: string;
    labelSelector: string;
    label: string;
  }) => Promise<LabPod & { name: string }>;
}): Promise<ClusterDns> {
  const clusterIP = o.clusterIP ?? clusterDnsIp;
  const account = await createClusterDnsObjects(o.kc, {
    nodeName: o.linux.nodeName,
    kubeconfigPath: join(o.lab.dir, 'coredns.kubeconfig'),
    clusterIP,
  });
  const selector = {
    namespace: dnsNamespace,
    labelSelector: 'k8s-app=kube-dns',
    label: 'lnx1-dns',
  };
  const pod = await (o.runPod ?? ((p) => runLabPod(o.kc, o.linux, p)))(selector);
  const coredns = await startCoreDns({
    lab: o.lab,
    relay: o.relay,
    binDir: o.binDir,
    pod,
    kubeconfig: account.inNetnsKubeconfig,
  });
  const discovery = o.kc.makeApiClient(k8s.DiscoveryV1Api);
  await waitFor(
    async () =>
      (
        await discovery.listNamespacedEndpointSlice({
          namespace: dnsNamespace,
          labelSelector: 'kubernetes.io/service-name=kube-dns',
        })
      ).items.some((s) =>
        s.endpoints?.some((e) => e.addresses.includes(pod.address) && e.conditions?.ready === true),
      ) || undefined,
    { description: `kube-dns's EndpointSlice with ${pod.address} ready`, timeoutMs: 30_000 },
  );
  return { pod, coredns, clusterIP };
}
