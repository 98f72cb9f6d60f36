/**
 * The host-side checks of `winfleet check`, as a pure function of what the host reported
 * (host-facts and preflight-facts) and what the caller knows (domain join asked, the clock
 * offset measured, the API server's host, whether the host is already a node). The minimums
 * are Rancher's for Windows worker nodes (2 CPUs, 5 GB memory, 50 GB disk); the 15-character
 * limit is the NetBIOS computer name's, which Active Directory uses for the computer account.
 */
import { defaultHealthSettings } from '../../node-health/detector.ts';
import { windowsReleases } from '../../windows/builds.ts';
import { type PatchRequirement, patchRequirementsFor } from '../../windows/patch-levels.ts';
import { type CheckResult, fail, pass, warn } from './check-report.ts';
import type { HostBasics, HyperVFacts, PreflightFacts } from './preflight-facts.ts';

const GiB = 1024 ** 3;
export const minCpus = 2;
export const minMemoryBytes = 5 * GiB;
/**
 * TotalPhysicalMemory is what Windows can use: a few MB to a few hundred below what the VM was
 * given (firmware and reserved memory). A 5 GiB host reads about 4.8-4.99 GiB, and passes.
 */
export const memoryAllowanceBytes = 0.25 * GiB;
export const minFreeDiskBytes = 50 * GiB;
/** The NetBIOS name limit: Active Directory computer accounts (sAMAccountName) use it. */
export const maxDomainHostnameLength = 15;
/** The same limit as the agent's ClockSkew condition (src/node-health/detector.ts). */
export const maxClockSkewSeconds = defaultHealthSettings.clockSkewSeconds;

export interface ClockReading {
  /** Host clock minus the reference clock, ms (positive: the host is ahead). */
  offsetMs: number;
  /** How far off the measurement itself may be (round trip, 1 s Date resolution). */
  uncertaintyMs: number;
  /** "the API server" or "this machine". */
  reference: string;
}

/**
 * What the cluster-side cni check learned of the pod network: whether the node's network in the
 * mode it joins with is an HNS overlay (VXLAN), which needs a patch level on Windows Server
 * 2019 (src/windows/patch-levels.ts).
 */
export interface ClusterNetwork {
  /**
   * true: an HNS Overlay network (flannel-vxlan, ovn-hybrid, Calico VXLAN); false: none
   * (flannel-host-gw, routed, Calico BGP, Antrea); undefined: not known (src/network/
   * network-mode.ts usesHnsOverlay).
   */
  overlay: boolean | undefined;
  /** What was seen, or why nothing was: "Flannel VXLAN (ConfigMap kube-flannel/kube-flannel-cfg)". */
  seen: string;
}

/** @package */
export interface HostCheckInput {
  basics: HostBasics;
  facts: PreflightFacts;
  /** --domain-join: the host will be joined to a domain. */
  domainJoin: boolean;
  clock: ClockReading;
  /** The API server's host name or address, for the proxy bypass check; undefined without a cluster. */
  apiServerHost?: string;
  /** The host is a WindowsHost with a Node (its kubelet holds 10250, the join made its firewall rule). */
  joined: boolean;
  /** The cluster's pod network, for the patch levels its features need. */
  network: ClusterNetwork;
  /** --hyperv: what hyperv-facts read (the hosts will be in a pool with spec.isolation.hyperV). */
  hyperV?: HyperVFacts;
}

const gib = (bytes: number) => `${(bytes / GiB).toFixed(1)} GiB`;

export function hostChecks(input: HostCheckInput): CheckResult[] {
  return [
    windowsBuild(input.basics),
    patchLevel(input.basics, input.network),
    containersFeature(input.basics),
    administrator(input.facts),
    cpus(input.facts),
    memory(input.facts),
    disk(input.basics),
    hostnameLength(input),
    clockSkew(input.clock),
    port10250(input),
    firewall10250(input),
    proxy(input),
    ...(input.hyperV ? [hyperVRole(input.hyperV)] : []),
  ];
}

const installHyperV =
  'Install-WindowsFeature -Name Hyper-V -IncludeManagementTools, then Restart-Computer';

/**
 * Hyper-V isolation needs the Hyper-V role with its hypervisor running; on a VM, the role
 * installs and the hypervisor starts only when the VM's host exposes virtualization extensions
 * (nested virtualization). Without the role, VirtualizationFirmwareEnabled says whether it can
 * be installed; a hypervisor present then means a VM.
 */
