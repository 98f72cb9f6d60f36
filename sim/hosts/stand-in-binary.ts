/**
 * Stand-in executables: the payload binaries tests copy to simulated hosts are small text
 * files. One that starts with `winfleet-standin <name> <version>` (e.g.
 * `winfleet-standin kubelet v1.36.5`) tells the simulated program which version it is, so an
 * upgraded payload shows up as a new kubeletVersion on the Node.
 */

const prefix = 'winfleet-standin ';

/** The content of a stand-in executable for `name` at `version`. */
export function standInBinary(name: string, version: string): Buffer {
  if (/\s/.test(name) || /\s/.test(version) || name === '' || version === '') {
    throw new RangeError(
      `Cannot make a stand-in for "${name}" "${version}"; use a name and a version without blanks`,
    );
  }
  return Buffer.from(`${prefix}${name} ${version}\n`);
}

/** How much of a file readStandIn looks at: its declaration is in its first line. */
export const standInHeadBytes = 256;

/** The name and version a stand-in executable declares, or undefined for any other file. */
export function readStandIn(binary: Buffer): { name: string; version: string } | undefined {
  const head = binary.subarray(0, standInHeadBytes).toString('latin1');
  if (!head.startsWith(prefix)) return undefined;
  const match = /^winfleet-standin (\S+) (\S+)/.exec(head);
  return match ? { name: match[1]!, version: match[2]! } : undefined;
}
