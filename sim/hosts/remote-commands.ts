/**
 * What a simulated host does with an SSH `exec` command. Windows OpenSSH hands the command to
 * cmd.exe as is; a simulated host has no cmd.exe or PowerShell interpreter, so it accepts
 * exactly what the operator sends and nothing else:
 * - `powershell.exe ... -EncodedCommand <base64>` whose script is, byte for byte, an entry of
 *   the remote-scripts catalog with its arguments (src/hostaccess/remote-scripts.ts): it does what
 *   that script does and prints what it prints (or fails with CommandNotFoundException when it
 *   calls a command no module of the host provides, powershell-modules.ts) (one line of JSON, as ConvertTo-Json -Compress
 *   in Windows PowerShell 5.1 writes it; errors as PowerShell writes them to a redirected
 *   stderr under -EncodedCommand: CLIXML);
 * - `"C:\k\winfleet\winfleet-agent.exe" args...`: runs the agent in-process;
 * - anything else: exit code 1 and an error saying the simulated host does not support it, so
 *   an operator bug shows up instead of passing silently.
 */
import { splitServiceCommandLine } from '../../src/agent/windows/command-line.ts';
import {
  agentExecutable,
  type HostFactsReport,
  identifyRemoteScript,
  type RemoteScriptName,
  type RemoteScripts,
  remoteScript,
} from '../../src/hostaccess/remote-scripts.ts';
import { decodePowerShellCommandLine } from '../../src/powershell/powershell.ts';
import { addComputer, renameComputer, unjoinLocally } from './active-directory.ts';
import { decodeConsoleInput } from './console-code-page.ts';
import { diagnosticOutput } from './diagnostics.ts';
import { wellKnownSid } from './file-security.ts';
import { errorCode } from './file-system-error.ts';
import { ipConfiguration } from './ip-configuration.ts';
import type { SimMachine } from './machine.ts';
import { moduleLogEvents } from './module-logging.ts';
import {
  commandNotFoundMessage,
  machinePowerShellHost,
  missingCommand,
} from './powershell-modules.ts';
import { hyperVFacts, preflightFacts } from './preflight-facts.ts';
import { windowsPathSegments } from './windows-path.ts';

/** Where commands run over SSH start (the administrator's profile). */
export const sshWorkingDirectory = 'C:\\Users\\Administrator';

/** What an exec command is, before it runs (fault triggers match on it). */
export type ClassifiedCommand =
  | { kind: 'script'; script: RemoteScriptName; args: unknown; agentCommand?: string }
  | { kind: 'agent'; args: string[]; agentCommand?: string }
  | { kind: 'unsupported'; reason: string; powerShell: boolean };

/** Output and cancellation of one exec request. */
export interface CommandIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Aborted when the SSH channel closes (the command's processes are then killed). */
  signal: AbortSignal;
  /**
   * The command's standard input as bytes, to its end (the client's EOF); Windows PowerShell's
   * [Console]::In.ReadToEnd() decodes them in the machine's console code page
   * (console-code-page.ts). Absent: empty (a test driving a command without a channel).
   */
  stdin?: () => Promise<Uint8Array>;
}