function hyperVRole(facts: HyperVFacts): CheckResult {
  const { feature, hypervisorPresent, virtualizationFirmwareEnabled } = facts;
  if (feature === 'Installed' && hypervisorPresent)
    return pass('hyperv', 'The Hyper-V role is Installed and the hypervisor runs');
  if (feature === 'Installed' || feature === 'InstallPending')
    return (feature === 'InstallPending' ? warn : fail)(
      'hyperv',
      `The Hyper-V role is ${feature} but no hypervisor runs: Hyper-V isolated pods cannot start (The virtual machine could not be started because a required feature is not installed)`,
      'Restart the host; if it is a VM, expose virtualization extensions to it (nested virtualization) first; on hardware, enable VT-x/AMD-V in the firmware',
    );
  if (feature === 'Unknown')
    return fail(
      'hyperv',
      'Get-WindowsFeature is not available, so the Hyper-V role cannot be read',
      'Use Windows Server 2019, 2022 or 2025 with the Hyper-V role',
    );
  if (virtualizationFirmwareEnabled)
    return fail(
      'hyperv',
      `The Hyper-V role is ${feature}, not Installed: the pool's Hyper-V isolation needs it`,
      installHyperV,
    );
  return fail(
    'hyperv',
    hypervisorPresent
      ? `The Hyper-V role is ${feature}, and this VM's processor has no virtualization extensions (VirtualizationFirmwareEnabled False): its host does not expose nested virtualization`
      : `The Hyper-V role is ${feature}, and virtualization is off in the firmware (VirtualizationFirmwareEnabled False)`,
    hypervisorPresent
      ? `Expose virtualization extensions to the VM (on a Hyper-V host: the VM processor's ExposeVirtualizationExtensions, set while the VM is off; in a cloud: a VM size with nested virtualization), then ${installHyperV}`
      : `Enable VT-x/AMD-V in the firmware, then ${installHyperV}`,
  );
}

function windowsBuild(basics: HostBasics): CheckResult {
  const v = basics.osVersion;
  const build = `${v.major}.${v.minor}.${v.build}`;
  const full = `${build}.${v.ubr}`;
  const release = windowsReleases.find((r) => r.build === build);
  const supported = windowsReleases.map((r) => `${r.name} (${r.build})`).join(', ');
  if (release)
    return pass(
      'windows-build',
      `${v.productName || 'Windows'} ${full}: Windows Server ${release.name}, supported`,
    );
  return fail(
    'windows-build',
    `${v.productName || 'Windows'} ${full} is not a Windows Server release winfleet supports (${supported})`,
    `Use Windows Server 2019, 2022 or 2025 (LTSC); annual-channel and client builds have no matching container images`,
  );
}

/** Whether the cluster uses the feature a requirement is for: true, false or not known. */
function featureUsed(requirement: PatchRequirement, network: ClusterNetwork): boolean | undefined {
  switch (requirement.feature) {
    case 'overlay':
      return network.overlay;
  }
}

/**
 * The host's patch level (UBR) against each requirement of its release: fail when the cluster
 * uses the feature and the host is below it, warn when the cluster's use is not known, pass
 * when the host is at or above it or the cluster does not use the feature.
 * @package
 */
export function patchLevel(basics: HostBasics, network: ClusterNetwork): CheckResult {
  const v = basics.osVersion;
  const build = `${v.major}.${v.minor}.${v.build}`;
  const full = `${build}.${v.ubr}`;
  const release = windowsReleases.find((r) => r.build === build);
  if (!release)
    return pass(
      'patch-level',
      `No patch level to judge: ${full} is not a supported release (see windows-build)`,
    );
  const requirements = patchRequirementsFor(build);
  if (requirements.length === 0)
    return pass(
      'patch-level',
      `${full}: no feature winfleet's nodes use needs a patch level on Windows Server ${release.name}`,
    );
  const needs = (r: PatchRequirement) => `${r.title} needs ${r.build}.${r.minUbr} (${r.kb})`;
  const below = requirements.filter((r) => v.ubr < r.minUbr);
  const used = below.filter((r) => featureUsed(r, network) === true);
  const unknown = below.filter((r) => featureUsed(r, network) === undefined);
  const fix = (list: PatchRequirement[]) =>
    `Install ${list.map((r) => r.kb).join(' and ')} or any later cumulative update for Windows Server ${release.name} (Windows Update, sconfig option 6, or the Microsoft Update Catalog), so the build is at least ${list.map((r) => `${r.build}.${r.minUbr}`).join(' / ')}; then restart the host`;
  if (used.length > 0)
    return fail(
      'patch-level',
      `${full} is below what the cluster's pod network needs: ${used.map(needs).join('; ')}, and the cluster uses it (${network.seen})`,
      fix(used),
    );
  if (unknown.length > 0)
    return warn(
      'patch-level',
      `${full} is too old for ${unknown.map(needs).join('; ')}; whether the cluster uses it is not known (${network.seen})`,
      `${fix(unknown)}; or make sure the cluster does not use it`,
    );
  const met = requirements.filter((r) => v.ubr >= r.minUbr);
  const unused = below.filter((r) => featureUsed(r, network) === false);
  return pass(
    'patch-level',
    [
      ...met.map((r) => `${full} has ${r.kb} for ${r.title} (${r.build}.${r.minUbr} or later)`),
      ...unused.map(
        (r) =>
          `${full} is below ${r.build}.${r.minUbr} (${r.kb}) for ${r.title}, which the cluster does not use (${network.seen})`,
      ),
    ].join('; '),
  );
}

