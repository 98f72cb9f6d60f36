/**
 * An address reserved in host-local's store on Windows, as RKE2 and sig-windows-tools reserve
 * kube-proxy's source VIP on an overlay network (sig-windows-tools kubeadm/flannel
 * GetSourceVip; rancher/rke2 pkg/windows ReserveSourceVip): the CNI host-local IPAM plugin run
 * with CNI_COMMAND=ADD and a request naming the pod network, so that the address is held in the
 * same store (C:\var\lib\cni\networks\<network>) the pods' addresses come from and no pod gets
 * it. The request is the CNI 0.2.0 one those scripts send; host-local answers with the
 * address as `ip4.ip` ("10.244.3.2/24"), or with an error object and exit code 1 — "… has been
 * allocated to <id>, duplicate allocation is not allowed" when this id already holds one, whose
 * address is then the one reserved.
 */
import { WinfleetError } from '../../errors/catalog.ts';
import { formatIpv4, parseIpv4, parseIpv4Cidr } from '../../net/ipv4-cidr.ts';
import { powerShellScript, quotePowerShellString } from '../../powershell/powershell.ts';

export interface CniAddressRequest {
  /** The CNI bin directory holding host-local.exe. */
  binDir: string;
  /** The pod network's name (the CNI config's and host-local's store directory's). */
  network: string;
  /** The node's pod subnet, e.g. 10.244.3.0/24. */
  subnet: string;
  /** Who holds the address (CNI_CONTAINERID). */
  containerId: string;
  /**
   * This address exactly (a range of one: rangeStart = rangeEnd), as flannel-host-gw's bridge
   * endpoint needs its .2 kept from pods; without it, host-local's next free address.
   */
  address?: string;
}

const plainName = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Refuses a request unless every field is exactly what winfleet asks for. */
export function checkCniAddressRequest(request: CniAddressRequest): void {
  if (!/^[A-Za-z]:\\[^"'`$;&|<>]*$/.test(request.binDir))
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot run host-local from ${JSON.stringify(request.binDir)}: give an absolute directory`,
    );
  if (!plainName.test(request.network))
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot reserve an address on network ${JSON.stringify(request.network)}: not a plain network name`,
    );
  if (!plainName.test(request.containerId))
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot reserve an address for ${JSON.stringify(request.containerId)}: not a plain id`,
    );
  const subnet = parseIpv4Cidr(request.subnet);
  if (!subnet || subnet.address !== subnet.network || subnet.prefix > 30)
    throw new WinfleetError(
      'WF_INVARIANT',
      `Cannot reserve an address in ${JSON.stringify(request.subnet)}: give an IPv4 network of /30 or larger`,
    );
  if (request.address !== undefined) {
    const address = parseIpv4(request.address);
    if (
      address === undefined ||
      formatIpv4(address) !== request.address ||
      address <= subnet.network + 1 ||
      address >= subnet.network + 2 ** (32 - subnet.prefix) - 1
    )
      throw new WinfleetError(
        'WF_INVARIANT',
        `Cannot reserve ${JSON.stringify(request.address)} in ${request.subnet}: give an address of the subnet other than its network, gateway and broadcast addresses`,
      );
  }
}

/** The script that runs host-local.exe with the request on its standard input; prints its answer. */
export function reserveCniAddressScript(request: CniAddressRequest): string {
  checkCniAddressRequest(request);
  const body = JSON.stringify({
    cniVersion: '0.2.0',
    name: request.network,
    ipam: {
      type: 'host-local',
      ranges: [
        [
          request.address === undefined
            ? { subnet: request.subnet }
            : { subnet: request.subnet, rangeStart: request.address, rangeEnd: request.address },
        ],
      ],
      dataDir: '/var/lib/cni/networks',
    },
  });
  return powerShellScript(
    "$env:CNI_COMMAND = 'ADD'",
    `$env:CNI_CONTAINERID = ${quotePowerShellString(request.containerId)}`,
    "$env:CNI_NETNS = 'none'",
    "$env:CNI_IFNAME = 'eth0'",
    `$env:CNI_PATH = ${quotePowerShellString(request.binDir)}`,
    `$out = ${quotePowerShellString(body)} | & (Join-Path ${quotePowerShellString(request.binDir)} 'host-local.exe')`,
    // host-local's answer, or its error object (exit 1), is read by the agent either way.
    '[Console]::Out.Write(($out -join "`n"))',
  );
}

/**
 * The address host-local reserved, from its answer: `ip4.ip` of a result, or the address a
 * duplicate-allocation error names (this id holds it already). Anything else throws, quoting
 * host-local's message.
 * @package
 */
export function parseCniAddressOutput(stdout: string, request: CniAddressRequest): string {
  let answer: Record<string, unknown>;
  try {
    answer = JSON.parse(stdout) as Record<string, unknown>;
  } catch {
    throw new WinfleetError(
      'WF_WINDOWS_COMMAND_FAILED',
      `Cannot read host-local's answer ${JSON.stringify(stdout.slice(0, 200))}: it is not JSON`,
    );
  }
  const subnet = parseIpv4Cidr(request.subnet)!;
  const inSubnet = (ip: string) => {
    const n = parseIpv4(ip);
    return (
      n !== undefined &&
      n > subnet.network &&
      n < subnet.network + 2 ** (32 - subnet.prefix) - 1 &&
      (request.address === undefined || ip === request.address)
    );
  };
  const ip4 = answer.ip4 as { ip?: unknown } | undefined;
  if (typeof ip4?.ip === 'string') {
    const address = ip4.ip.split('/')[0]!;
    if (inSubnet(address)) return address;
  }
  const message = typeof answer.msg === 'string' ? answer.msg : '';
  const duplicate =
    /^(\d+\.\d+\.\d+\.\d+) has been allocated to (\S+), duplicate allocation is not allowed$/.exec(
      message,
    );
  if (duplicate && duplicate[2] === request.containerId && inSubnet(duplicate[1]!))
    return duplicate[1]!;
  throw new WinfleetError(
    'WF_WINDOWS_COMMAND_FAILED',
    `host-local reserved no address in ${request.subnet} for ${request.containerId}: ${message || JSON.stringify(answer).slice(0, 200)}`,
  );
}