/** Tells which command `line` is. */
export function classifyCommand(line: string): ClassifiedCommand {
  let script: string | undefined;
  try {
    script = decodePowerShellCommandLine(line);
  } catch (error) {
    return { kind: 'unsupported', reason: (error as Error).message, powerShell: true };
  }
  if (script !== undefined) {
    const identified = identifyRemoteScript(script);
    if (!identified) {
      return {
        kind: 'unsupported',
        reason: 'the script is not from the winfleet remote-scripts catalog',
        powerShell: true,
      };
    }
    let expected: string;
    try {
      expected = remoteScript(identified.name, identified.args as never);
    } catch {
      expected = '';
    }
    if (script !== expected) {
      return {
        kind: 'unsupported',
        reason: `the script claims to be catalog entry "${identified.name}" but differs from it`,
        powerShell: true,
      };
    }
    const classified: ClassifiedCommand = {
      kind: 'script',
      script: identified.name,
      args: identified.args,
    };
    if (identified.name === 'run-agent') {
      const agentArgs = (identified.args as RemoteScripts['run-agent']).args;
      if (Array.isArray(agentArgs) && typeof agentArgs[0] === 'string') {
        classified.agentCommand = agentArgs[0];
      }
    }
    return classified;
  }
  const metacharacter = unquotedCmdMetacharacter(line);
  if (metacharacter) {
    return {
      kind: 'unsupported',
      reason: `cmd.exe would interpret "${metacharacter}" in it`,
      powerShell: false,
    };
  }
  const { binaryPath, args } = splitServiceCommandLine(line.trim());
  if (isAgentPath(binaryPath)) {
    const classified: ClassifiedCommand = { kind: 'agent', args };
    if (args[0] !== undefined) classified.agentCommand = args[0];
    return classified;
  }
  return {
    kind: 'unsupported',
    reason: 'it is neither a catalog PowerShell script nor the winfleet agent',
    powerShell: /^\s*"?[^"\s]*powershell/i.test(line),
  };
}

/**
 * Whether `line` runs powershell.exe so that it reads its stdin to the end before it exits:
 * Windows PowerShell reads a redirected stdin as pipeline input (ConsoleHost's
 * Executor.ExecuteCommandHelper with ReadInputObjects, through WrappedDeserializer), unless
 * `-InputFormat None` (DataFormat.None) says there is none. The switch matches as
 * CommandLineParameterParser does: any prefix of -inputformat (or -if), any case, `-` or `/`;
 * its value as Enum.Parse does (case-insensitive name, or the number 2).
 */
export function powerShellReadsStdin(line: string): boolean {
  const words = line.match(/"[^"]*"|\S+/g)?.map((w) => w.replace(/^"(.*)"$/, '$1')) ?? [];
  if (!/(^|[\\/])powershell(\.exe)?$/i.test(words[0] ?? '')) return false;
  for (let i = 1; i < words.length; i++) {
    const flag = /^[-/](\w+)$/.exec(words[i]!)?.[1]?.toLowerCase();
    if (!flag) continue;
    // The script and what follows it are not switches.
    if (flag === 'ec' || 'encodedcommand'.startsWith(flag) || 'command'.startsWith(flag)) break;
    if ('inputformat'.startsWith(flag) || flag === 'if') {
      const value = words[i + 1]?.toLowerCase();
      return !(value === 'none' || value === '2');
    }
  }
  return true;
}

function isAgentPath(path: string): boolean {
  try {
    return (
      windowsPathSegments(path).join('\\').toLowerCase() ===
      windowsPathSegments(agentExecutable).join('\\').toLowerCase()
    );
  } catch {
    return false;
  }
}

function unquotedCmdMetacharacter(line: string): string | undefined {
  let quoted = false;
  for (const ch of line) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && '&|<>^'.includes(ch)) return ch;
  }
  return undefined;
}

/** Runs an exec command on the machine; resolves with its exit code. */
export async function runRemoteCommand(
  machine: SimMachine,
  line: string,
  io: CommandIo,
  classified = classifyCommand(line),
): Promise<number> {
  switch (classified.kind) {
    case 'unsupported':
      io.stderr(unsupportedCommandText(line, classified.reason));
      return 1;
    case 'agent':
      return runAgentProcess(machine, classified.args, io, 'cmd');
    case 'script':
      return runCatalogScript(machine, classified.script, classified.args, io);
  }
}

/** The error a simulated host prints for a command it does not run. */
export function unsupportedCommandText(line: string, reason: string): string {
  const shown = line.length > 160 ? `${line.slice(0, 160)}…` : line;
  return [
    `winfleet simulated host : The simulated Windows host does not support this command (${reason}): ${shown}`,
    '    + CategoryInfo          : NotImplemented: (:) [], NotSupportedException',
    '    + FullyQualifiedErrorId : WinfleetSimulatedHostUnsupportedCommand',
    '',
  ].join('\r\n');
}

// The catalog.