function containersFeature(basics: HostBasics): CheckResult {
  const state = basics.containersFeature;
  if (state === 'Installed')
    return pass('containers-feature', 'The Containers feature is Installed');
  if (state === 'InstallPending')
    return warn(
      'containers-feature',
      'The Containers feature is InstallPending: installed, waiting for a restart',
      'Restart the host (Restart-Computer) before joining it',
    );
  if (state === 'Unknown')
    return fail(
      'containers-feature',
      'Get-WindowsFeature is not available, so the Containers feature cannot be read (not Windows Server, or Server Manager removed)',
      'Use Windows Server 2019, 2022 or 2025 with the Containers feature',
    );
  return fail(
    'containers-feature',
    `The Containers feature is ${state}, not Installed: containerd cannot run containers without the Host Compute Service it brings`,
    state === 'Removed'
      ? 'Its payload was removed: Install-WindowsFeature -Name Containers -Source <WinSxS or install media>, then restart the host'
      : 'Install-WindowsFeature -Name Containers, then Restart-Computer (or let the join do it: config hosts.installContainersFeature: true restarts the host)',
  );
}

function administrator(facts: PreflightFacts): CheckResult {
  if (facts.administrator)
    return pass(
      'administrator',
      `${facts.userName} runs with BUILTIN\\Administrators (S-1-5-32-544)`,
    );
  return fail(
    'administrator',
    `${facts.userName} is not in BUILTIN\\Administrators (S-1-5-32-544) in this session: the join installs services and writes C:\\k`,
    'Log in as a member of Administrators (--ssh-user, or the WindowsHost spec.username); for a local account other than the built-in Administrator, OpenSSH gives a full token only when LocalAccountTokenFilterPolicy is 1',
  );
}

function cpus(facts: PreflightFacts): CheckResult {
  const n = facts.logicalProcessors;
  if (n >= minCpus) return pass('cpu', `${n} logical processors (at least ${minCpus})`);
  return fail(
    'cpu',
    `${n} logical processor${n === 1 ? '' : 's'}, fewer than the ${minCpus} a Windows node needs (Rancher's minimum)`,
    `Give the host at least ${minCpus} CPUs`,
  );
}

function memory(facts: PreflightFacts): CheckResult {
  const m = facts.memoryBytes;
  if (m >= minMemoryBytes - memoryAllowanceBytes)
    return pass('memory', `${gib(m)} of memory (at least ${gib(minMemoryBytes)})`);
  return fail(
    'memory',
    `${gib(m)} of memory (TotalPhysicalMemory), less than the ${gib(minMemoryBytes)} a Windows node needs (Rancher's minimum)`,
    `Give the host at least ${gib(minMemoryBytes)} of memory`,
  );
}

function disk(basics: HostBasics): CheckResult {
  const free = basics.freeBytes;
  if (free >= minFreeDiskBytes)
    return pass('disk', `${gib(free)} free on C: (at least ${gib(minFreeDiskBytes)})`);
  return fail(
    'disk',
    `${gib(free)} free on C:, less than the ${gib(minFreeDiskBytes)} a Windows node needs (Rancher's minimum; Windows container images are large)`,
    `Free space on C: or grow the disk to have at least ${gib(minFreeDiskBytes)} free`,
  );
}

