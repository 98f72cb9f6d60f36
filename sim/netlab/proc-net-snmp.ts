/**
 * The kernel's per-namespace protocol counters (/proc/net/snmp): pairs of lines, a header of
 * names and a line of values, each starting with the protocol ("Ip:", "Icmp:", "Udp:" …). The
 * tests read Ip FragCreates to show that a full-size packet crossed the overlay without the
 * underlay fragmenting it, and Udp counters for the VXLAN traffic.
 */

/** Counters by protocol, then by name. */
export type SnmpCounters = Record<string, Record<string, number>>;

/** Parses /proc/net/snmp, refusing anything that is not header/value line pairs. */
export function parseProcNetSnmp(text: string): SnmpCounters {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  if (lines.length === 0 || lines.length % 2 !== 0)
    throw new Error(
      `/proc/net/snmp: expected pairs of header and value lines, got ${lines.length} lines`,
    );
  const counters: SnmpCounters = {};
  for (let i = 0; i < lines.length; i += 2) {
    const names = lines[i]!.trim().split(/\s+/);
    const values = lines[i + 1]!.trim().split(/\s+/);
    const protocol = names[0];
    if (!protocol?.endsWith(':') || values[0] !== protocol)
      throw new Error(
        `/proc/net/snmp: lines ${i + 1}-${i + 2} do not start with one protocol: ${names[0]} / ${values[0]}`,
      );
    if (names.length !== values.length)
      throw new Error(
        `/proc/net/snmp: ${protocol.slice(0, -1)} has ${names.length - 1} names and ${values.length - 1} values`,
      );
    const name = protocol.slice(0, -1);
    const entry: Record<string, number> = {};
    for (let j = 1; j < names.length; j++) {
      const value = values[j]!;
      if (!/^-?[0-9]+$/.test(value))
        throw new Error(`/proc/net/snmp: ${name} ${names[j]} is ${value}, not a number`);
      entry[names[j]!] = Number(value);
    }
    counters[name] = entry;
  }
  return counters;
}

/** One counter, refusing a protocol or name the kernel did not print. */
export function snmpCounter(counters: SnmpCounters, protocol: string, name: string): number {
  const value = counters[protocol]?.[name];
  if (value === undefined) throw new Error(`/proc/net/snmp has no ${protocol} ${name}`);
  return value;
}
