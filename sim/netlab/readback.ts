/**
 * Reading a namespace's network state back as typed entries: routes, neighbours, FDB entries,
 * links (with VXLAN details and counters) and addresses through iproute2's JSON output
 * (ip-json.ts), and the kernel's protocol counters (proc-net-snmp.ts).
 */
import { bridgeTool, ip, runInNetns } from './command.ts';
import {
  type AddressEntry,
  type FdbEntry,
  type LinkEntry,
  type NeighbourEntry,
  parseAddresses,
  parseFdb,
  parseLinks,
  parseNeighbours,
  parseRoutes,
  type RouteEntry,
} from './ip-json.ts';
import { parseProcNetSnmp, type SnmpCounters } from './proc-net-snmp.ts';

async function ipJson(netns: string, args: string[]): Promise<string> {
  return (await ip(['-n', netns, '-j', ...args])).stdout;
}

/** Routes of the main table, or those matching `selector` (e.g. a prefix: `10.244.2.0/24`). */
export async function readRoutes(netns: string, selector: string[] = []): Promise<RouteEntry[]> {
  const args = ['route', 'show', ...selector];
  return parseRoutes(await ipJson(netns, args), `ip -n ${netns} -j ${args.join(' ')}`);
}

/** IPv4 neighbours, on one device when given. */
export async function readNeighbours(netns: string, dev?: string): Promise<NeighbourEntry[]> {
  const all = parseNeighbours(
    await ipJson(netns, ['-4', 'neigh', 'show']),
    `ip -n ${netns} -j -4 neigh show`,
  );
  return dev ? all.filter((n) => n.dev === dev) : all;
}

/** FDB entries, on one device when given. */
export async function readFdb(netns: string, dev?: string): Promise<FdbEntry[]> {
  const { stdout } = await bridgeTool(['-n', netns, '-j', 'fdb', 'show']);
  const all = parseFdb(stdout, `bridge -n ${netns} -j fdb show`);
  return dev ? all.filter((e) => e.ifname === dev) : all;
}

/** Links with details (kind, VXLAN settings) and counters. */
export async function readLinks(netns: string): Promise<LinkEntry[]> {
  return parseLinks(
    await ipJson(netns, ['-d', '-s', 'link', 'show']),
    `ip -n ${netns} -j -d -s link show`,
  );
}

/** One link, or an error naming the links the namespace has. */
export async function readLink(netns: string, name: string): Promise<LinkEntry> {
  const links = await readLinks(netns);
  const link = links.find((l) => l.ifname === name);
  if (!link)
    throw new Error(
      `netns ${netns} has no link ${name} (it has ${links.map((l) => l.ifname).join(', ')})`,
    );
  return link;
}

/** IPv4 addresses of every interface. */
export async function readAddresses(netns: string): Promise<AddressEntry[]> {
  return parseAddresses(
    await ipJson(netns, ['-4', 'addr', 'show']),
    `ip -n ${netns} -j -4 addr show`,
  );
}

/** The namespace's protocol counters (/proc/net/snmp as seen from inside it). */
export async function readSnmp(netns: string): Promise<SnmpCounters> {
  const { stdout } = await runInNetns(netns, '/bin/cat', ['/proc/net/snmp']);
  return parseProcNetSnmp(stdout);
}