function hostnameLength(input: HostCheckInput): CheckResult {
  const { hostname } = input.basics;
  const { partOfDomain, domain, netbiosName } = input.facts;
  const domainRelated = partOfDomain || input.domainJoin;
  const why = partOfDomain
    ? `the host is joined to ${domain}`
    : 'it will be domain-joined (--domain-join)';
  if (hostname.length <= maxDomainHostnameLength)
    return pass(
      'hostname-length',
      `${hostname} has ${hostname.length} characters, within the ${maxDomainHostnameLength} of a NetBIOS name${domainRelated ? ` (${why})` : ''}`,
    );
  if (!domainRelated)
    return pass(
      'hostname-length',
      `${hostname} has ${hostname.length} characters; the host is in a workgroup, so only its NetBIOS name ${netbiosName} is cut to ${maxDomainHostnameLength} (pass --domain-join if it will join a domain)`,
    );
  return fail(
    'hostname-length',
    `${hostname} has ${hostname.length} characters and ${why}: an Active Directory computer account uses the NetBIOS name, at most ${maxDomainHostnameLength} characters, so it becomes ${netbiosName} and gMSA and Kerberos see a name other than the node's`,
    `Rename the host to at most ${maxDomainHostnameLength} characters (Rename-Computer -NewName <name> -Restart) before joining it to the domain and to the cluster`,
  );
}

function clockSkew(clock: ClockReading): CheckResult {
  const seconds = Math.abs(clock.offsetMs) / 1000;
  const plusMinus = (clock.uncertaintyMs / 1000).toFixed(1);
  const direction = clock.offsetMs >= 0 ? 'ahead of' : 'behind';
  const seen = `The host's clock is ${seconds.toFixed(1)} s (±${plusMinus} s) ${direction} ${clock.reference}'s`;
  const fix =
    "Sync the host's time: w32tm /resync /force with the Windows Time service running, or configure its source (w32tm /config /manualpeerlist:<ntp server> /syncfromflags:manual /update)";
  if (Math.abs(clock.offsetMs) - clock.uncertaintyMs > maxClockSkewSeconds * 1000)
    return fail(
      'clock-skew',
      `${seen}, more than ${maxClockSkewSeconds} s: certificates and bootstrap tokens fail when clocks disagree`,
      fix,
    );
  if (Math.abs(clock.offsetMs) + clock.uncertaintyMs > maxClockSkewSeconds * 1000)
    return warn('clock-skew', `${seen}, close to the ${maxClockSkewSeconds} s limit`, fix);
  return pass('clock-skew', `${seen} (at most ${maxClockSkewSeconds} s)`);
}

function port10250(input: HostCheckInput): CheckResult {
  const listeners = input.facts.listeners10250;
  if (listeners.length === 0) return pass('port-10250', 'TCP 10250 (the kubelet API) is free');
  const who = listeners
    .map(
      (l) =>
        `${l.processName || 'an exited process'} (pid ${l.owningProcess}) on ${l.localAddress}`,
    )
    .join(', ');
  const foreign = listeners.filter((l) => l.processName.toLowerCase() !== 'kubelet');
  if (foreign.length > 0)
    return fail(
      'port-10250',
      `TCP 10250 is held by ${who}: the kubelet cannot serve its API there`,
      'Stop or move the program holding TCP 10250 (Get-NetTCPConnection -LocalPort 10250 -State Listen shows it)',
    );
  if (input.joined) return pass('port-10250', `TCP 10250 is held by this node's kubelet: ${who}`);
  return warn(
    'port-10250',
    `A kubelet already listens on TCP 10250: ${who}; the host may be a node of another cluster`,
    'Remove the other kubelet (and its node) before joining the host with winfleet',
  );
}

function firewall10250(input: HostCheckInput): CheckResult {
  const inbound = input.facts.firewallRules10250.filter(
    (r) => r.enabled && r.direction === 'Inbound',
  );
  const block = inbound.filter((r) => r.action === 'Block');
  const allow = inbound.filter((r) => r.action === 'Allow');
  if (block.length > 0)
    return fail(
      'firewall-10250',
      `Inbound rule ${block.map((r) => r.name).join(', ')} blocks TCP 10250; a Block rule wins over any Allow rule, so kubectl logs, exec and metrics will time out`,
      `Remove-NetFirewallRule -Name ${block[0]!.name} (or Disable-NetFirewallRule)`,
    );
  if (allow.length > 0)
    return pass(
      'firewall-10250',
      `Inbound TCP 10250 allowed by ${allow.map((r) => r.name).join(', ')}`,
    );
  if (input.joined)
    return fail(
      'firewall-10250',
      'No enabled inbound rule allows TCP 10250: the API server cannot reach the kubelet (kubectl logs, exec and metrics time out)',
      'Let the operator configure the host again (its bootstrap creates rule winfleet-kubelet), or New-NetFirewallRule -Name winfleet-kubelet -Direction Inbound -Protocol TCP -LocalPort 10250 -Action Allow',
    );
  return pass(
    'firewall-10250',
    'No rule for TCP 10250 yet and none blocks it: the join creates the inbound rule winfleet-kubelet',
  );
}

