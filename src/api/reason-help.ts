/**
 * What each reason of the catalog (reasons.ts) means and what to do about it: the source of
 * docs/troubleshooting.md, which scripts/generate-troubleshooting.ts writes from it
 * (`npm run docs:generate`). Grouped as the document's tables are, each group with its prose;
 * every row names its reason by its constant, so a renamed reason fails to compile, and
 * reasons.test.ts fails when a reason has no row, a row names no reason, or the document is not
 * this table's output. Declarative: it imports only the catalog.
 */
import {
  ConditionReason,
  EventReason,
  GmsaReadinessReason,
  JoinFailureReason,
  NodeHealthEventReason,
  NodeHealthReason,
  PrePullReason,
} from './reasons.ts';

/** Any reason of the catalog. */
export type Reason =
  | ConditionReason
  | EventReason
  | NodeHealthReason
  | NodeHealthEventReason
  | GmsaReadinessReason
  | PrePullReason;

/** One table row: the reason, what it means and what to do (Markdown, one line each). */
export interface ReasonRow {
  reason: Reason;
  /** The Event's type, for tables of Event reasons. */
  type?: 'Normal' | 'Warning';
  meaning: string;
  fix: string;
}

/** A table of reasons; `events` tables have a Type column. */
export interface ReasonTable {
  events: boolean;
  rows: readonly ReasonRow[];
}

/** A section of the document: its heading, then paragraphs (Markdown) and tables in order. */
export interface HelpSection {
  title: string;
  blocks: readonly (string | ReasonTable)[];
}

/** The paragraphs before the first section. */
export const troubleshootingIntro =
  "`kubectl get windowshosts` shows why a host is not Ready in the `REASON` column (the Ready\ncondition's reason). `kubectl describe windowshost -n <namespace> <name>` shows every condition\nwith its message, which names the field or value at fault and the fix, and the host's Events: a\nfailure that repeats is one Warning Event whose count goes up, so `kubectl get events\n--field-selector reason=<Reason>` finds every host with the same problem. Fixing the cause\nretries at once when winfleet watches it (the WindowsHost, its SSH key Secret, the\n`winfleet-config` ConfigMap); a fix made on the host itself is picked up by the next retry\n(backoff up to 5 minutes), or at once by touching the WindowsHost (any annotation).";

