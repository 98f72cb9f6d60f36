/**
 * Strict readers of iproute2's JSON (`ip -j route|neigh|link|addr`, `bridge -j fdb`): each
 * checks the shape of every entry it uses and throws naming the command, the entry and the
 * field that is not as expected, so a test never asserts on a half-read table. Fields iproute2
 * adds that a test does not use are ignored. Formats as printed by iproute2 6.1.
 */

/** A route (`ip -j route show`). */
export interface RouteEntry {
  /** "default", a CIDR, or a bare address for a host route. */
  dst: string;
  gateway?: string;
  dev?: string;
  /** e.g. ["onlink"], ["linkdown"]. */
  flags: string[];
  protocol?: string;
  scope?: string;
  prefsrc?: string;
  /** Absent for unicast routes; "local", "broadcast", … otherwise. */
  type?: string;
  table?: string;
  metric?: number;
}

/** A neighbour (ARP) entry (`ip -j neigh show`). */
export interface NeighbourEntry {
  dst: string;
  dev: string;
  lladdr?: string;
  /** e.g. ["PERMANENT"], ["REACHABLE"]. */
  state: string[];
}

/** A forwarding database entry (`bridge -j fdb show`). */
export interface FdbEntry {
  mac: string;
  ifname: string;
  /** The remote VTEP of a VXLAN entry. */
  dst?: string;
  /** e.g. ["self"]. */
  flags: string[];
  /** e.g. "permanent"; absent for learned entries (iproute2 prints "" for them). */
  state?: string;
  master?: string;
  vlan?: number;
}

/** The VXLAN settings of a link (`ip -j -d link show`, linkinfo.info_data). */
export interface VxlanInfo {
  id: number;
  port: number;
  local?: string;
  link?: string;
  learning: boolean;
}

/** Packet counters (`ip -j -s link show`, stats64). */
export interface LinkStats {
  rxPackets: number;
  rxBytes: number;
  txPackets: number;
  txBytes: number;
  rxDropped: number;
  txDropped: number;
}

/** A link (`ip -j [-d] [-s] link show`). */
export interface LinkEntry {
  ifindex: number;
  ifname: string;
  flags: string[];
  mtu: number;
  operstate: string;
  address?: string;
  master?: string;
  /** linkinfo.info_kind with -d: "veth", "bridge", "vxlan", … */
  kind?: string;
  vxlan?: VxlanInfo;
  stats?: LinkStats;
}

/** An interface's addresses (`ip -j addr show`). */
export interface AddressEntry {
  ifname: string;
  addresses: { family: string; local: string; prefixlen: number }[];
}

type Json = Record<string, unknown>;

class Reader {
  readonly what: string;
  readonly entry: Json;
  readonly index: number;

  constructor(what: string, entry: Json, index: number) {
    this.what = what;
    this.entry = entry;
    this.index = index;
  }

  fail(field: string, expected: string): never {
    throw new Error(
      `${this.what}: entry ${this.index} has ${field} ${JSON.stringify(this.entry[field])}, expected ${expected} (entry: ${JSON.stringify(this.entry)})`,
    );
  }

  string(field: string): string {
    const v = this.entry[field];
    return typeof v === 'string' && v !== '' ? v : this.fail(field, 'a non-empty string');
  }

  optString(field: string): string | undefined {
    return this.entry[field] === undefined ? undefined : this.string(field);
  }

  number(field: string): number {
    const v = this.entry[field];
    return typeof v === 'number' && Number.isInteger(v) && v >= 0
      ? v
      : this.fail(field, 'a non-negative integer');
  }

  optNumber(field: string): number | undefined {
    return this.entry[field] === undefined ? undefined : this.number(field);
  }

  strings(field: string): string[] {
    const v = this.entry[field];
    return Array.isArray(v) && v.every((s) => typeof s === 'string')
      ? [...v]
      : this.fail(field, 'an array of strings');
  }

