/**
 * Machine-level environment variables of a simulated host (HKLM\SYSTEM\CurrentControlSet\
 * Control\Session Manager\Environment): names are case-insensitive and case-preserving, as on
 * Windows. A new machine starts with what a fresh Windows Server has, so a cleanup test can
 * compare against that baseline.
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

export class MachineEnvironment {
  readonly #variables = new Map<string, { name: string; value: string }>();

  constructor(initial: Readonly<Record<string, string>> = defaultMachineEnvironment) {
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
