/**
 * Names of the network namespaces the network tests create: `wfnl-<owner pid>-<lab>-<label>`.
 * The owner's pid makes names unique between test files running side by side, and lets the
 * next lab sweep the namespaces of a test process that died without cleaning up; the lab number
 * keeps two labs of one process apart; the label says what the namespace is (lan, lnx1, lnx1-p1).
 */

export const netnsPrefix = 'wfnl-';

const labelPattern = /^[a-z0-9](?:[a-z0-9-]{0,22}[a-z0-9])?$/;
const namePattern = /^wfnl-([1-9][0-9]*)-([0-9]+)-([a-z0-9](?:[a-z0-9-]{0,22}[a-z0-9])?)$/;

export interface NetnsNameParts {
  ownerPid: number;
  lab: number;
  label: string;
}

/** Throws unless `label` is 1–24 lowercase letters, digits and inner dashes. */
export function checkLabel(label: string): void {
  if (!labelPattern.test(label)) {
    throw new Error(
      `netns label "${label}" must be 1-24 lowercase letters, digits and dashes, not starting or ending with a dash`,
    );
  }
}

/** The namespace name for a label of lab `lab` owned by process `ownerPid`. */
export function netnsName(parts: NetnsNameParts): string {
  checkLabel(parts.label);
  if (!Number.isInteger(parts.ownerPid) || parts.ownerPid <= 0)
    throw new Error(`owner pid ${parts.ownerPid} is not a positive integer`);
  if (!Number.isInteger(parts.lab) || parts.lab < 0)
    throw new Error(`lab number ${parts.lab} is not a non-negative integer`);
  return `${netnsPrefix}${parts.ownerPid}-${parts.lab}-${parts.label}`;
}

/** The parts of a name made by netnsName, or undefined for any other name. */
export function parseNetnsName(name: string): NetnsNameParts | undefined {
  const match = namePattern.exec(name);
  if (!match) return undefined;
  return { ownerPid: Number(match[1]), lab: Number(match[2]), label: match[3]! };
}