/** Whether a NO_PROXY / bypass list covers `host` (exact, a leading-dot or *. suffix, or *). */
export function bypasses(list: string, host: string): boolean {
  const h = host.toLowerCase();
  return list
    .split(/[,;\s]+/)
    .map((e) => e.trim().toLowerCase())
    .filter(Boolean)
    .some((e) => {
      if (e === '*' || e === h) return true;
      const suffix = e.startsWith('*.') ? e.slice(1) : e.startsWith('.') ? e : undefined;
      return suffix !== undefined && h.endsWith(suffix);
    });
}

/** A list entry starts at the beginning, or after a separator where `scheme=` or `scheme://` follows. */
const proxyEntrySeparator = /([\s;,]+)(?=[A-Za-z][A-Za-z0-9+.-]*(?:=|:\/\/))/;
/** An entry's optional `scheme=` (WinHTTP's per-protocol form) and `scheme://`, then user info up to its last @. */
const proxyUserInfo = /^((?:[A-Za-z][A-Za-z0-9+.-]*=)?(?:[A-Za-z][A-Za-z0-9+.-]*:\/\/)?)[\s\S]*@/;

/**
 * A proxy setting (an HTTP_PROXY URL, a WinHTTP proxy list such as
 * "http=user:pass@proxy:3128;https=proxy:3129") with the user info of every entry replaced by
 * "***": a proxy password is never printed. An entry runs to the next one that starts with a
 * scheme, so a password holding ';', ',' or '@' is masked whole; an entry without a scheme is
 * masked up to its last '@' (more than the user info at worst, never less).
 * @package
 */
export function maskUserInfo(value: string): string {
  return value
    .split(proxyEntrySeparator)
    .map((part, index) => (index % 2 === 1 ? part : part.replace(proxyUserInfo, '$1***@')))
    .join('');
}

/**
 * The host key the host presented, against the key the connection insisted on (a mismatch has
 * already failed the connection, so reaching here with a pin means it matched).
 */
export function hostKeyCheck(
  address: string,
  presented: string,
  pin: { fingerprint: string; source: string } | undefined,
  windowsHost: boolean,
): CheckResult {
  const compare =
    "Compare it with the host's own key on its console: ssh-keygen -lf C:\\ProgramData\\ssh\\ssh_host_ed25519_key.pub";
  if (pin)
    return pass(
      'host-key',
      `${address} presented ${presented}, matching ${pin.source} (checked on connecting)`,
    );
  if (windowsHost)
    return warn(
      'host-key',
      `${address} presented ${presented}; not verified: the WindowsHost has no pinned key yet (the operator pins the first key it sees)`,
      `${compare}; if they differ, something else answers at that address: delete the WindowsHost before the operator joins it`,
    );
  return warn(
    'host-key',
    `${address} presented ${presented}; not verified (no --host-key)`,
    `${compare}, then pass it with --host-key`,
  );
}

function proxy(input: HostCheckInput): CheckResult {
  const { winHttpProxy, proxyEnvironment: env } = input.facts;
  const seen: string[] = [];
  if (winHttpProxy.proxyServer)
    seen.push(
      `WinHTTP proxy ${maskUserInfo(winHttpProxy.proxyServer)} (bypass ${maskUserInfo(winHttpProxy.bypassList ?? 'none')})`,
    );
  for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY'] as const)
    if (env[name]) seen.push(`${name}=${maskUserInfo(env[name])}`);
  if (seen.length === 0)
    return pass(
      'proxy',
      'No proxy: WinHTTP has direct access and HTTP_PROXY/HTTPS_PROXY are not set',
    );
  const text = seen.join('; ');
  const api = input.apiServerHost;
  if (!api) return pass('proxy', `Seen: ${text} (no API server to compare with)`);
  const missing: string[] = [];
  if ((env.HTTPS_PROXY || env.HTTP_PROXY) && !bypasses(env.NO_PROXY ?? '', api))
    missing.push('NO_PROXY');
  if (winHttpProxy.proxyServer && !bypasses(winHttpProxy.bypassList ?? '', api))
    missing.push('the WinHTTP bypass list');
  if (missing.length === 0)
    return pass('proxy', `Seen: ${text}; the API server ${api} bypasses it`);
  return warn(
    'proxy',
    `Seen: ${text}; ${missing.join(' and ')} do${missing.length === 1 ? 'es' : ''} not name the API server ${api}, so the kubelet and containerd may send cluster traffic through the proxy`,
    `Add ${api} (and the service and pod CIDRs) to ${missing.join(' and ')}: [Environment]::SetEnvironmentVariable('NO_PROXY', '<list>', 'Machine') / netsh winhttp set proxy <proxy> bypass-list="<list>"`,
  );
}
