/**
 * Whether a host is this machine's loopback: plain HTTP is allowed to such a registry without
 * more ado (nothing leaves the machine), and to no other unless asked for explicitly.
 */
import { BlockList, isIP } from 'node:net';

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/**
 * True for "localhost", 127.0.0.0/8, ::1 and ::ffff:127.x.y.z (brackets of an IPv6 URL host
 * allowed).
 * @example isLoopbackHost('127.0.0.1') // true
 * @example isLoopbackHost('registry.example.com') // false
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (bare.toLowerCase() === 'localhost') return true;
  const family = isIP(bare);
  if (family === 4) return loopback.check(bare, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
    return mapped ? loopback.check(mapped[1]!, 'ipv4') : loopback.check(bare, 'ipv6');
  }
  return false;
}
