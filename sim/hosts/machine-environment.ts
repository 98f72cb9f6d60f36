/**
 * Environment variables on a simulated host: the machine-level ones (HKLM\SYSTEM\
 * CurrentControlSet\Control\Session Manager\Environment) and each process's own block. Names
 * are case-insensitive and case-preserving, as on Windows. A new machine starts with what a
 * fresh Windows Server has, so a cleanup test can compare against that baseline.
 *
 * Who sees what (KB 821761, "Changes to environment variables do not affect services that run
 * under the LocalSystem account until you restart the computer"): services.exe reads the machine
 * environment once, at boot, and gives every service that snapshot plus the service's own
 * `Environment` value (REG_MULTI_SZ "NAME=value" entries under HKLM\SYSTEM\CurrentControlSet\
 * Services\<name>, which win over the snapshot's); a new logon session (an SSH command) builds its
 * block from the registry, so it sees a change at once; a child inherits its parent's block.
 */

/** What a fresh Windows Server carries at machine level. */
export const defaultMachineEnvironment: Readonly<Record<string, string>> = {
  ComSpec: 'C:\\Windows\\system32\\cmd.exe',
  DriverData: 'C:\\Windows\\System32\\Drivers\\DriverData',
  NUMBER_OF_PROCESSORS: '4',
  OS: 'Windows_NT',
  Path: 'C:\\Windows\\system32;C:\\Windows;C:\\Windows\\System32\\Wbem;C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\;C:\\Windows\\System32\\OpenSSH\\',
  PATHEXT: '.COM;.EXE;.BAT;.CMD;.VBS;.VBE;.JS;.JSE;.WSF;.WSH;.MSC',
  PROCESSOR_ARCHITECTURE: 'AMD64',
  PSModulePath:
    '%ProgramFiles%\\WindowsPowerShell\\Modules;C:\\Windows\\system32\\WindowsPowerShell\\v1.0\\Modules',
  TEMP: 'C:\\Windows\\TEMP',
  TMP: 'C:\\Windows\\TEMP',
  USERNAME: 'SYSTEM',
  windir: 'C:\\Windows',
};

/** A set of environment variables: a process's block, or the machine's. */
export class EnvironmentVariables {
  readonly #variables = new Map<string, { name: string; value: string }>();

  constructor(initial: Readonly<Record<string, string>> = {}) {
    for (const [name, value] of Object.entries(initial)) this.set(name, value);
  }

  get(name: string): string | undefined {
    return this.#variables.get(name.toLowerCase())?.value;
  }

  /** Sets a variable (keeping the stored name's case); undefined removes it. */
  set(name: string, value: string | undefined): void {
    if (name === '' || name.includes('=') || /[\0\r\n]/.test(name)) {
      throw new RangeError(
        `Cannot use "${name}" as an environment variable name; use a non-empty name without "=" or line breaks`,
      );
    }
    const key = name.toLowerCase();
    if (value === undefined || value === '') {
      // Windows removes a variable set to the empty string.
      this.#variables.delete(key);
      return;
    }
    this.#variables.set(key, { name: this.#variables.get(key)?.name ?? name, value });
  }

  /** All variables as name → value, sorted by name. */
  entries(): Record<string, string> {
    const sorted = [...this.#variables.values()].sort((a, b) =>
      a.name.toLowerCase().localeCompare(b.name.toLowerCase()),
    );
    return Object.fromEntries(sorted.map((v) => [v.name, v.value]));
  }
}

/** The machine-level variables, starting as on a fresh Windows Server. */
export class MachineEnvironment extends EnvironmentVariables {
  constructor(initial: Readonly<Record<string, string>> = defaultMachineEnvironment) {
    super(initial);
  }
}

/**
 * The block the SCM gives a service's process: the machine environment as it was at boot,
 * then the service's own `Environment` entries on top.
 */
export function serviceEnvironment(
  atBoot: Readonly<Record<string, string>>,
  own: Readonly<Record<string, string>> | undefined,
): EnvironmentVariables {
  const block = new EnvironmentVariables(atBoot);
  for (const [name, value] of Object.entries(own ?? {})) block.set(name, value);
  return block;
}
