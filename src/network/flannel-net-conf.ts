/**
 * Flannel's `net-conf.json` (the key of ConfigMap kube-flannel-cfg every flanneld reads), read
 * the way flanneld reads it, and what Windows needs of it. A ConfigMap is user input: every
 * problem names the field (`Backend.VNI`) and what to write.
 *
 * How flanneld reads it (flannel-io/flannel @cdf7605):
 * - pkg/subnet/config.go `ParseConfig`: Go's encoding/json into `Config` (`Network`,
 *   `EnableIPv4` (default true), `Backend` as raw JSON …); field names match without case, so
 *   `"vni"` is `VNI` (a key given twice in different case is refused here: which one Go keeps
 *   depends on their order); `parseBackendType` reads `Backend.Type`, and a missing `Backend`
 *   means "udp"; pkg/backend/manager.go lower-cases the type.
 * - `CheckNetworkConfig`: with IPv4 on, `Network` must be set.
 * - Windows registers only the vxlan and host-gw backends (pkg/backend/vxlan/vxlan_windows.go,
 *   pkg/backend/hostgw/hostgw_windows.go).
 * - pkg/backend/vxlan/vxlan_windows.go `RegisterNetwork`: defaults VNI 4096, Port 4789, MacPrefix
 *   "0E-2A"; refuses `VNI < 4096`, `Port != 4789`, `DirectRouting`, `GBP` and a MacPrefix not
 *   of the form xx-xx; the lease it writes carries `uint16(cfg.VNI)`.
 * - pkg/backend/vxlan/vxlan.go: Linux defaults VNI 1 and Port 0 (the kernel's 8472). One
 *   net-conf.json serves both, so a VNI or Port left out means Linux and Windows nodes use
 *   different ones: both must be written.
 */

import { linuxVxlanDefaults, windowsVxlan } from '../api/network-mode.ts';
import { parseIpv4Cidr } from '../net/ipv4-cidr.ts';
import { shown } from './cluster-view.ts';

/** net-conf.json as flanneld understands it. */
export interface FlannelNetConf {
  /** Backend.Type lower-cased ("vxlan", "host-gw", …); "udp" when Backend is absent. */
  backend: string;
  /** Backend.Type as written (for messages: shown()); undefined when Backend is absent. */
  backendAsWritten?: string;
  /** Network: the cluster's pod CIDR. */
  network: string;
  /** Backend.VNI, Backend.Port as written (vxlan); undefined when not set. */
  vni?: number;
  port?: number;
  directRouting?: boolean;
  gbp?: boolean;
  macPrefix?: string;
}

/** @package */
export type NetConfParse = { ok: true; conf: FlannelNetConf } | { ok: false; problems: string[] };

type JsonObject = Record<string, unknown>;

const isObject = (v: unknown): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const describe = (v: unknown) =>
  v === null
    ? 'null'
    : Array.isArray(v)
      ? 'an array'
      : typeof v === 'string'
        ? `"${shown(v)}", a string`
        : typeof v === 'object'
          ? 'an object'
          : `${JSON.stringify(v)}, a ${typeof v}`;

/**
 * The value of field `name` of `object` matched without case, as Go's encoding/json does;
 * a problem when two keys match.
 */
function field(
  object: JsonObject,
  name: string,
  path: string,
  problems: string[],
): { present: boolean; value?: unknown } {
  const keys = Object.keys(object).filter((k) => k.toLowerCase() === name.toLowerCase());
  if (keys.length > 1) {
    problems.push(
      `${path}${name}: given ${keys.length} times (${keys.map((k) => `"${k}"`).join(', ')}); flanneld matches field names without case and keeps the last one: keep one "${name}"`,
    );
    return { present: false };
  }
  if (keys.length === 0) return { present: false };
  return { present: true, value: object[keys[0]!] };
}

/** Parses net-conf.json as flanneld would, naming each field that flanneld would refuse. */
export function parseFlannelNetConf(text: string): NetConfParse {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    return {
      ok: false,
      problems: [
        `(top level): not JSON (${(error as Error).message}); write a JSON object such as {"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan", "VNI": 4096, "Port": 4789}}`,
      ],
    };
  }
  if (!isObject(document))
    return {
      ok: false,
      problems: [
        `(top level): must be a JSON object (it is ${describe(document)}), such as {"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}`,
      ],
    };
  const problems: string[] = [];
  const ipv4 = field(document, 'EnableIPv4', '', problems);
  if (ipv4.present && typeof ipv4.value !== 'boolean')
    problems.push(`EnableIPv4: must be true or false (it is ${describe(ipv4.value)})`);
  else if (ipv4.value === false)
    problems.push(
      'EnableIPv4: false (an IPv6-only pod network); flanneld on Windows has IPv4 leases only: use an IPv4 Network',
    );
  const networkField = field(document, 'Network', '', problems);
  let network = '';
  if (!networkField.present)
    problems.push('Network: missing; write the cluster pod CIDR, e.g. "Network": "10.244.0.0/16"');
  else if (typeof networkField.value !== 'string')
    problems.push(
      `Network: must be a string (it is ${describe(networkField.value)}), e.g. "10.244.0.0/16"`,
    );
  else if (parseIpv4Cidr(networkField.value) === undefined)
    problems.push(
      `Network: "${shown(networkField.value)}" is not an IPv4 CIDR; write e.g. "10.244.0.0/16"`,
    );
  else network = networkField.value;

  const backendField = field(document, 'Backend', '', problems);
  const conf: FlannelNetConf = { backend: 'udp', network };
  if (backendField.present) {
    const backend = backendField.value;
    if (!isObject(backend)) {
      problems.push(
        `Backend: must be an object (it is ${describe(backend)}), e.g. {"Type": "vxlan", "VNI": 4096, "Port": 4789}`,
      );
    } else {
      const type = field(backend, 'Type', 'Backend.', problems);
      if (!type.present)
        problems.push('Backend.Type: missing; write "Type": "vxlan" (or "host-gw")');
      else if (typeof type.value !== 'string')
        problems.push(`Backend.Type: must be a string (it is ${describe(type.value)})`);
      else {
        conf.backend = type.value.toLowerCase();
        conf.backendAsWritten = shown(type.value);
      }
      if (conf.backend === 'vxlan') readVxlanFields(backend, conf, problems);
    }
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, conf };
}