async function runCatalogScript(
  machine: SimMachine,
  name: RemoteScriptName,
  args: unknown,
  io: CommandIo,
): Promise<number> {
  const script = remoteScript(name, args as never);
  try {
    // A command no module of this host provides stops the script before it does anything
    // (powershell-modules.ts), with PowerShell's CommandNotFoundException.
    const missing = missingCommand(script, machinePowerShellHost(machine));
    if (missing !== undefined) {
      throw new PowerShellError(
        missing,
        commandNotFoundMessage(missing),
        script,
        missing,
        `ObjectNotFound: (${missing}:String) [], CommandNotFoundException`,
        'CommandNotFoundException',
      );
    }
    switch (name) {
      case 'host-facts':
        io.stdout(powerShellJson(hostFacts(machine)));
        return 0;
      case 'file-hashes':
        io.stdout(powerShellJson(await fileHashes(machine, args as RemoteScripts['file-hashes'])));
        return 0;
      case 'ensure-directory': {
        const created = await ensureDirectory(
          machine,
          args as RemoteScripts['ensure-directory'],
          script,
        );
        io.stdout(powerShellJson({ created }));
        return 0;
      }
      case 'replace-file':
        await replaceFile(machine, args as RemoteScripts['replace-file']);
        io.stdout(powerShellJson({ ok: true }));
        return 0;
      case 'install-windows-feature': {
        // It takes minutes (machine.longOperations); the SSH channel closing kills it, and a
        // killed install changes nothing.
        const name = String((args as RemoteScripts['install-windows-feature']).name);
        const result = await machine.longOperations.run(
          'powershell.exe',
          ['Install-WindowsFeature', name],
          { timeoutMs: Number.POSITIVE_INFINITY, signal: io.signal },
          machine.longOperations.timings.featureInstallMs,
          () =>
            installWindowsFeature(
              machine,
              args as RemoteScripts['install-windows-feature'],
              script,
            ),
        );
        io.stdout(powerShellJson(result));
        return 0;
      }
      case 'preflight-facts':
        io.stdout(powerShellJson(preflightFacts(machine)));
        return 0;
      case 'hyperv-facts':
        io.stdout(powerShellJson(hyperVFacts(machine)));
        return 0;
      case 'rename-computer':
        renameComputer(machine, String((args as RemoteScripts['rename-computer']).newName));
        io.stdout(powerShellJson({ renamed: true, restartNeeded: 'Yes' }));
        return 0;
      case 'join-domain': {
        const join = args as RemoteScripts['join-domain'];
        addComputer(
          machine,
          String(join.domain),
          await readCredentials(machine, io, script),
          join.organizationalUnit ? String(join.organizationalUnit) : undefined,
        );
        io.stdout(powerShellJson({ joined: true, restartNeeded: 'Yes' }));
        return 0;
      }
      case 'leave-domain': {
        const domain = String((args as RemoteScripts['leave-domain']).domain);
        if (machine.domain?.toLowerCase() !== domain.toLowerCase()) {
          throw new Error(
            `The host is not in domain ${domain} but in ${machine.domain ?? 'WORKGROUP'}; it is left as it is`,
          );
        }
        // UnjoinDomainOrWorkgroup(null, null, 0): local, no credentials, no domain controller.
        machine.powerShellModuleLog.push(...moduleLogEvents(script, await stdinText(machine, io)));
        unjoinLocally(machine);
        io.stdout(powerShellJson({ left: true, restartNeeded: 'Yes' }));
        return 0;
      }
      case 'restart-host':
        // shutdown.exe /r /t 5: the command returns, the machine restarts a little later.
        machine.scheduleReboot('winfleet: finishing the installation of a Windows feature');
        io.stdout(powerShellJson({ ok: true }));
        return 0;
      case 'protect-directory':
        await protectDirectory(machine, args as RemoteScripts['protect-directory'], script);
        io.stdout(powerShellJson({ ok: true }));
        return 0;
      case 'remove-path':
        await removePath(machine, (args as RemoteScripts['remove-path']).path, script);
        io.stdout(powerShellJson({ ok: true }));
        return 0;
      case 'diagnostic':
        io.stdout(
          powerShellJson(await diagnosticOutput(machine, args as RemoteScripts['diagnostic'])),
        );
        return 0;
      case 'run-agent': {
        const agentArgs = (args as RemoteScripts['run-agent']).args;
        if (!(await machine.fs.stat(agentExecutable))) {
          throw new PowerShellError(
            '&',
            `The term '${agentExecutable}' is not recognized as the name of a cmdlet, function, script file, or operable program. Check the spelling of the name, or if a path was included, verify that the path is correct and try again.`,
            script,
            '& $agent @agentArgs',
            `ObjectNotFound: (${agentExecutable}:String) [], CommandNotFoundException`,
            'CommandNotFoundException',
          );
        }
        return await runAgentProcess(
          machine,
          Array.isArray(agentArgs) ? agentArgs.map(String) : [],
          io,
          'powershell',
        );
      }
    }
  } catch (error) {
    if (error instanceof PowerShellError) {
      io.stderr(clixmlErrors(error.lines()));
      return 1;
    }
    io.stderr(clixmlErrors([`${(error as Error).message}`]));
    return 1;
  }
}

