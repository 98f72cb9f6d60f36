/**
 * A fake Active Directory domain for simulated hosts (issue 16: "a fake domain that accepts one
 * set of credentials"), and what Rename-Computer, Add-Computer and Remove-Computer do to a
 * simulated machine. One SimDomain is shared by a fleet (fleet.ts `activeDirectory`): the hosts
 * reach its domain controller, and its computer accounts are one set across them.
 *
 * Strict, as Windows is (Microsoft.PowerShell.Management 5.1 docs, learn.microsoft.com:
 * Rename-Computer, Add-Computer, Remove-Computer; "Naming conventions in Active Directory"):
 * - a rename takes effect at the next boot: until then the machine keeps its name, and the new
 *   one is only pending (Tcpip\Parameters "NV Hostname");
 * - a computer name is a DNS label of 1-63 letters, digits and hyphens, not all digits; its
 *   NetBIOS name (the computer account's sAMAccountName without the $) is its first 15
 *   characters, upper case: two machines sharing them cannot both have an account;
 * - Add-Computer takes only the domain's credentials ("DOMAIN\user", "dns.domain\user" or
 *   "user@dns.domain", the password exact); wrong ones fail with "The user name or password is
 *   incorrect." and leave the machine in its workgroup; it refuses a machine already in the
 *   domain, one whose rename is still pending (winfleet restarts between the two; Add-Computer
 *   -NewName would do both at once), and an OU outside the domain;
 * - after Add-Computer, Win32_ComputerSystem reports the domain (PartOfDomain true) at once; the
 *   restart Add-Computer asks for is what makes Kerberos use it, which the simulation does not
 *   model further;
 * - Remove-Computer needs the domain's credentials too (-UnjoinDomainCredential), disables the
 *   computer account (here: removes it) and puts the machine in the workgroup named;
 * - UnjoinDomainOrWorkgroup(null, null, 0), what winfleet's removal runs, needs neither: the
 *   machine leaves locally and its computer account stays enabled (unjoinLocally).
 *
 * The error texts follow Windows PowerShell 5.1's formats ("failed to join domain … with
 * following error message: <Win32 message>") with the Win32 messages of ERROR_LOGON_FAILURE
 * 1326, ERROR_NO_SUCH_DOMAIN 1355, ERROR_INVALID_PARAMETER 87, NERR_UserExists 2224 and
 * ERROR_ACCESS_DENIED 5, written from the documentation, not captured from a host; "already in
 * that domain" is the cmdlet's own check. The rename-pending refusal is the simulation's own
 * wording (winfleet restarts between rename and join, so it never meets it).
 */
import { checkHostname, netbiosName } from './machine.ts';

export interface SimDomainOptions {
  /** The domain's DNS name, e.g. corp.example.com. */
  name: string;
  /** The one account that may join and remove computers. */
  username: string;
  password: string;
}

/** A computer account in the fake domain. */
export interface SimComputerAccount {
  /** NetBIOS name, upper case (sAMAccountName without the $). */
  name: string;
  dnsHostName: string;
  /** The OU it was created in; undefined: CN=Computers. */
  organizationalUnit?: string;
}

export class SimDomain {
  readonly name: string;
  /** The domain's NetBIOS name: its first label, upper case, at most 15 characters. */
  readonly netbiosName: string;
  #username: string;
  #password: string;
  readonly #computers = new Map<string, SimComputerAccount>();
  /** Every Add-Computer/Remove-Computer tried, and whether its credentials were accepted. */
  readonly attempts: { operation: 'join' | 'leave'; computer: string; accepted: boolean }[] = [];

  constructor(options: SimDomainOptions) {
    this.name = options.name.toLowerCase();
    this.netbiosName = this.name.split('.')[0]!.slice(0, 15).toUpperCase();
    this.#username = options.username;
    this.#password = options.password;
  }

  /** Changes the accepted credentials (a password reset in the domain). */
  setCredentials(username: string, password: string): void {
    this.#username = username;
    this.#password = password;
  }

  /** Whether `username`/`password` are the domain's account, in any form Windows takes. */
  accepts(username: string, password: string): boolean {
    const user = this.#username.toLowerCase();
    const given = username.toLowerCase();
    const forms = [
      `${this.netbiosName.toLowerCase()}\\${user}`,
      `${this.name}\\${user}`,
      `${user}@${this.name}`,
    ];
    return forms.includes(given) && password === this.#password;
  }

  /** The computer accounts, by NetBIOS name. */
  get computers(): SimComputerAccount[] {
    return [...this.#computers.values()].map((c) => ({ ...c }));
  }

  computer(name: string): SimComputerAccount | undefined {
    const account = this.#computers.get(netbiosName(name));
    return account && { ...account };
  }

  /** Whether `dn`'s DC= parts name this domain. */
  #ownsOu(dn: string): boolean {
    const dcs = dn
      .split(',')
      .map((p) => p.trim())
      .filter((p) => /^DC=/i.test(p))
      .map((p) => p.slice(3));
    return /^OU=/i.test(dn.trim()) && dcs.join('.').toLowerCase() === this.name;
  }