function readVxlanFields(backend: JsonObject, conf: FlannelNetConf, problems: string[]): void {
  for (const name of ['VNI', 'Port'] as const) {
    const f = field(backend, name, 'Backend.', problems);
    if (!f.present) continue;
    if (typeof f.value !== 'number' || !Number.isInteger(f.value))
      problems.push(
        `Backend.${name}: must be a whole number (it is ${describe(f.value)}); write e.g. "${name}": ${name === 'VNI' ? windowsVxlan.minVni : windowsVxlan.port}`,
      );
    else if (name === 'VNI') conf.vni = f.value;
    else conf.port = f.value;
  }
  for (const name of ['DirectRouting', 'GBP'] as const) {
    const f = field(backend, name, 'Backend.', problems);
    if (!f.present) continue;
    if (typeof f.value !== 'boolean')
      problems.push(`Backend.${name}: must be true or false (it is ${describe(f.value)})`);
    else if (name === 'DirectRouting') conf.directRouting = f.value;
    else conf.gbp = f.value;
  }
  const mac = field(backend, 'MacPrefix', 'Backend.', problems);
  if (mac.present) {
    if (typeof mac.value !== 'string')
      problems.push(`Backend.MacPrefix: must be a string (it is ${describe(mac.value)})`);
    else conf.macPrefix = mac.value;
  }
}

/**
 * What flanneld on Windows refuses, or what makes Linux and Windows nodes use different VXLAN
 * settings, in a parsed VXLAN net-conf.json: one line per field, each with what to write.
 * @package
 */
export function windowsVxlanProblems(conf: FlannelNetConf): string[] {
  const problems: string[] = [];
  const { minVni, maxVni, port } = windowsVxlan;
  if (conf.vni === undefined)
    problems.push(
      `Backend.VNI is not set: Linux flanneld then uses VNI ${linuxVxlanDefaults.vni} and Windows flanneld ${minVni}, so they never reach each other; write "VNI": ${minVni}`,
    );
  else if (conf.vni < minVni)
    problems.push(
      `Backend.VNI is ${conf.vni}: flanneld on Windows refuses a VNI below ${minVni}; write "VNI": ${minVni}`,
    );
  else if (conf.vni > maxVni)
    problems.push(
      `Backend.VNI is ${conf.vni}: flanneld on Windows puts the VNI in its lease as a 16-bit number (uint16), so Linux nodes would see another; write a VNI from ${minVni} to ${maxVni}, e.g. "VNI": ${minVni}`,
    );
  if (conf.port === undefined)
    problems.push(
      `Backend.Port is not set: Linux flanneld then uses UDP ${linuxVxlanDefaults.port} (the kernel's default) and Windows flanneld ${port}; write "Port": ${port}`,
    );
  else if (conf.port !== port)
    problems.push(
      `Backend.Port is ${conf.port}: flanneld on Windows supports only UDP port ${port}; write "Port": ${port}`,
    );
  if (conf.directRouting === true)
    problems.push(
      'Backend.DirectRouting is true: flanneld on Windows does not support it; remove it or write "DirectRouting": false',
    );
  if (conf.gbp === true)
    problems.push(
      'Backend.GBP is true: flanneld on Windows does not support it; remove it or write "GBP": false',
    );
  if (conf.macPrefix !== undefined && !/^[0-9A-Fa-f]{2}-[0-9A-Fa-f]{2}$/.test(conf.macPrefix))
    problems.push(
      `Backend.MacPrefix is "${shown(conf.macPrefix)}": flanneld on Windows needs the form xx-xx; write "MacPrefix": "0E-2A" or remove it`,
    );
  return problems;
}

/** The VNI and port both sides use once windowsVxlanProblems found nothing. */
export function vxlanSettings(conf: FlannelNetConf): { vni: number; port: number } {
  return { vni: conf.vni ?? windowsVxlan.minVni, port: conf.port ?? windowsVxlan.port };
}