function hostFacts(machine: SimMachine): HostFactsReport {
  const { osVersion } = machine;
  return {
    hostname: machine.hostname,
    partOfDomain: machine.domain !== undefined,
    domain: machine.domain ?? 'WORKGROUP',
    pendingHostname: machine.pendingHostname,
    osVersion: { ...osVersion },
    freeBytes: machine.fs.freeBytes(),
    // Several adapters, the host's own address not first (ip-configuration.ts).
    ...ipConfiguration(machine),
    powerShellVersion: `5.1.${osVersion.build}.${osVersion.ubr}`,
    containersFeature: machine.features.get('Containers')?.state ?? 'Unknown',
    // Win32_OperatingSystem.LastBootUpTime in UTC, as DateTime.ToString('o') prints it.
    lastBootTime: machine.bootedAt.toISOString().replace(/Z$/, '0000Z'),
  };
}

/** The command's stdin, decoded in the console code page as Windows PowerShell 5.1 does. */
async function stdinText(machine: SimMachine, io: CommandIo): Promise<string> {
  return decodeConsoleInput(
    io.stdin ? await io.stdin() : new Uint8Array(),
    machine.consoleCodePage,
  );
}

/**
 * What `join-domain` reads with [Console]::In.ReadLine() twice: the user name's and the
 * password's UTF-8 in base64, from stdin only, decoded in the console code page as Windows
 * PowerShell 5.1 decodes it. A missing line fails as [Convert]::FromBase64String($null) does, a
 * line that is not base64 as it does for that. What module logging would record of the script
 * goes to the machine's powerShellModuleLog (module-logging.ts).
 */
async function readCredentials(
  machine: SimMachine,
  io: CommandIo,
  script: string,
): Promise<{ username: string; password: string }> {
  const text = await stdinText(machine, io);
  machine.powerShellModuleLog.push(...moduleLogEvents(script, text));
  const lines = text.split(/\r?\n/);
  const decode = (line: string | undefined) => {
    if (line === undefined || line === '') {
      throw new Error(
        'Exception calling "FromBase64String" with "1" argument(s): "Value cannot be null.\r\nParameter name: s" (the credentials were expected on standard input)',
      );
    }
    // .NET's FromBase64String ignores spaces but refuses any other non-base64 character.
    const compact = line.replace(/[ \t]/g, '');
    if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(compact)) {
      throw new Error(
        'Exception calling "FromBase64String" with "1" argument(s): "The input is not a valid Base-64 string as it contains a non-base 64 character, more than two padding characters, or an illegal character among the padding characters. "',
      );
    }
    return Buffer.from(compact, 'base64').toString('utf8');
  };
  return { username: decode(lines[0]), password: decode(lines[1]) };
}

/**
 * `replace-file`: removes copies aside of earlier replacements that nothing runs (a running
 * one stays: Remove-Item -ErrorAction SilentlyContinue), moves `target` aside to the first
 * free `<target>.old-<ms>` (Windows renames a running executable but will not delete or
 * overwrite it), tries to delete that copy at once, then moves `source` in.
 */
