/**
 * Where winfleet keeps things on a Windows host: part of the operator↔agent contract, like
 * the services manifest. The operator copies files to these paths over SSH, the payload's
 * services manifest points its binaries and flags at them, and the agent reads and writes
 * them; all three take them from here so that they cannot drift apart.
 */

/** The node's Kubernetes directory (kubelet, kubeconfig, CNI, containerd), as upstream uses. */
export const kubeDir = 'C:\\k';
/** winfleet's own directory: the agent, its config and state, the payload copy. */
export const winfleetDir = `${kubeDir}\\winfleet`;

/**
 * The pod network's name: the CNI conflist's `name`, which the CNI plugin gives the HNS network
 * it creates, and kube-proxy's --network-name, by which kube-proxy finds that network.
 */
export const cniNetworkName = 'winfleet';

/**
 * The kubelet's --cert-dir (node-services.ts passes it): where it keeps the certificates it
 * rotates. The client one is `kubelet-client-current.pem` in that directory: client-go
 * util/certificate/certificate_store.go names a pair `<pairNamePrefix>-current.pem`
 * (fileStore.filename), and the kubelet opens its store with prefix "kubelet-client" in its
 * cert dir (pkg/kubelet/certificate/bootstrap/bootstrap.go LoadClientCert,
 * pkg/kubelet/certificate/kubelet.go NewKubeletClientCertificateManager).
 */
const certDir = `${kubeDir}\\pki`;

export const hostPaths = {
  bootstrapConfig: `${winfleetDir}\\bootstrap.json`,
  agentConfig: `${winfleetDir}\\agent.json`,
  state: `${winfleetDir}\\state.json`,
  /** The services manifest the agent applied last. */
  servicesManifest: `${winfleetDir}\\services.json`,
  /** Directories the operator created over SSH, one per line (before the agent ran). */
  createdDirectories: `${winfleetDir}\\created-directories.txt`,
  payload: `${winfleetDir}\\payload`,
  agentExe: `${winfleetDir}\\winfleet-agent.exe`,
  /** winfleet-service.exe (windows/service): runs the agent as a Windows service. */
  serviceExe: `${winfleetDir}\\winfleet-service.exe`,
  /** The agent service's size-rotated log, written by winfleet-service.exe. */
  agentLogs: `${winfleetDir}\\logs`,
  caCert: `${kubeDir}\\pki\\ca.crt`,
  certDir,
  /** The kubelet's client certificate, as it rotates it in its --cert-dir. */
  kubeletClientCertificate: `${certDir}\\kubelet-client-current.pem`,
  bootstrapKubeconfig: `${kubeDir}\\bootstrap-kubeconfig`,
  kubeconfig: `${kubeDir}\\kubeconfig`,
  /** kube-proxy's own credentials (system:node-proxier), which the agent requests and renews. */
  kubeProxyKubeconfig: `${kubeDir}\\kube-proxy.kubeconfig`,
  kubeletConfig: `${kubeDir}\\kubelet-config.yaml`,
  logs: `${kubeDir}\\logs`,
  containerdDir: `${kubeDir}\\containerd`,
  containerdConfig: `${kubeDir}\\containerd\\config.toml`,
  /** containerd's registry host configuration (config_path): one directory per registry. */
  containerdCertsDir: `${kubeDir}\\containerd\\certs.d`,
  cniBin: `${kubeDir}\\cni\\bin`,
  cniConfigDir: `${kubeDir}\\cni\\config`,
  cniConfig: `${kubeDir}\\cni\\config\\10-winfleet.conflist`,
  /**
   * flanneld's subnet file (its --subnet-file), which flannel's CNI plugin reads (its
   * subnetFile). Both default to /run/flannel/subnet.env, a path Windows resolves on each
   * process's current drive, so winfleet gives both this one.
   */
  flannelSubnetFile: 'C:\\run\\flannel\\subnet.env',
  /**
   * Where flannel's CNI plugin keeps each sandbox's delegate config for DEL (its dataDir;
   * default /var/lib/cni/flannel, on the current drive).
   */
  flannelDataDir: 'C:\\var\\lib\\cni\\flannel',
} as const;