  /** Creates the computer account (Add-Computer's part in the domain); throws Windows' text. */
  addComputer(
    hostname: string,
    credentials: { username: string; password: string },
    organizationalUnit?: string,
  ): void {
    const accepted = this.accepts(credentials.username, credentials.password);
    this.attempts.push({ operation: 'join', computer: hostname, accepted });
    const failed = (why: string) =>
      new Error(
        `Computer '${hostname}' failed to join domain '${this.name}' from its current workgroup 'WORKGROUP' with following error message: ${why}`,
      );
    if (!accepted) throw failed('The user name or password is incorrect.');
    if (organizationalUnit !== undefined && !this.#ownsOu(organizationalUnit)) {
      throw failed('The parameter is incorrect.');
    }
    const name = netbiosName(hostname);
    const existing = this.#computers.get(name);
    if (
      existing &&
      existing.dnsHostName.toLowerCase() !== `${hostname}.${this.name}`.toLowerCase()
    ) {
      throw failed('The account already exists.');
    }
    this.#computers.set(name, {
      name,
      dnsHostName: `${hostname.toLowerCase()}.${this.name}`,
      ...(organizationalUnit !== undefined ? { organizationalUnit } : {}),
    });
  }

  /** Removes the computer account (Remove-Computer's part); throws Windows' text. */
  removeComputer(hostname: string, credentials: { username: string; password: string }): void {
    const accepted = this.accepts(credentials.username, credentials.password);
    this.attempts.push({ operation: 'leave', computer: hostname, accepted });
    if (!accepted) {
      throw new Error(
        `Failed to unjoin computer '${hostname}' from domain '${this.name}' with the following error message: Access is denied.`,
      );
    }
    this.#computers.delete(netbiosName(hostname));
  }
}

/** What a machine needs for the cmdlets below. */
export interface DomainMember {
  readonly hostname: string;
  /** The name it takes at the next boot; equal to hostname when none is pending. */
  readonly pendingHostname: string;
  /** Win32_ComputerSystem.Domain when PartOfDomain; undefined in a workgroup. */
  domain: string | undefined;
  /** The domain controller it reaches; undefined: none (every domain is unreachable). */
  readonly activeDirectory: SimDomain | undefined;
  setPendingHostname(name: string): void;
}

/** Rename-Computer -NewName on a workgroup machine: pending until the next boot. */
export function renameComputer(machine: DomainMember, newName: string): void {
  const current = machine.hostname;
  try {
    checkHostname(newName);
  } catch {
    throw new Error(
      `Skip computer '${current}' with new name '${newName}' because the new name is not valid. The new computer name entered is not properly formatted. Standard names may contain letters (a-z, A-Z), numbers (0-9), and hyphens (-), but no spaces or periods (.). The name may not consist entirely of digits, and may not be longer than 63 characters.`,
    );
  }
  if (newName.toLowerCase() === current.toLowerCase()) {
    throw new Error(
      `Skip computer '${current}' with new name '${newName}' because the new name is the same as the current name.`,
    );
  }
  if (machine.domain !== undefined) {
    // In a domain the account is renamed too, which needs -DomainCredential.
    throw new Error(
      `Fail to rename computer '${current}' to '${newName}' due to the following exception: Access is denied.`,
    );
  }
  machine.setPendingHostname(newName);
}

/** Add-Computer -DomainName [-OUPath] -Credential on the machine. */
export function addComputer(
  machine: DomainMember,
  domain: string,
  credentials: { username: string; password: string },
  organizationalUnit?: string,
): void {
  const current = machine.hostname;
  if (machine.domain !== undefined) {
    throw new Error(
      `Cannot add computer '${current}' to domain '${domain}' because it is already in that domain.`,
    );
  }
  const dc = machine.activeDirectory;
  if (!dc || dc.name !== domain.toLowerCase()) {
    throw new Error(
      `Computer '${current}' failed to join domain '${domain}' from its current workgroup 'WORKGROUP' with following error message: The specified domain either does not exist or could not be contacted.`,
    );
  }
  if (machine.pendingHostname.toLowerCase() !== current.toLowerCase()) {
    throw new Error(
      `Computer '${current}' failed to join domain '${domain}' from its current workgroup 'WORKGROUP' with following error message: The computer was renamed to '${machine.pendingHostname}' and must restart before it joins a domain (or rename and join in one Add-Computer -NewName).`,
    );
  }
  dc.addComputer(current, credentials, organizationalUnit);
  machine.domain = dc.name;
}

/** Remove-Computer -UnjoinDomainCredential -WorkgroupName on the machine. */
export function removeComputer(
  machine: DomainMember,
  credentials: { username: string; password: string },
): void {
  const current = machine.hostname;
  if (machine.domain === undefined) {
    throw new Error(
      `Failed to unjoin computer '${current}' from domain because it is not in a domain.`,
    );
  }
  const dc = machine.activeDirectory;
  if (!dc || dc.name !== machine.domain) {
    throw new Error(
      `Failed to unjoin computer '${current}' from domain '${machine.domain}' with the following error message: The specified domain either does not exist or could not be contacted.`,
    );
  }
  dc.removeComputer(current, credentials);
  machine.domain = undefined;
}

/**
 * Win32_ComputerSystem.UnjoinDomainOrWorkgroup with no UserName and Password and FUnjoinOptions
 * 0 on the machine: it leaves the domain locally, as the local administrator, without reaching
 * a domain controller; its computer account stays (enabled) in the domain.
 */
export function unjoinLocally(machine: DomainMember): void {
  if (machine.domain === undefined) {
    throw new Error(`The host is not in a domain but in WORKGROUP; it is left as it is`);
  }
  machine.domain = undefined;
}