async function replaceFile(
  machine: SimMachine,
  args: RemoteScripts['replace-file'],
): Promise<void> {
  const target = absolute(String(args.target));
  const directory = splitPathParent(target);
  const leaf = target.slice(directory.replace(/\\$/, '').length + 1);
  const copyOf = new RegExp(`^${leaf.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.old(-\\d+)?$`, 'i');
  for (const entry of await machine.fs.list(directory)) {
    if (entry.kind !== 'file' || !copyOf.test(entry.name)) continue;
    await machine.fs.remove(`${directory}\\${entry.name}`).catch(() => {});
  }
  if (await exists(machine, target)) {
    let n = Date.now();
    while (await exists(machine, `${target}.old-${n}`)) n++;
    const old = `${target}.old-${n}`;
    await machine.fs.rename(target, old);
    await machine.fs.remove(old).catch(() => {});
  }
  await machine.fs.rename(absolute(String(args.source)), target);
}

/** `install-windows-feature`: what Install-WindowsFeature returns, or its error. */
function installWindowsFeature(
  machine: SimMachine,
  args: RemoteScripts['install-windows-feature'],
  script: string,
): { success: boolean; restartNeeded: string; exitCode: string } {
  const name = String(args.name);
  try {
    return machine.features.install(name);
  } catch (error) {
    throw new PowerShellError(
      'Install-WindowsFeature',
      (error as Error).message,
      script,
      '$result = Install-WindowsFeature -Name $winfleetArgs.name',
      error instanceof RangeError
        ? `InvalidArgument: (${name}:String) [Install-WindowsFeature], Exception`
        : `InvalidOperation: (@{Vhd=; Credent...Name=localhost}:PSObject) [Install-WindowsFeature], Exception`,
      error instanceof RangeError
        ? 'NameDoesNotExist,Microsoft.Windows.ServerManager.Commands.AddWindowsFeatureCommand'
        : 'DISMAPI_Error__Failed_To_Enable_Updates,Microsoft.Windows.ServerManager.Commands.AddWindowsFeatureCommand',
    );
  }
}

async function fileHashes(
  machine: SimMachine,
  args: RemoteScripts['file-hashes'],
): Promise<Record<string, string | null>> {
  const paths: unknown[] = Array.isArray(args.paths)
    ? args.paths
    : args.paths == null
      ? []
      : [args.paths];
  // [ordered]@{} compares keys case-insensitively: the first spelling stays, the last value wins.
  const keys = new Map<string, string>();
  const hashes = new Map<string, string | null>();
  for (const raw of paths) {
    const path = String(raw);
    let hash: string | null = null;
    try {
      const target = absolute(path);
      if ((await machine.fs.stat(target))?.kind === 'file') {
        hash = await machine.fs.sha256(target);
      }
    } catch {
      hash = null;
    }
    const key = path.toLowerCase();
    if (!keys.has(key)) keys.set(key, path);
    hashes.set(key, hash);
  }
  return Object.fromEntries([...keys].map(([key, path]) => [path, hashes.get(key) ?? null]));
}

function absolute(path: string): string {
  return `C:\\${windowsPathSegments(path, sshWorkingDirectory).join('\\')}`;
}

/**
 * `ensure-directory`: walks up from `path` while it does not exist (Test-Path: a file counts
 * as existing), creates the missing directories top-down, appends them to the file `record`
 * (Add-Content: one line each, CRLF; the file is created, its directory is not) and returns
 * them, spelled as Split-Path gives them.
 */
