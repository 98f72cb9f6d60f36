/**
 * The Windows Firewall of a simulated host (Windows Defender Firewall with Advanced Security):
 * rules by Name, kept across reboots (they live in the registry), and its decision on inbound
 * connections. Windows Server's default inbound action is Block on every profile, so a
 * connection to a local port is allowed only by an enabled inbound Allow rule for its protocol
 * and port, and an enabled inbound Block rule for it wins over any Allow rule. A blocked
 * connection gets no answer: the firewall drops it, so the client waits until it gives up.
 *
 * A fresh host has the rule the OpenSSH Server install adds (OpenSSH-Server-In-TCP, TCP 22).
 * Only the kubelet's port is behind this firewall in the simulation (kubelet-server.ts); SSH
 * listens on a test-chosen port and is not filtered.
 */

export type FirewallProtocol = 'TCP' | 'UDP' | 'Any';

export interface FirewallRule {
  /** Unique id (case-insensitive), as New-NetFirewallRule -Name. */
  name: string;
  displayName: string;
  description: string;
  direction: 'Inbound' | 'Outbound';
  action: 'Allow' | 'Block';
  protocol: FirewallProtocol;
  /** Local ports the rule covers; 'Any' for all. */
  localPorts: number[] | 'Any';
  enabled: boolean;
}

/** The errors the NetSecurity cmdlets give, with the message Windows prints. */
export class FirewallError extends Error {
  readonly cmdlet: string;
  constructor(cmdlet: string, message: string) {
    super(message);
    this.cmdlet = cmdlet;
  }
}

/** The rule the OpenSSH Server capability creates when it is installed. */
export const openSshServerRule: FirewallRule = {
  name: 'OpenSSH-Server-In-TCP',
  displayName: 'OpenSSH SSH Server (sshd)',
  description: 'Inbound rule for OpenSSH SSH Server (sshd)',
  direction: 'Inbound',
  action: 'Allow',
  protocol: 'TCP',
  localPorts: [22],
  enabled: true,
};

export class WindowsFirewall {
  readonly #rules = new Map<string, FirewallRule>();

  constructor(initial: readonly FirewallRule[] = [openSshServerRule]) {
    for (const rule of initial) this.add(rule);
  }

  /** Every rule, in the order they were added. */
  rules(): FirewallRule[] {
    return [...this.#rules.values()].map(copy);
  }

  /** The rule named `name` (case-insensitive), if any. */
  rule(name: string): FirewallRule | undefined {
    const rule = this.#rules.get(name.toLowerCase());
    return rule && copy(rule);
  }

  /** New-NetFirewallRule: refuses a Name that is taken. */
  add(rule: FirewallRule): void {
    if (this.#rules.has(rule.name.toLowerCase())) {
      throw new FirewallError(
        'New-NetFirewallRule',
        'Cannot create a file when that file already exists.',
      );
    }
    this.#rules.set(rule.name.toLowerCase(), copy(rule));
  }

  /** Set-NetFirewallRule -Name: changes the given properties of an existing rule. */
  set(name: string, changes: Partial<Omit<FirewallRule, 'name'>>): void {
    const rule = this.#rules.get(name.toLowerCase());
    if (!rule) throw notFound('Set-NetFirewallRule', name);
    this.#rules.set(name.toLowerCase(), copy({ ...rule, ...changes, name: rule.name }));
  }

  /** Remove-NetFirewallRule -Name: false when there was no such rule. */
  remove(name: string): boolean {
    return this.#rules.delete(name.toLowerCase());
  }

  /** Whether an inbound connection to `port` over `protocol` gets through. */
  allowsInbound(protocol: 'TCP' | 'UDP', port: number): boolean {
    const matching = [...this.#rules.values()].filter(
      (r) =>
        r.enabled &&
        r.direction === 'Inbound' &&
        (r.protocol === 'Any' || r.protocol === protocol) &&
        (r.localPorts === 'Any' || r.localPorts.includes(port)),
    );
    if (matching.some((r) => r.action === 'Block')) return false;
    return matching.some((r) => r.action === 'Allow');
  }
}

function notFound(cmdlet: string, name: string): FirewallError {
  return new FirewallError(
    cmdlet,
    `No MSFT_NetFirewallRule objects found with property 'InstanceID' equal to '${name}'.  Verify the value of the property and retry.`,
  );
}

function copy(rule: FirewallRule): FirewallRule {
  return {
    ...rule,
    localPorts: rule.localPorts === 'Any' ? 'Any' : [...rule.localPorts],
  };
}
