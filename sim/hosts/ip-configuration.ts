/**
 * The IPv4 configuration a simulated host reports through Get-NetIPAddress and Get-NetRoute, as
 * a Windows Server with the Containers feature has it, in the order Get-NetIPAddress lists it
 * (newest interfaces, which have the highest index, first):
 * - "vEthernet (nat)", the host adapter of the NAT network HNS creates at boot (a 172.16/12
 *   address), with no default route;
 * - "Ethernet 2", a second adapter without DHCP, holding an APIPA address (169.254/16);
 * - the host's own address with the default route: on "Ethernet", or, once an L2Bridge or
 *   Overlay HNS network binds the adapter to a virtual switch, on "vEthernet (Ethernet)" (HNS
 *   moves the host's address to the switch's host adapter, under a new interface index);
 * - the loopback pseudo-interface.
 * So the first row is never the node's address: code that takes it gets an HNS address.
 */

import type { HostNetwork } from '../../src/hostaccess/node-address.ts';
import type { HnsNetwork } from '../../src/windows/hns-objects.ts';
import type { SimMachine } from './machine.ts';

/** HNS network types that bind the host's adapter to a virtual switch. */
const switchedNetworkTypes = new Set(['l2bridge', 'overlay', 'l2tunnel', 'transparent']);

/** Whether the network binds the host's adapter to a virtual switch (not HNS's own NAT). */
export function bindsHostAdapter(network: Pick<HnsNetwork, 'name' | 'type'>): boolean {
  return (
    switchedNetworkTypes.has(network.type.toLowerCase()) && network.name.toLowerCase() !== 'nat'
  );
}

/** The machine's IPv4 addresses and default routes, as the host-facts script reads them. */
export function ipConfiguration(machine: SimMachine): HostNetwork {
  const [, , third, fourth] = machine.address.split('.').map(Number) as [
    number,
    number,
    number,
    number,
  ];
  const switched = machine.hns.list().some(bindsHostAdapter);
  const main = switched
    ? { interfaceIndex: 18, interfaceAlias: 'vEthernet (Ethernet)' }
    : { interfaceIndex: 4, interfaceAlias: 'Ethernet' };
  const preferred = 'Preferred';
  return {
    ipAddresses: [
      {
        address: `172.${16 + (third % 16)}.${fourth}.1`,
        interfaceIndex: 24,
        interfaceAlias: 'vEthernet (nat)',
        addressState: preferred,
      },
      {
        address: `169.254.${third}.${fourth}`,
        interfaceIndex: 7,
        interfaceAlias: 'Ethernet 2',
        addressState: preferred,
      },
      { address: machine.address, ...main, addressState: preferred },
      {
        address: '127.0.0.1',
        interfaceIndex: 1,
        interfaceAlias: 'Loopback Pseudo-Interface 1',
        addressState: preferred,
      },
    ],
    defaultRoutes: [{ interfaceIndex: main.interfaceIndex, routeMetric: 0, interfaceMetric: 15 }],
  };
}