async function ensureDirectory(
  machine: SimMachine,
  args: RemoteScripts['ensure-directory'],
  script: string,
): Promise<string[]> {
  const missing: string[] = [];
  let dir: string = String(args.path ?? '');
  while (dir !== '' && !(await exists(machine, dir))) {
    missing.unshift(dir);
    dir = splitPathParent(dir);
  }
  for (const directory of missing) {
    try {
      await machine.fs.mkdir(absolute(directory));
    } catch (error) {
      throw new PowerShellError(
        'New-Item',
        `Could not find a part of the path '${directory}'.`,
        script,
        'New-Item -ItemType Directory -Path $d | Out-Null',
        `WriteError: (${directory}:String) [New-Item], ${errorCode(error) === 'ENOSPC' ? 'IOException' : 'DirectoryNotFoundException'}`,
        'CreateDirectoryIOError,Microsoft.PowerShell.Commands.NewItemCommand',
      );
    }
  }
  if (missing.length > 0) {
    const record = String(args.record ?? '');
    try {
      const target = absolute(record);
      const before = (await machine.fs.tryReadFile(target)) ?? Buffer.alloc(0);
      const lines = missing.map((d) => `${d}\r\n`).join('');
      await machine.fs.writeFile(target, Buffer.concat([before, Buffer.from(lines)]));
    } catch (error) {
      const message =
        errorCode(error) === 'ENOSPC'
          ? 'There is not enough space on the disk.'
          : `Could not find a part of the path '${record}'.`;
      throw new PowerShellError(
        'Add-Content',
        message,
        script,
        'Add-Content -LiteralPath $winfleetArgs.record -Value $missing',
        `WriteError: (${record}:String) [Add-Content], IOException`,
        'GetContentWriterIOError,Microsoft.PowerShell.Commands.AddContentCommand',
      );
    }
  }
  return missing;
}

/**
 * `protect-directory`: the new DirectorySecurity replaces the directory's DACL, protected
 * (SetAccessRuleProtection($true, $false)), with full control for SYSTEM and Administrators
 * inherited by everything below, and owner Administrators (file-security.ts has the rules);
 * then every entry below is owned by Administrators and keeps no explicit entry (icacls
 * /setowner /T and /reset /T: it inherits the new DACL, whatever protected DACL it had).
 */
async function protectDirectory(
  machine: SimMachine,
  args: RemoteScripts['protect-directory'],
  script: string,
): Promise<void> {
  const path = String(args.path ?? '');
  if ((await machine.fs.stat(absolute(path)))?.kind !== 'directory') {
    throw new PowerShellError(
      'Set-Acl',
      `Cannot find path '${path}' because it does not exist.`,
      script,
      'Set-Acl -LiteralPath $winfleetArgs.path -AclObject $acl',
      `ObjectNotFound: (${path}:String) [Set-Acl], ItemNotFoundException`,
      'PathNotFound,Microsoft.PowerShell.Commands.SetAclCommand',
    );
  }
  await machine.fs.setSecurity(absolute(path), {
    owner: wellKnownSid.administrators,
    protected: true,
    entries: [
      { sid: wellKnownSid.system, read: true, write: true },
      { sid: wellKnownSid.administrators, read: true, write: true },
    ],
  });
  // The icacls /setowner and /reset of every entry below (remote-scripts resetChildrenSecurity).
  await machine.fs.resetSecurityBelow(absolute(path));
}

/** Test-Path -LiteralPath: anything there (file or directory); an invalid path is not. */
async function exists(machine: SimMachine, path: string): Promise<boolean> {
  try {
    return (await machine.fs.stat(absolute(path))) !== undefined;
  } catch {
    return false;
  }
}

/** Split-Path -Parent on a path string: "C:\\k\\x" → "C:\\k", "C:\\k" → "C:\\", "C:\\" → "". */
export function splitPathParent(path: string): string {
  const trimmed = path.replace(/(?<=.)[\\/]+$/, '');
  if (/^[A-Za-z]:[\\/]?$/.test(trimmed)) return '';
  const at = Math.max(trimmed.lastIndexOf('\\'), trimmed.lastIndexOf('/'));
  if (at < 0) return '';
  const parent = trimmed.slice(0, at);
  return /^[A-Za-z]:$/.test(parent) ? `${parent}\\` : parent;
}