export const reasonHelp: readonly HelpSection[] = [
  {
    title: 'Condition reasons',
    blocks: [
      'Failures (Ready=False with the reason; Reachable=False for connection failures, Degraded=True\nwhere only you can fix it; each also a Warning Event of the same reason):',
      {
        events: false,
        rows: [
          {
            reason: JoinFailureReason.SecretNotFound,
            meaning:
              "The Secret `spec.sshKeySecretRef.name` names does not exist in the host's namespace.",
            fix: 'Run the command the message prints (`kubectl create secret generic <name> -n <namespace> --from-file=ssh-privatekey=<key file>`); the host retries at once.',
          },
          {
            reason: JoinFailureReason.SecretKeyMissing,
            meaning:
              'The Secret has no key `spec.sshKeySecretRef.key` (default `ssh-privatekey`; `private-key.pem` is accepted too).',
            fix: 'Set `spec.sshKeySecretRef.key` to the key that holds the private key, or rewrite the Secret.',
          },
          {
            reason: JoinFailureReason.KeyInvalid,
            meaning:
              "The key in the Secret is not a usable SSH private key (the message names the Secret, the key and the parser's complaint).",
            fix: 'Put an unencrypted PEM or OpenSSH private key there (the message prints the command).',
          },
          {
            reason: JoinFailureReason.AuthRefused,
            meaning: 'The host refused the key for `spec.username`.',
            fix: "Check `spec.username` is the account the key is authorized for, and that the key's public half is in its authorized keys (`C:\\ProgramData\\ssh\\administrators_authorized_keys` for an administrator). Retried with backoff.",
          },
          {
            reason: JoinFailureReason.HostKeyChanged,
            meaning:
              'The host presented an SSH host key other than the pinned one. Nothing is done on it.',
            fix: 'If the host was rebuilt on purpose, annotate the WindowsHost `winfleet.io/trust-host-key=<fingerprint>` (the message has it); otherwise find out who answers at that address.',
          },
          {
            reason: JoinFailureReason.Unreachable,
            meaning:
              'No SSH connection to `spec.address:spec.port` (refused, timed out, no route).',
            fix: 'Check the address and port, that sshd runs on the host and that its firewall lets the operator in. Retried with backoff.',
          },
          {
            reason: JoinFailureReason.ConnectionDropped,
            meaning: 'The SSH connection dropped while a command ran.',
            fix: "Usually transient (a reboot, a network blip); retried. If it repeats, check the host's sshd and network.",
          },
          {
            reason: JoinFailureReason.CommandTimedOut,
            meaning: 'A command on the host did not finish within `hosts.commandTimeoutSeconds`.',
            fix: "Check the host's load; raise `hosts.commandTimeoutSeconds` for slow hosts. Retried.",
          },
          {
            reason: JoinFailureReason.FileCopyFailed,
            meaning: 'Copying a file to the host over SFTP failed.',
            fix: 'Check free space and that the sshd SFTP subsystem is enabled. Retried.',
          },
          {
            reason: JoinFailureReason.StepFailed,
            meaning:
              'A step ran on the host and failed (`status.lastError.step` names it: a script, or `agent bootstrap: <step>`).',
            fix: "Read `status.lastError` (the agent's step and its error) and the service logs on the host (`C:\\k\\logs`); retried.",
          },
          {
            reason: JoinFailureReason.UnsupportedWindows,
            meaning: 'The host runs a Windows build older than Windows Server 2019.',
            fix: 'Use Windows Server 2019, 2022 or 2025.',
          },
          {
            reason: JoinFailureReason.DiskFull,
            meaning: 'C: has too little free space for the payload.',
            fix: 'Free space on C: (the message says how much is needed); retried.',
          },
          {
            reason: JoinFailureReason.ContainersFeatureMissing,
            meaning:
              'The host lacks the Windows Containers feature (no Host Compute Service: containerd cannot start a pod), and winfleet may not install it (`hosts.installContainersFeature: false`) or cannot (its payload was removed).',
            fix: 'Run `Install-WindowsFeature -Name Containers` on the host (with `-Source <install media>` when the message says the payload was removed) and reboot it, or set `hosts.installContainersFeature: true`; retried.',
          },
          {
            reason: JoinFailureReason.NetworkModeMismatch,
            meaning:
              "The cluster's pod network is not one `network.mode` of `winfleet-config` joins: another CNI runs (`flannel-vxlan` on a Calico cluster), `auto` recognises no CNI or several, the CNI's Windows DaemonSet (`calico-node-windows`, `antrea-agent-windows`) is missing, or it installs its CNI files elsewhere than containerd looks (`network.external.cniConfDir`/`cniBinDir`). Nothing is done on the host. The message names the configured mode, what the cluster runs and where it was seen.",
            fix: "Do what the message says: set `network.mode` to the mode of the CNI your pods use (or `auto`), deploy the CNI's Windows component, or align the directories; `winfleet check` shows the same decision (`cni`). Retried with backoff. See [Pod networking](operating.md#pod-networking).",
          },
          {
            reason: JoinFailureReason.NetworkUnverified,
            meaning:
              "The operator could not read the cluster's pod network (its DaemonSets, Flannel's ConfigMap) since it started, so it cannot tell which mode joins. Nothing is done on the host.",
            fix: "Check the operator's log and its RBAC (the chart's ClusterRole lists DaemonSets and reads Flannel's ConfigMap); retried.",
          },
          {
            reason: JoinFailureReason.NetworkUnsupported,
            meaning:
              'The cluster\'s CNI cannot carry Windows pods as it is configured: Flannel VXLAN without `"VNI"` ≥ 4096 and `"Port": 4789` in `net-conf.json` (Flannel\'s Linux defaults are VNI 1 and port 8472), a `net-conf.json` that is not valid (the message names the field), a Flannel backend or Calico encapsulation Windows lacks, a CNI without a Windows data plane (Cilium, Canal), or OpenShift without hybrid networking. Nothing is done on the host.',
            fix: 'Fix the CNI\'s configuration as the message says (e.g. `"Backend": {"Type": "vxlan", "VNI": 4096, "Port": 4789}` in ConfigMap `kube-flannel-cfg`, then restart the Flannel pods), or use a CNI with Windows support. Retried with backoff.',
          },
          {
            reason: JoinFailureReason.ActiveDirectoryRefused,
            meaning:
              "The host's pool has `spec.activeDirectory` and the host cannot be joined as configured; nothing was changed on it. The message says why: `spec.nodeName` over the 15-character NetBIOS limit, the pool's spec invalid, its credentials Secret missing or without `username`/`password`, the host joined to another domain, or a Pull-mode host.",
            fix: 'Do what the message says (a `spec.nodeName` of at most 15 characters, or none for a generated one; create or fix the Secret; fix the pool); retried.',
          },
          {
            reason: JoinFailureReason.DomainCredentialsNotOptedIn,
            meaning:
              "The pool's credentials Secret does not list the pool in its annotation `winfleet.io/domain-join-pools` (missing, another pool, or not a comma-separated list of names: no spaces, no `*`); nothing of it was read or sent, nothing changed on the host.",
            fix: "If the Secret is the pool's domain account, annotate it as the message says (`kubectl annotate secret … winfleet.io/domain-join-pools=<pool>`); retried.",
          },
          {
            reason: JoinFailureReason.HostKeyNotPinned,
            meaning:
              "The host's pool joins Active Directory, and the host has no `spec.hostKey` an admin pinned (its key was trusted on first use), or presented another key: no credentials were sent and nothing changed (no rename).",
            fix: 'Read the key on the host (`ssh-keygen -lf C:\\ProgramData\\ssh\\ssh_host_ed25519_key.pub`) or from your inventory and set `spec.hostKey`; retried.',
          },
          {
            reason: JoinFailureReason.DomainJoinFailed,
            meaning:
              "`Add-Computer` (or the local unjoin, on removal) failed on the host: the message quotes Windows' error (`The user name or password is incorrect.`, the domain not reachable) and names the Secret and the domain. The host stays in its workgroup; no token, kubelet or Node.",
            fix: "Fix the Secret's `username`/`password` (the host retries at once) or the host's DNS/route to a domain controller; retried with backoff.",
          },
          {
            reason: JoinFailureReason.NodeNameChanged,
            meaning: 'The host now has another hostname than the node it joined as.',
            fix: 'Set `spec.nodeName` to the old node name, or delete the WindowsHost and add it again.',
          },
          {
            reason: JoinFailureReason.NodeNameTaken,
            meaning:
              'Another WindowsHost holds the node name. Nothing is done on this host or that Node.',
            fix: 'Set `spec.nodeName` to a free name, or delete one of the two WindowsHosts.',
          },
          {
            reason: JoinFailureReason.NodeNotOwned,
            meaning:
              "A Node of that name exists without this host's identity: winfleet will not join, annotate, drain or delete it.",
            fix: "Set `spec.nodeName` to a free name; if the Node is this host's, the message prints the `kubectl annotate node` command.",
          },
          {
            reason: JoinFailureReason.NodeExistsRebuilt,
            meaning:
              "The host's Node exists but the host has no credentials for it: it was rebuilt.",
            fix: 'Run the printed `kubectl annotate windowshost … winfleet.io/rejoin=true` to delete the stale Node and join again.',
          },
          {
            reason: JoinFailureReason.PayloadInvalid,
            meaning:
              "The operator's payload (`payload.json`, a file, its services manifest) is invalid.",
            fix: 'Fix the payload the operator was started with (`--payload-dir`); a changed `payload.json` is picked up at once.',
          },
          {
            reason: JoinFailureReason.PayloadUnavailable,
            meaning:
              'A payload file cannot be downloaded, or the payload registry cannot be read (down, refusing the pull secret, no such artifact).',
            fix: "Check the URL or the registry, the pull secret (`--payload-pull-secret`) and the operator's network access; retried.",
          },
          {
            reason: JoinFailureReason.PayloadRegistryUnavailable,
            meaning:
              "The payload registry (`--payload-image`) answers neither the host's agent nor the operator; the message names the registry and both errors. Nothing is pushed: the join waits for it, retrying with backoff (up to 5 minutes between tries), and completes once it is back.",
            fix: 'Bring the registry (or a mirror of `images.mirrors`) back up, or check the network between it and both sides.',
          },
          {
            reason: JoinFailureReason.ManifestVersionReused,
            meaning:
              "The payload's services version is already published with a different manifest.",
            fix: 'Give the changed payload a new version, or delete the published manifest ConfigMap of that version.',
          },
          {
            reason: JoinFailureReason.TimedOut,
            meaning:
              'Something winfleet waited for (e.g. a deleted Node leaving the cache) did not happen in time.',
            fix: "Usually transient; retried. If it repeats, check the API server's health.",
          },
          {
            reason: JoinFailureReason.ApiError,
            meaning: 'A request to the API server failed.',
            fix: "Usually transient; retried. If it repeats, check the operator's permissions and the API server.",
          },
          {
            reason: JoinFailureReason.InternalError,
            meaning: 'winfleet broke one of its own rules.',
            fix: 'Report it with the message and the operator log.',
          },
        ],
      },
      'Progress and removal:',
      {
        events: false,
        rows: [
          {
            reason: ConditionReason.Connected,
            meaning: 'Reachable: SSH to the host works.',
            fix: 'Nothing.',
          },
          {
            reason: ConditionReason.PullMode,
            meaning:
              'Reachable=Unknown: the host joined by itself (`spec.mode: Pull`, `winfleet join-command`); winfleet never connects to it over SSH. Its upgrades (the agent pulls the payload), reboots and removal go through its agent, by annotations on its Node.',
            fix: 'Nothing.',
          },
          {
            reason: ConditionReason.AgentBootstrapped,
            meaning: 'Bootstrapped: the agent configured the node services.',
            fix: 'Nothing.',
          },
          {
            reason: ConditionReason.NodeExists,
            meaning: "NodeRegistered: the host's Node exists.",
            fix: 'Nothing.',
          },
          {
            reason: ConditionReason.WaitingForNode,
            meaning:
              'NodeRegistered and Ready: the kubelet has not registered the Node (yet, or any more).',
            fix: 'Wait; if it lasts past `hosts.joinTimeoutSeconds` the host is bootstrapped again (a Pull-mode host: `NodeNeverRegistered`). Check the kubelet log on the host and pending CSRs (`kubectl get csr`).',
          },
          {
            reason: ConditionReason.NodeNeverRegistered,
            meaning:
              "NodeRegistered, Ready and Degraded, and a Warning Event: a Pull-mode host's Node did not register within `hosts.joinTimeoutSeconds` of its WindowsHost's creation (when its node certificate was approved). winfleet deletes nothing: the WindowsHost records that a machine holds credentials for the node name. Also a Warning Event when such a host is removed: no agent could be asked to deconfigure the machine.",
            fix: 'On the machine, read `C:\\k\\winfleet\\join-status.json` and the kubelet log. If the machine is gone, delete the WindowsHost (the message prints the command); a machine left behind is cleaned with `C:\\k\\winfleet\\winfleet-agent.exe cleanup`.',
          },
          {
            reason: ConditionReason.Joining,
            meaning: 'Ready: the host is being configured.',
            fix: 'Wait.',
          },
          {
            reason: ConditionReason.JoiningDomain,
            meaning:
              "Ready, and a Normal Event: winfleet renamed the host or joined it to its pool's domain (`spec.activeDirectory`) and restarts it; the join goes on once it is back.",
            fix: 'Wait. `Unreachable` while the host restarts is expected.',
          },
          {
            reason: ConditionReason.InstallingContainersFeature,
            meaning:
              'Ready, and a Normal Event: winfleet installed the Windows Containers feature (`hosts.installContainersFeature`, default true) and reboots the host to finish it; the join goes on once it is back.',
            fix: 'Wait. `Unreachable` while the host reboots is expected.',
          },
          {
            reason: ConditionReason.NodeNotReady,
            meaning:
              'Ready: the Node exists but is not Ready; its agent is left to restart what died.',
            fix: 'Wait; `kubectl describe node` says why. After `hosts.joinTimeoutSeconds` the host is bootstrapped again.',
          },
          {
            reason: ConditionReason.ApplyingServices,
            meaning: 'Ready: waiting for the agent to apply the services version.',
            fix: 'Wait; an `AgentNotReporting` Event follows if it does not.',
          },
          {
            reason: ConditionReason.NodeReady,
            meaning:
              "Ready=True: the host's own Node (carrying its identity) is Ready with the current services.",
            fix: 'Nothing.',
          },
          {
            reason: ConditionReason.Draining,
            meaning: 'Ready: the WindowsHost is being deleted; its Node is drained.',
            fix: 'Wait.',
          },
          {
            reason: ConditionReason.UnmanagedPods,
            meaning:
              'Removal evicts nothing while pods no controller manages run on the node (as `kubectl drain` refuses); also a Warning Event naming them.',
            fix: 'Delete or move those pods (the message names them), or let winfleet evict them, deleting them for good: `kubectl annotate windowshost <name> -n <namespace> winfleet.io/drain-unmanaged-pods=true`.',
          },
          {
            reason: ConditionReason.RemovalBlocked,
            meaning:
              'Removal could not deconfigure the host within `hosts.removalTimeoutSeconds` (default 300), over SSH or, for a Pull-mode host, through its agent (which did not report, or whose Node is gone); also a Warning Event. It keeps trying.',
            fix: 'Make the host reachable (or start it), or, if it is gone for good, `kubectl annotate windowshost <name> -n <namespace> winfleet.io/skip-deconfigure=true` (the message prints it).',
          },
          {
            reason: ConditionReason.Deconfiguring,
            meaning:
              "Ready: a Pull-mode host's removal asked its agent (`winfleet.io/deconfigure-requested` on its drained Node) to remove winfleet from the host, and waits for the agent's report (`winfleet.io/deconfigured`).",
            fix: 'Wait; past `hosts.removalTimeoutSeconds` it becomes `RemovalBlocked`.',
          },
          { reason: ConditionReason.AsExpected, meaning: 'Degraded=False.', fix: 'Nothing.' },
          {
            reason: ConditionReason.WinfleetApproved,
            meaning: "A CSR of a host's kubelet or kube-proxy was approved by winfleet.",
            fix: 'Nothing.',
          },
          {
            reason: ConditionReason.WinfleetDenied,
            meaning:
              "winfleet denied a CSR; the condition's message says which rule it broke (for a host joining by command, the check: `token`, `expiry`, `uses`, `subject`, `node-name`, `name-taken`, `name-pattern`, `pool`).",
            fix: 'Check the node name and addresses the CSR asked for against the WindowsHost; for a join by command, the join token (`winfleet join-tokens list`) and the pool.',
          },
        ],
      },
      "Node conditions the agent writes on its own Node (`kubectl describe node <name>`), checked every\n`checkIntervalSeconds` of its configuration; a status changes only after two checks in a row\nagree. Those in the pool's `spec.health.unhealthyConditions` (by default `KubeletUnhealthy`,\n`ContainerRuntimeUnhealthy`, `KubeProxyUnhealthy`, `HNSNetworkMissing`, `FrequentServiceRestart`\nand `ClockSkew`) start the repair ladder once they last past their timeout (`HostUnhealthy`\nbelow); `KubeletCertificateExpiring`, `RebootPending` and `SystemDiskLow` only report, and\n`StaleHNSEndpoints` is the agent's own to repair:",
      {
        events: false,
        rows: [
          {
            reason: NodeHealthReason.ServiceMissing,
            meaning:
              '`KubeletUnhealthy`, `ContainerRuntimeUnhealthy` or `KubeProxyUnhealthy`=True: the Service Control Manager does not know the service (kubelet, containerd, kube-proxy).',
            fix: 'Read the agent log (`C:\\k\\winfleet\\logs`): the agent registers the services from its manifest. If the agent does not, the repair ladder re-bootstraps the host (services and configuration applied again).',
          },
          {
            reason: NodeHealthReason.ServiceNotRunning,
            meaning:
              'The same conditions=True: the service is stopped (the message has its last exit code). The agent starts it again unless it is in a restart loop.',
            fix: 'If it does not stay up, read its log under `C:\\k\\logs` and fix the cause.',
          },
          {
            reason: NodeHealthReason.HealthzFailed,
            meaning:
              '`KubeletUnhealthy` or `KubeProxyUnhealthy`=True: the service runs but its health endpoint (`http://127.0.0.1:10248/healthz`, `http://127.0.0.1:10256/healthz`) fails; the message has the error.',
            fix: 'Read its log under `C:\\k\\logs`; the repair ladder starts by restarting the service.',
          },
          {
            reason: NodeHealthReason.RestartLoop,
            meaning:
              '`FrequentServiceRestart`=True: a node service restarted more than 5 times in 10 minutes (the message names it); the agent stopped restarting it.',
            fix: 'Read its log under `C:\\k\\logs` and fix the cause, then `Start-Service <name>`; the repair ladder starts with a re-bootstrap of the host. The condition clears once the service has run a minute without a restart (or its restarts aged out of the window).',
          },
          {
            reason: NodeHealthReason.NetworkMissing,
            meaning:
              "`HNSNetworkMissing`=True: the CNI's HNS network existed in this boot and is gone (`Get-HnsNetwork`); pods on the node have no network.",
            fix: "The agent recreates the network from the CNI config it wrote for the Node's pod CIDR (its log says `health repair (HNSNetworkMissing)`); pods that were on the old network have lost their endpoints: delete them so their controllers recreate them. If it stays missing, the repair ladder re-bootstraps, then reboots the host.",
          },
          {
            reason: NodeHealthReason.EndpointsLeftBehind,
            meaning:
              "`StaleHNSEndpoints`=True: HNS endpoints on winfleet's own pod network (`winfleet`, `flannel.<VNI>`) hold addresses no pod on this node has had for `hosts.agentHealth.staleEndpointSeconds` (default 60 s) over two checks or more (the message counts them and names up to 5 addresses): a CNI DEL released the address but did not remove the endpoint (a crash or a reboot mid-teardown), so host-local may hand the address to a new pod that would then be unreachable. Not checked in `external` mode; kube-proxy's source VIP, the subnet's gateway and remote endpoints are never counted.",
            fix: 'The agent removes them (`Remove-HnsEndpoint`, each only while it still has that address; its log says `health repair (StaleHNSEndpoints)`), and the condition clears. If it does not, `Get-HnsEndpoint` on the host shows them.',
          },
          {
            reason: NodeHealthReason.DuplicateEndpointIP,
            meaning:
              "`StaleHNSEndpoints`=True: two or more HNS endpoints on winfleet's pod network hold an address a pod on this node has (the message names them): one was left behind by a pod that is gone, and the pod may be unreachable. The agent removes neither, since it cannot tell which one the pod's sandbox uses.",
            fix: 'Delete that pod (`kubectl delete pod`; its controller recreates it): its CNI DEL removes its own endpoint, and the agent then removes the one left behind.',
          },
          {
            reason: NodeHealthReason.ClockSkewed,
            meaning:
              "`ClockSkew`=True: the host's clock is more than 60 s off the API server's (its `Date` header); certificates and tokens fail past a few minutes.",
            fix: "The agent resyncs the clock (`w32tm /resync /force`, starting W32Time if it is stopped). If it stays skewed, fix the host's time source (`w32tm /query /status`, `w32tm /query /source`).",
          },
          {
            reason: NodeHealthReason.CertificateExpiring,
            meaning:
              "`KubeletCertificateExpiring`=True: the kubelet's client certificate has less than 7 days left and is past 90% of its lifetime (or expired): it is not renewing.",
            fix: 'Check that the kubelet runs with certificate rotation and that its CSRs (signer `kubernetes.io/kube-apiserver-client-kubelet`) are approved: `kubectl get csr`, and `WinfleetDenied` above.',
          },
          {
            reason: NodeHealthReason.RebootRequired,
            meaning:
              '`RebootPending`=True: Windows servicing waits for a reboot (`Component Based Servicing\\RebootPending` or `WindowsUpdate\\Auto Update\\RebootRequired`; `PendingFileRenameOperations`, which antivirus and installers write routinely, does not count).',
            fix: 'Nothing: the pool reboots the host in its maintenance window, `maxUnavailable` at a time; `winfleet.io/reboot-requested` on the WindowsHost asks for it now.',
          },
          {
            reason: NodeHealthReason.FreeSpaceLow,
            meaning:
              "`SystemDiskLow`=True: the system drive has less than 5 GiB free (the `SystemDiskLow` Event came first, below 10 GiB). The kubelet's own `DiskPressure` is separate.",
            fix: 'Free space (container images: `crictl rmi --prune`; `C:\\k\\logs`; `C:\\Windows\\SoftwareDistribution\\Download`) or grow the volume.',
          },
          {
            reason: NodeHealthReason.ServiceHealthy,
            meaning:
              '`KubeletUnhealthy`, `ContainerRuntimeUnhealthy` or `KubeProxyUnhealthy`=False: the service runs and its health endpoint answers.',
            fix: 'Nothing.',
          },
          {
            reason: NodeHealthReason.WaitingForPodNetwork,
            meaning:
              "`KubeProxyUnhealthy`=False: kube-proxy runs and waits for the node's pod network (its HNS network appears with the first pod, or when flanneld makes it); kube-proxy serves its health endpoint only once the network exists.",
            fix: 'Nothing; `HNSNetworkMissing` says when a network that existed is gone.',
          },
          {
            reason: NodeHealthReason.NoRestartLoop,
            meaning: '`FrequentServiceRestart`=False.',
            fix: 'Nothing.',
          },
          {
            reason: NodeHealthReason.NetworkPresent,
            meaning:
              '`HNSNetworkMissing`=False: the network exists, or is not created yet (the CNI plugin creates it with the first pod).',
            fix: 'Nothing.',
          },
          {
            reason: NodeHealthReason.NoStaleEndpoints,
            meaning:
              "`StaleHNSEndpoints`=False: every pod endpoint on winfleet's pod network belongs to a pod on this node.",
            fix: 'Nothing.',
          },
          { reason: NodeHealthReason.ClockInSync, meaning: '`ClockSkew`=False.', fix: 'Nothing.' },
          {
            reason: NodeHealthReason.CertificateValid,
            meaning: '`KubeletCertificateExpiring`=False; the message says until when.',
            fix: 'Nothing.',
          },
          {
            reason: NodeHealthReason.NoRebootPending,
            meaning: '`RebootPending`=False.',
            fix: 'Nothing.',
          },
          {
            reason: NodeHealthReason.FreeSpaceSufficient,
            meaning: '`SystemDiskLow`=False; the message says how much is free.',
            fix: 'Nothing.',
          },
        ],
      },
    ],
  },
  {
    title: 'Event reasons',
    blocks: [
      'Besides the failure reasons above (Warning, one per failure, counted while it repeats):',
      {
        events: true,
        rows: [
          {
            reason: EventReason.HostKeyPinned,
            type: 'Normal',
            meaning:
              "The host's SSH host key was pinned on first contact (or on `winfleet.io/trust-host-key`).",
            fix: "Compare the fingerprint with the host's, if you want to be sure.",
          },
          {
            reason: EventReason.Bootstrapped,
            type: 'Normal',
            meaning: 'The agent configured the services; the Node is awaited.',
            fix: 'Nothing.',
          },
          {
            reason: EventReason.LeftDomain,
            type: 'Normal',
            meaning:
              "On removal, the host was taken out of its pool's Active Directory domain locally, without credentials, and restarts in workgroup `WORKGROUP`.",
            fix: 'Nothing.',
          },
          {
            reason: EventReason.ComputerAccountLeftEnabled,
            type: 'Warning',
            meaning:
              'The removed host left its domain without credentials, so its computer account (named) is still enabled there.',
            fix: "As an AD admin: `Disable-ADAccount -Identity 'NAME$'` or `Remove-ADComputer`.",
          },
          {
            reason: EventReason.DomainJoinSkipped,
            type: 'Warning',
            meaning:
              "The host's pool has `spec.activeDirectory`, but the host joined the cluster before it, outside any domain; a new bootstrap configured it as it is (no rename, join or restart outside the pool's rollout).",
            fix: 'Remove the WindowsHost and add it again to join it to the domain under a valid name.',
          },
          {
            reason: EventReason.PayloadPulled,
            type: 'Normal',
            meaning:
              "With a registry payload, the host's agent pulled the payload files it lacked from the registry itself (`winfleet-agent pull-payload`); the operator sent only the agent, its service shim and the config. The message counts files and bytes.",
            fix: 'Nothing.',
          },
          {
            reason: EventReason.PayloadPushFallback,
            type: 'Warning',
            meaning:
              "The host cannot reach the payload registry (the message quotes the agent's error) while the operator can: the operator pushed the missing files over SFTP instead. The Bootstrapped condition's message says the same.",
            fix: "Let the host reach the registry (or a mirror) to spare the operator's bandwidth; it works meanwhile.",
          },
          {
            reason: EventReason.AgentNotReporting,
            type: 'Warning',
            meaning:
              'The agent has not applied the services version in time; the host is configured again.',
            fix: 'If it repeats (the count goes up), read the agent log on the host.',
          },
          {
            reason: EventReason.Upgrading,
            type: 'Normal',
            meaning: 'A new services version is rolling out to the Node.',
            fix: 'Nothing.',
          },
          {
            reason: EventReason.NodeReady,
            type: 'Normal',
            meaning: "The host's Node is Ready.",
            fix: 'Nothing.',
          },
          {
            reason: EventReason.Deconfigured,
            type: 'Normal',
            meaning:
              "The deleted host's services were removed from it. For a Pull-mode host, by its agent, which says what Windows deletes at the next boot (its own executable and its service shim, which run until it exits).",
            fix: 'Nothing; reboot the machine to delete those, or delete the machine.',
          },
          {
            reason: EventReason.DeconfigureRequested,
            type: 'Normal',
            meaning:
              "A Pull-mode host's Node is drained and its agent was asked to remove winfleet from the host.",
            fix: 'Nothing.',
          },
          {
            reason: EventReason.PodEvicted,
            type: 'Normal',
            meaning: "Removal evicted a pod from the host's node; the message names it.",
            fix: 'Nothing; its controller places it elsewhere (a pod without one, evicted on `winfleet.io/drain-unmanaged-pods`, is gone).',
          },
          {
            reason: EventReason.Rejoining,
            type: 'Normal',
            meaning: "A rebuilt host's stale Node was deleted on `winfleet.io/rejoin`.",
            fix: 'Nothing.',
          },
          {
            reason: EventReason.CSRApproved,
            type: 'Normal',
            meaning: 'A kubelet or kube-proxy CSR of the host was approved.',
            fix: 'Nothing.',
          },
          {
            reason: EventReason.CSRDenied,
            type: 'Warning',
            meaning: 'A kubelet or kube-proxy CSR of the host was denied; the message says why.',
            fix: "Check the host's node name and addresses.",
          },
          {
            reason: EventReason.ServingAddressesChanged,
            type: 'Normal',
            meaning: "The admin's `winfleet.io/allow-serving-addresses` was applied.",
            fix: 'Nothing.',
          },
          {
            reason: EventReason.ServingAddressesRefused,
            type: 'Warning',
            meaning: 'That annotation was refused; the message says which address and why.',
            fix: 'Fix the annotation.',
          },
          {
            reason: EventReason.NodeLabelsRefused,
            type: 'Warning',
            meaning:
              "The WindowsHost's `spec.labels` has keys a kubelet may not set on its own Node under NodeRestriction (`node-restriction.kubernetes.io/…`, `node-role.kubernetes.io/…`, other `kubernetes.io`/`k8s.io` keys); they are left off the Node (a host stored before the CRD refused them).",
            fix: 'Remove them from `spec.labels`; label the Node yourself (`kubectl label node`) if it should have them.',
          },
          {
            reason: EventReason.BootstrapAutoApproval,
            type: 'Warning',
            meaning:
              "The cluster auto-approves node client CSRs of any bootstrap token, which defeats winfleet's checks.",
            fix: 'Remove the binding the message names.',
          },
          {
            reason: EventReason.UserOwned,
            type: 'Normal',
            meaning:
              "A RuntimeClass of winfleet's name exists and is not winfleet's; it is left alone.",
            fix: 'Delete it if winfleet should manage it.',
          },
          {
            reason: EventReason.InvalidConfig,
            type: 'Warning',
            meaning:
              '`winfleet-config` does not match its schema; the message lists each field. The previous configuration stays in force.',
            fix: 'Fix the fields named.',
          },
          {
            reason: EventReason.MissingConfig,
            type: 'Warning',
            meaning:
              '`winfleet-config` was deleted or lacks its `config.yaml` key; the last good configuration stays in force (`/config` on the status server says so).',
            fix: 'Restore the ConfigMap, or rename the key the message names (`config.yml` → `config.yaml`).',
          },
          {
            reason: EventReason.InvalidEntry,
            type: 'Warning',
            meaning: 'An entry of the `windows-instances` ConfigMap is invalid.',
            fix: 'Fix the entry named.',
          },
          {
            reason: NodeHealthEventReason.SystemDiskLow,
            type: 'Warning',
            meaning:
              'On the Node, from its agent: the system drive has less than 10 GiB free (once per episode); below 5 GiB the Node gets condition `SystemDiskLow`.',
            fix: 'Free space or grow the volume (see `FreeSpaceLow` above).',
          },
          {
            reason: NodeHealthEventReason.ServiceRestarted,
            type: 'Warning',
            meaning:
              'On the Node, from its agent: a node service (kubelet, containerd, kube-proxy, csi-proxy) ended and was started again since the last check, by its recovery actions or by the agent; the message counts its restarts in the restart-loop window.',
            fix: "Nothing for one restart. Several: read the service's log under `C:\\k\\logs`; more than 5 in 10 minutes becomes `FrequentServiceRestart`.",
          },
          {
            reason: NodeHealthEventReason.DefenderThreatDetected,
            type: 'Warning',
            meaning:
              'On the Node, from its agent: Microsoft Defender reports an active detection (`Get-MpThreatDetection`); the message names the threat, its ThreatID, severity, status, detection time and files. Once per detection, across agent restarts.',
            fix: 'Investigate on the host (`Get-MpThreatDetection`); if it is compromised, drain it (`kubectl drain`) and rebuild it.',
          },
        ],
      },
    ],
  },
  {
    title: 'gMSA readiness reasons',
    blocks: [
      "Each Windows node's agent labels its Node `winfleet.io/gmsa-ready` (`true` or `false`) and says\nwhy in the annotation `winfleet.io/gmsa-readiness` (`<Reason>: <message>`); see\n[gMSA workloads](operating.md#gmsa-workloads). Pods that name a gMSA credential spec are scheduled only on\n`true` nodes.",
      {
        events: false,
        rows: [
          {
            reason: GmsaReadinessReason.DomainJoined,
            meaning:
              'Ready: the host is joined to an Active Directory domain and has Container Credential Guard.',
            fix: 'Nothing; the gMSA must still let this host retrieve its password (`PrincipalsAllowedToRetrieveManagedPassword`).',
          },
          {
            reason: GmsaReadinessReason.CcgPluginRegistered,
            meaning:
              'Ready: the host is not joined, and a CCG plug-in is registered (gMSA with a portable identity).',
            fix: "Nothing; the plug-in's secret must work for the credential spec's `HostAccountConfig`.",
          },
          {
            reason: GmsaReadinessReason.CcgUnavailable,
            meaning:
              'Not ready: no `ccg.exe` or no `HKLM:\\SYSTEM\\CurrentControlSet\\Control\\CCG\\COMClasses` (Windows before Server 2019, or no Containers feature).',
            fix: '`Install-WindowsFeature Containers` (a reboot) on Windows Server 2019 or later.',
          },
          {
            reason: GmsaReadinessReason.NotDomainJoined,
            meaning: 'Not ready: the host is in a workgroup and no CCG plug-in is registered.',
            fix: 'Join the host to the domain, or install a CCG plug-in.',
          },
          {
            reason: GmsaReadinessReason.CcgPluginNotRegistered,
            meaning:
              'Not ready: the host is not joined, and a CCG plug-in is listed under `CCG\\COMClasses` whose COM class is not registered (`HKEY_CLASSES_ROOT\\CLSID\\{clsid}`).',
            fix: 'Reinstall the plug-in.',
          },
          {
            reason: GmsaReadinessReason.CheckFailed,
            meaning:
              "Not ready: the agent could not read the host's facts; the message has the error.",
            fix: 'Read the agent log on the host (`C:\\k\\logs`); the agent tries again within five minutes.',
          },
        ],
      },
    ],
  },
  {
    title: 'Image pre-pull reasons',
    blocks: [
      'A node of a pool with `spec.prePull` ([Images before pods](operating.md#images-before-pods)) pulls\nthose images after its join, an upgrade or a reboot; its agent reports the Node condition\n`ImagesPrePulled` (`kubectl describe node`). No reason keeps the node out of service: a failed pull\nis reported, never waited on.',
      {
        events: false,
        rows: [
          {
            reason: PrePullReason.PrePulled,
            meaning: 'True: every image of `spec.prePull.images` is in containerd.',
            fix: 'Nothing.',
          },
          {
            reason: PrePullReason.PrePulling,
            meaning:
              'False while the pulls run (at most `spec.prePull.maxParallel` at once); the message counts the images done and, like every `ImagesPrePulled` message, ends with the boot and services version the pulls are for. Meanwhile the node carries the taint `winfleet.io/pre-pulling:NoSchedule`, and a rollout waits before it uncordons the node.',
            fix: 'Nothing; it ends by `spec.prePull.timeoutSeconds` at the latest, and the operator lifts the taint (and a rollout goes on) two minutes after that even if the agent never reports again.',
          },
          {
            reason: PrePullReason.PrePullFailed,
            meaning:
              "False: an image could not be pulled; the message names it with containerd's error (`not found`: the registry has no such image or tag; an authorization or network error; a reference the image address policy refuses). The other images were pulled.",
            fix: 'Correct `spec.prePull.images` (or the registry, its mirror or pull secret); the agent tries again after the next upgrade or reboot.',
          },
          {
            reason: PrePullReason.PrePullNoSpace,
            meaning:
              "False: the images' compressed size, three times over (the downloaded layers and their unpacked copies), is more than the free space of containerd's volume; nothing was pulled.",
            fix: 'Free space (`crictl rmi --prune`, `C:\\k\\logs`) or grow the volume, or list fewer images.',
          },
          {
            reason: PrePullReason.PrePullTimedOut,
            meaning:
              'False: the pulls outlasted `spec.prePull.timeoutSeconds`; the node takes pods anyway, and their own pulls go on.',
            fix: 'Raise `timeoutSeconds`, use a registry mirror closer to the hosts, or list fewer images.',
          },
        ],
      },
    ],
  },
  {
    title: 'Pool reasons',
    blocks: [
      'The pool controller sets these on each WindowsNodePool. The implicit default pool (hosts no\npool selects) has no object: its Degraded reasons come as Warning Events on the hosts\nconcerned, with the message prefixed `default pool`.',
      "`kubectl get windowsnodepools` shows each pool's Available status, Progressing reason and Degraded status (`-o wide` adds the Degraded reason); `kubectl describe windowsnodepool` shows the messages, which name the hosts, the step or the field. Timeouts also record a Warning Event of the same reason on the host.",
      {
        events: false,
        rows: [
          {
            reason: ConditionReason.MinimumHostsAvailable,
            meaning:
              "Available=True: at most `spec.maxUnavailable` of the pool's hosts are NotReady or in a change.",
            fix: 'Nothing.',
          },
          {
            reason: ConditionReason.MinimumHostsUnavailable,
            meaning:
              'Available=False: more hosts are NotReady or in a change than `spec.maxUnavailable` allows (the message names them); no change starts until enough are back.',
            fix: 'Bring the NotReady hosts back (`kubectl describe node`); the rollout goes on by itself.',
          },
          {
            reason: ConditionReason.RollingOut,
            meaning:
              'Progressing=True: a change (payload, patches, reboot) is rolling through the pool; the message names the hosts changing, with their step, and those waiting, with why.',
            fix: 'Nothing; watch it with `kubectl get windowsnodepools -w`.',
          },
          {
            reason: ConditionReason.RolloutComplete,
            meaning: 'Progressing=False: every host of the pool has its change.',
            fix: 'Nothing.',
          },
          {
            reason: ConditionReason.Paused,
            meaning:
              'Progressing=Unknown: `spec.paused` is true; no change starts, hosts already in one finish it.',
            fix: 'Set `spec.paused: false` to go on.',
          },
          {
            reason: ConditionReason.WaitingForWindow,
            meaning:
              'Progressing=False: changes wait for `spec.maintenanceWindow`; the message says when it opens next.',
            fix: 'Wait, or widen or remove the window.',
          },
          {
            reason: ConditionReason.RolloutStopped,
            meaning:
              "Progressing=False: a host's change stopped with `maxUnavailable` hosts already set aside (Degraded says where and why), or the hosts left are selected by more than one pool; no other host starts a change.",
            fix: 'Fix what Degraded names.',
          },
          {
            reason: ConditionReason.HostSetAside,
            meaning:
              "Degraded=True (the pool's and the host's), and a Warning Event on the WindowsHost: the host's change stopped at a step (the change ended, its node was uncordoned), or Windows still reported a reboot pending after the reboot winfleet made for it. No change starts on it; the rollout goes on with the other hosts.",
            fix: 'Fix the host (the message says what stopped, or check its pending reboot), then run the `kubectl annotate --overwrite windowshost … winfleet.io/retry-rollout=$(date +%s)` the message prints.',
          },
          {
            reason: ConditionReason.MigrationWaiting,
            meaning:
              "Migrated=False on a pool with `spec.replaces`: the pool's own hosts are not all Ready yet (or it has none; once an old host is drained, none of them is Ready); nothing more of the old pool is touched, and old hosts already drained are uncordoned.",
            fix: 'Join the new hosts and let them become Ready (`kubectl get windowshosts`); the migration starts by itself.',
          },
          {
            reason: ConditionReason.MigrationInProgress,
            meaning:
              "Migrated=False: the old pool's hosts are cordoned and drained through the old pool's rollout, at most its `maxUnavailable` at a time and never past a PodDisruptionBudget; `status.migration` counts the hosts drained. Evicted pods are recreated on the new build.",
            fix: 'Nothing; watch it with `kubectl get windowsnodepools -o wide -w`.',
          },
          {
            reason: ConditionReason.MigrationBlocked,
            meaning:
              "Migrated=False: a workload with pods on the old pool cannot run on the new pool's build (an image with no variant for it, a build pinned by nodeSelector, affinity or RuntimeClass, an image that could not be looked up); the message and `status.migration.blockedWorkloads` name each one and why. Nothing more is cordoned and the old pool's hosts are uncordoned, so it keeps serving.",
            fix: 'Give the workload an image built for the new build (or remove the pin), or move it off the old pool; `winfleet migrate plan --to <release>` shows the same verdicts. The migration goes on by itself.',
          },
          {
            reason: ConditionReason.MigrationComplete,
            meaning:
              "Migrated=True: every host of the old pool is drained and left cordoned; its workloads run on the new pool's hosts.",
            fix: 'Delete the old hosts (`kubectl delete windowshost …`), then remove `spec.replaces` and delete the old pool.',
          },
          {
            reason: ConditionReason.HostInMultiplePools,
            meaning:
              'Degraded=True: a WindowsHost is selected by this pool and another (the message names it and the other pools); no change starts on it.',
            fix: "Change the host's labels or a pool's selector so that one pool selects it.",
          },
          {
            reason: ConditionReason.DrainTimedOut,
            meaning:
              "Degraded=True: draining a host's node did not finish within `spec.drainTimeout` (the message names the pods left). Nothing was forced; the node stays cordoned and no other host starts.",
            fix: 'Let the PodDisruptionBudgets allow the evictions (scale up, fix unready pods) or move the pods, then run the `kubectl annotate --overwrite windowshost … winfleet.io/retry-rollout=$(date +%s)` the message prints.',
          },
          {
            reason: ConditionReason.ApplyTimedOut,
            meaning:
              "Degraded=True: the agent did not apply the change (payload, Windows updates) within `spec.readyTimeout`; the message has the agent's last error.",
            fix: 'Read the agent log on the host (`C:\\k\\logs`), fix the cause, then run the retry command the message prints.',
          },
          {
            reason: ConditionReason.RebootTimedOut,
            meaning:
              "Degraded=True: a host did not come back from its reboot within `spec.readyTimeout` (its Node's boot id did not change). The change goes on by itself when the host comes back.",
            fix: "Check the host's console; the retry command the message prints asks again.",
          },
          {
            reason: ConditionReason.ReadyTimedOut,
            meaning:
              "Degraded=True: a host's Node was not Ready on the new version within `spec.readyTimeout`. The change goes on by itself once it is.",
            fix: '`kubectl describe node` and the agent log say why; then the retry command the message prints.',
          },
          {
            reason: ConditionReason.KubeletVersionSkew,
            meaning:
              "Degraded=True: the payload's kubelet is newer than the API server, or more than three minor versions older (the Kubernetes skew policy); no host gets the payload. Patches and reboots still roll.",
            fix: 'Run the operator with a payload for the range the message gives, or upgrade the control plane first.',
          },
          {
            reason: ConditionReason.InvalidSpec,
            meaning:
              'Degraded=True, Progressing=False: a spec field is wrong in a way the API server cannot check (an unknown time zone); the message names it. No change starts. Also Migrated=False when `spec.replaces` cannot be followed (it names the pool itself, a pool that does not exist, one that replaces this pool, one that another pool replaces too, or one whose hosts run the same build): no host of the old pool is touched, and the pool’s own rollout goes on.',
            fix: 'Fix the field named.',
          },
        ],
      },
      'Events on the WindowsHost, besides the timeouts above:',
      {
        events: true,
        rows: [
          {
            reason: EventReason.RolloutStarted,
            type: 'Normal',
            meaning:
              'The host took a slot for a change and its node is being cordoned; the message lists what changes.',
            fix: 'Nothing.',
          },
          {
            reason: EventReason.Rebooting,
            type: 'Normal',
            meaning: "winfleet asked the host's agent to reboot it (at most once per change).",
            fix: 'Nothing.',
          },
          {
            reason: EventReason.RolloutFinished,
            type: 'Normal',
            meaning: 'The host is Ready with the change and uncordoned.',
            fix: 'Nothing.',
          },
          {
            reason: EventReason.RolloutResumed,
            type: 'Normal',
            meaning:
              'A stopped change goes on: the host got there after all, or `winfleet.io/retry-rollout` was set to a new value.',
            fix: 'Nothing.',
          },
          {
            reason: EventReason.HostUnhealthy,
            type: 'Warning',
            meaning:
              "A condition of the pool's `spec.health.unhealthyConditions` held past its timeout (or the Node never reported Ready within `nodeStartupTimeout`); the message names it and the rung remediation starts with.",
            fix: 'Nothing, unless it repeats; `winfleet.io/skip-remediation` on the WindowsHost leaves it alone.',
          },
          {
            reason: EventReason.RemediationEscalated,
            type: 'Warning',
            meaning:
              'A rung (RestartService, Rebootstrap, Reboot) did not repair the host within its timeout, or failed; the next rung starts.',
            fix: 'Nothing; the message says why.',
          },
          {
            reason: EventReason.RemediationRebootstrap,
            type: 'Normal',
            meaning:
              'Rung Rebootstrap: winfleet runs the agent bootstrap over SSH again (services and configuration applied again), whatever the Node shows.',
            fix: 'Nothing; a failed bootstrap shows as a failure reason above and escalates to the next rung.',
          },
          {
            reason: EventReason.RemediationRungSkipped,
            type: 'Normal',
            meaning:
              'A rung the host cannot take was skipped, recorded `Skipped` in `status.remediation.lastActions` with why: a Pull-mode host is never reached over SSH, so Rebootstrap is skipped and Reboot (through its agent) comes next.',
            fix: 'Nothing.',
          },
          {
            reason: EventReason.HostRecovered,
            type: 'Normal',
            meaning:
              'The host is healthy again; its remediation ends (a remediation cordon is lifted).',
            fix: 'Nothing.',
          },
          {
            reason: EventReason.RemediationFailed,
            type: 'Warning',
            meaning:
              'Every rung ran and the host is still unhealthy: the node stays cordoned, the host is Degraded (same reason).',
            fix: 'Repair the host by hand; winfleet lifts its cordon once it is healthy.',
          },
          {
            reason: EventReason.TooManyUnhealthy,
            type: 'Warning',
            meaning:
              'On the pool (Degraded=True, same reason): more hosts are unhealthy than `spec.health.maxUnhealthy`; no host is repaired until few enough are.',
            fix: 'Look for a common cause (network, control plane); raise `maxUnhealthy` only if the failures are really independent.',
          },
        ],
      },
    ],
  },
];