  object(field: string): Json {
    const v = this.entry[field];
    return isObject(v) ? v : this.fail(field, 'an object');
  }
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The entries of a JSON array of objects, each with a Reader. */
function entries(text: string, what: string): Reader[] {
  let parsed: unknown;
  try {
    // iproute2 prints nothing at all for some empty tables.
    parsed = text.trim() === '' ? [] : JSON.parse(text);
  } catch (error) {
    throw new Error(`${what}: not JSON (${(error as Error).message}): ${text.slice(0, 200)}`);
  }
  if (!Array.isArray(parsed))
    throw new Error(`${what}: expected a JSON array, got ${text.slice(0, 200)}`);
  return parsed.map((entry, i) => {
    if (!isObject(entry))
      throw new Error(`${what}: entry ${i} is not an object: ${JSON.stringify(entry)}`);
    return new Reader(what, entry, i);
  });
}

const macPattern = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

function mac(r: Reader, field: string): string {
  const v = r.string(field);
  return macPattern.test(v) ? v : r.fail(field, 'a MAC address (aa:bb:cc:dd:ee:ff)');
}

/**
 * Routes from `ip -j route show …`. `dev` is required unless the route has no device (a
 * blackhole or unreachable route).
 */
export function parseRoutes(text: string, what = 'ip -j route'): RouteEntry[] {
  return entries(text, what).map((r) => {
    const route: RouteEntry = { dst: r.string('dst'), flags: r.strings('flags') };
    const optional = {
      gateway: r.optString('gateway'),
      dev: r.optString('dev'),
      protocol: r.optString('protocol'),
      scope: r.optString('scope'),
      prefsrc: r.optString('prefsrc'),
      type: r.optString('type'),
      table: r.optString('table'),
      metric: r.optNumber('metric'),
    };
    for (const [k, v] of Object.entries(optional))
      if (v !== undefined) Object.assign(route, { [k]: v });
    const special = ['blackhole', 'unreachable', 'prohibit', 'throw'];
    if (route.dev === undefined && !special.includes(route.type ?? ''))
      r.fail('dev', 'a device name');
    return route;
  });
}

/**
 * Neighbours from `ip -j neigh show` (unfiltered: `show dev X` leaves out `dev`). An entry
 * without lladdr is one being resolved or failed.
 */
export function parseNeighbours(text: string, what = 'ip -j neigh'): NeighbourEntry[] {
  return entries(text, what).map((r) => {
    const entry: NeighbourEntry = {
      dst: r.string('dst'),
      dev: r.string('dev'),
      state: r.strings('state'),
    };
    if (r.entry.lladdr !== undefined) entry.lladdr = mac(r, 'lladdr');
    return entry;
  });
}

/** FDB entries from `bridge -j fdb show` (unfiltered: `show dev X` leaves out `ifname`). */
export function parseFdb(text: string, what = 'bridge -j fdb'): FdbEntry[] {
  return entries(text, what).map((r) => {
    const entry: FdbEntry = {
      mac: mac(r, 'mac'),
      ifname: r.string('ifname'),
      flags: r.strings('flags'),
    };
    const dst = r.optString('dst');
    // A learned entry's state is "" in iproute2 6.1's JSON (fdb_state_n2a of a reachable one).
    const state = r.entry.state === '' ? undefined : r.optString('state');
    const master = r.optString('master');
    const vlan = r.optNumber('vlan');
    if (dst !== undefined) entry.dst = dst;
    if (state !== undefined) entry.state = state;
    if (master !== undefined) entry.master = master;
    if (vlan !== undefined) entry.vlan = vlan;
    return entry;
  });
}

function vxlanInfo(r: Reader, data: Json): VxlanInfo {
  const d = new Reader(`${r.what} (${r.entry.ifname} linkinfo.info_data)`, data, r.index);
  const learning =
    typeof data.learning === 'boolean' ? data.learning : d.fail('learning', 'a boolean');
  const info: VxlanInfo = { id: d.number('id'), port: d.number('port'), learning };
  const local = d.optString('local');
  const link = d.optString('link');
  if (local !== undefined) info.local = local;
  if (link !== undefined) info.link = link;
  return info;
}

function linkStats(r: Reader): LinkStats {
  const stats = r.object('stats64');
  const rx = new Reader(
    `${r.what} (${r.entry.ifname} stats64.rx)`,
    isObject(stats.rx) ? stats.rx : {},
    r.index,
  );
  const tx = new Reader(
    `${r.what} (${r.entry.ifname} stats64.tx)`,
    isObject(stats.tx) ? stats.tx : {},
    r.index,
  );
  return {
    rxPackets: rx.number('packets'),
    rxBytes: rx.number('bytes'),
    rxDropped: rx.number('dropped'),
    txPackets: tx.number('packets'),
    txBytes: tx.number('bytes'),
    txDropped: tx.number('dropped'),
  };
}

/** Links from `ip -j [-d] [-s] link show`. */
export function parseLinks(text: string, what = 'ip -j link'): LinkEntry[] {
  return entries(text, what).map((r) => {
    const link: LinkEntry = {
      ifindex: r.number('ifindex'),
      ifname: r.string('ifname'),
      flags: r.strings('flags'),
      mtu: r.number('mtu'),
      operstate: r.string('operstate'),
    };
    if (r.entry.address !== undefined)
      link.address = r.entry.link_type === 'ether' ? mac(r, 'address') : r.string('address');
    const master = r.optString('master');
    if (master !== undefined) link.master = master;
    if (r.entry.linkinfo !== undefined) {
      const info = new Reader(`${what} (${link.ifname} linkinfo)`, r.object('linkinfo'), r.index);
      link.kind = info.string('info_kind');
      if (link.kind === 'vxlan') link.vxlan = vxlanInfo(r, info.object('info_data'));
    }
    if (r.entry.stats64 !== undefined) link.stats = linkStats(r);
    return link;
  });
}

/** Addresses from `ip -j addr show`. */
export function parseAddresses(text: string, what = 'ip -j addr'): AddressEntry[] {
  return entries(text, what).map((r) => {
    const list: unknown[] = Array.isArray(r.entry.addr_info)
      ? r.entry.addr_info
      : r.fail('addr_info', 'an array');
    return {
      ifname: r.string('ifname'),
      addresses: list.map((a, i) => {
        const ar = new Reader(`${what} (${r.entry.ifname} addr_info)`, isObject(a) ? a : {}, i);
        return {
          family: ar.string('family'),
          local: ar.string('local'),
          prefixlen: ar.number('prefixlen'),
        };
      }),
    };
  });
}