async function removePath(machine: SimMachine, path: string, script: string): Promise<void> {
  const target = absolute(String(path));
  try {
    await machine.fs.remove(target, { recursive: true, missingOk: true });
  } catch (error) {
    const code = errorCode(error);
    const failedPath = (error as { path?: string }).path ?? target;
    if (code === 'EPERM' || code === 'EBUSY') {
      throw new PowerShellError(
        'Remove-Item',
        `Cannot remove item ${failedPath}: Access to the path '${failedPath}' is denied.`,
        script,
        '  Remove-Item -LiteralPath $winfleetArgs.path -Recurse -Force',
        `PermissionDenied: (${failedPath}:FileInfo) [Remove-Item], UnauthorizedAccessException`,
        'RemoveFileSystemItemUnAuthorizedAccess,Microsoft.PowerShell.Commands.RemoveItemCommand',
      );
    }
    throw error;
  }
}

/** Runs winfleet-agent.exe with `args`, streaming its output; killed when the channel closes. */
async function runAgentProcess(
  machine: SimMachine,
  args: string[],
  io: CommandIo,
  shell: 'cmd' | 'powershell',
): Promise<number> {
  if (io.signal.aborted) return 1;
  let process: Awaited<ReturnType<SimMachine['spawn']>>;
  try {
    process = await machine.spawn({
      binaryPath: agentExecutable,
      args,
      stdout: (text) => io.stdout(text),
      stderr: (text) => io.stderr(text),
    });
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
    if (shell === 'cmd') {
      io.stderr(
        `'${agentExecutable}' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n`,
      );
      return 9009;
    }
    io.stderr(
      clixmlErrors([
        `The term '${agentExecutable}' is not recognized as the name of a cmdlet, function, script file, or operable program.`,
      ]),
    );
    return 1;
  }
  const kill = () => process.kill(1, 'SSH session closed');
  io.signal.addEventListener('abort', kill, { once: true });
  try {
    return (await process.exited).code;
  } finally {
    io.signal.removeEventListener('abort', kill);
  }
}

// PowerShell output.

/**
 * A value as Windows PowerShell 5.1 prints `ConvertTo-WinfleetJson`: compressed JSON whose
 * non-ASCII characters are \uXXXX escapes (the prelude's replacement) and whose <, >, & and '
 * are escaped too (ConvertTo-Json in 5.1 uses JavaScriptSerializer, which does that), then CRLF.
 */
export function powerShellJson(value: unknown): string {
  const json = JSON.stringify(value).replace(
    /[<>&'\u0080-\uffff]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return `${json}\r\n`;
}

/** A terminating error of a catalog script, in PowerShell's error record layout. */
class PowerShellError extends Error {
  readonly #command: string;
  readonly #script: string;
  readonly #statement: string;
  readonly #category: string;
  readonly #errorId: string;

  constructor(
    command: string,
    message: string,
    script: string,
    statement: string,
    category: string,
    errorId: string,
  ) {
    super(message);
    this.#command = command;
    this.#script = script;
    this.#statement = statement;
    this.#category = category;
    this.#errorId = errorId;
  }

  lines(): string[] {
    const scriptLines = this.#script.split('\n');
    const index = scriptLines.findIndex((l) => l.includes(this.#statement.trim()));
    const line = index < 0 ? 1 : index + 1;
    const text = (index < 0 ? this.#statement : scriptLines[index]!).trim();
    const shown = text.length > 72 ? `${text.slice(0, 72)} ...` : text;
    return [
      `${this.#command} : ${this.message}`,
      `At line:${line} char:1`,
      `+ ${shown}`,
      `+ ${'~'.repeat(Math.min(shown.length, 72))}`,
      `    + CategoryInfo          : ${this.#category}`,
      `    + FullyQualifiedErrorId : ${this.#errorId}`,
      ' ',
    ];
  }
}

/** Error lines as powershell.exe -EncodedCommand writes them to a redirected stderr. */
export function clixmlErrors(lines: string[]): string {
  const escapeXml = (text: string) =>
    text
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
      .replace(/\r?\n/g, '_x000D__x000A_');
  const records = lines.map((line) => `<S S="Error">${escapeXml(line)}_x000D__x000A_</S>`).join('');
  return `#< CLIXML\r\n<Objs Version="1.1.0.1" xmlns="http://schemas.microsoft.com/powershell/2004/04">${records}</Objs>`;
}
