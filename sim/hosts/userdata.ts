/**
 * A simulated host's first boot with user data, as a launch agent runs it: EC2Launch v2 runs
 * the PowerShell between `<powershell>` and `</powershell>` once, at the instance's first boot,
 * as LocalSystem (AWS docs, user-data.html and ec2-windows-user-data.html); cloudbase-init runs
 * a `#ps1_sysnative` script with the 64-bit PowerShell; plain PowerShell (the `powershell` and
 * `azure` formats) is what an operator or Azure's Custom Script Extension runs.
 *
 * A simulated host has no PowerShell interpreter, so it runs exactly one script: the join
 * script `winfleet join-command` prints. It parses the user data with the PowerShell grammar,
 * reads the script's values from the syntax tree (join-script-reader.ts), renders the script
 * again from them (src/join/scripts) and runs it only when the user data is that text byte for
 * byte; anything else is refused and logged, as a host fails a script it cannot run. Then it
 * carries out the steps: C:\k locked down, the agent downloaded over real HTTP (the lab's
 * registry on loopback), its SHA-256 checked, and `winfleet-agent join` run as a process of the
 * machine, which runs the real agent code with the simulated HostOS (programs.ts). The log is
 * kept in EC2Launch's log file and in `UserDataRun`.
 */
import { createHash } from 'node:crypto';
import { joinTokenEnv } from '../../src/join/join-command-values.ts';
import {
  type JoinScriptFormat,
  renderJoinScript,
} from '../../src/join/scripts/render-join-script.ts';
import { hostPaths, kubeDir, winfleetDir } from '../../src/servicesmanifest/host-paths.ts';
import { parsePowerShellTree } from '../testkit/powershell-grammar.ts';
import { wellKnownSid } from './file-security.ts';
import { readJoinScript } from './join-script-reader.ts';
import type { SimMachine } from './machine.ts';
import { readStandIn } from './stand-in-binary.ts';

/** Where EC2Launch v2 writes its log (C:\ProgramData\Amazon\EC2Launch\log\agent.log). */
export const launchAgentLog = 'C:\\ProgramData\\Amazon\\EC2Launch\\log\\agent.log';

/** The download limit: the agent executable is well under it. */
const maxDownloadBytes = 512 * 1024 * 1024;
const downloadTimeoutMs = 60_000;

export interface UserDataResult {
  /** The script's exit code: 0 joined, 1 failed or refused. */
  exitCode: number;
  /** The format recognised, when the user data was a join script. */
  format?: JoinScriptFormat;
  /** What the script and the agent printed, and the launch agent's own lines. */
  output: string;
}

/** The run of a machine's user data, started at its first boot. */
export interface UserDataRun {
  readonly done: Promise<UserDataResult>;
  /** Everything logged so far. */
  output(): string;
}

/** The candidate formats and the PowerShell they hold, by the launch agents' own rules. */
function scriptsOf(userData: string): { formats: JoinScriptFormat[]; powerShell: string } {
  const tagged = /<powershell>([\s\S]*?)<\/powershell>/i.exec(userData);
  if (tagged) return { formats: ['aws'], powerShell: tagged[1]! };
  if (/^#ps1_sysnative\r?\n/.test(userData)) {
    return {
      formats: ['cloudbase-init'],
      powerShell: userData.replace(/^#ps1_sysnative\r?\n/, ''),
    };
  }
  return { formats: ['powershell', 'azure'], powerShell: userData };
}

/** Recognises the join script; throws saying why the user data is not one. */
async function recognise(userData: string) {
  const { formats, powerShell } = scriptsOf(userData);
  const { root, errors } = await parsePowerShellTree(powerShell);
  if (errors.length > 0) {
    const e = errors[0]!;
    throw new Error(
      `the script does not parse (line ${e.line}, column ${e.column}: ${e.kind} ${JSON.stringify(e.text.slice(0, 40))})`,
    );
  }
  const read = readJoinScript(root);
  const [command, ...flags] = read.joinArgs;
  const values: Record<string, string> = {};
  for (let i = 0; i < flags.length; i += 2) values[flags[i]!] = flags[i + 1] ?? '';
  const input = {
    agentUrl: read.agentUrl,
    agentSha256: read.agentSha256,
    apiServer: values['--api-server'] ?? '',
    token: read.token,
    caCertHash: values['--ca-cert-hash'] ?? '',
    namespace: values['--namespace'] ?? '',
    ...(values['--node-name'] === undefined ? {} : { nodeName: values['--node-name'] }),
    ...(values['--instance-identity'] === undefined
      ? {}
      : { instanceIdentity: values['--instance-identity'] as 'aws' }),
    ...(values['--pre-pull-taint'] === undefined ? {} : { prePullTaint: true as const }),
  };
  for (const format of formats) {
    let expected: string;
    try {
      expected = renderJoinScript(format, input);
    } catch (error) {
      throw new Error(`its values are not a join script's: ${(error as Error).message}`);
    }
    if (command === 'join' && expected === userData) return { format, read };
  }
  throw new Error(
    `it is not, byte for byte, the ${formats.join(' or ')} join script winfleet join-command writes for its values`,
  );
}

/** Starts the user data run on `machine` (its first boot); resolves when the script ends. */
export function runUserData(machine: SimMachine, userData: string): UserDataRun {
  let output = '';
  // One write at a time, in order; the run ends only once the log is on the disk.
  let written = Promise.resolve();
  const log = (text: string) => {
    output += text;
    const snapshot = Buffer.from(output);
    written = written
      .then(() => machine.fs.writeFile(launchAgentLog, snapshot, { createParents: true }))
      .catch(() => {});
  };
  const run = async (): Promise<UserDataResult> => {
    log(`EC2Launch: running user data on ${machine.hostname}\r\n`);
    let recognised: Awaited<ReturnType<typeof recognise>>;
    try {
      recognised = await recognise(userData);
    } catch (error) {
      log(
        `EC2Launch: the simulated host cannot run this user data: ${(error as Error).message}\r\n`,
      );
      return { exitCode: 1, output };
    }
    const { format, read } = recognised;
    log(`EC2Launch: the user data is a winfleet join script (${format})\r\n`);
    const fail = (message: string): UserDataResult => {
      log(`winfleet join failed: ${message}\r\n`);
      return { exitCode: 1, format, output };
    };
    try {
      await lockDownKubeDir(machine);
      await machine.fs.mkdir(winfleetDir, { recursive: true });
    } catch (error) {
      return fail((error as Error).message);
    }
    const download = `${hostPaths.agentExe}.download`;
    let bytes: Buffer;
    try {
      bytes = await httpDownload(read.agentUrl);
    } catch (error) {
      return fail(`Invoke-WebRequest : ${(error as Error).message}`);
    }
    await machine.fs.writeFile(download, bytes);
    const actual = createHash('sha256').update(bytes).digest('hex');
    if (actual !== read.agentSha256) {
      await machine.fs.remove(download, { missingOk: true });
      return fail(
        `winfleet-agent.exe from ${read.agentUrl} has SHA-256 ${actual}, not ${read.agentSha256}; it was not run`,
      );
    }
    try {
      await machine.fs.rename(download, hostPaths.agentExe, { replace: true });
    } catch (error) {
      return fail(`Move-Item : ${(error as Error).message}`);
    }
    if (readStandIn(bytes)?.name !== 'winfleet-agent') {
      return fail(
        `Program 'winfleet-agent.exe' failed to run: The specified executable is not a valid application for this OS platform.`,
      );
    }
    let process: Awaited<ReturnType<SimMachine['spawn']>>;
    try {
      // $env:WINFLEET_JOIN_TOKEN: the script's PowerShell passes its environment on.
      process = await machine.spawn({
        binaryPath: hostPaths.agentExe,
        args: read.joinArgs,
        env: { ...machine.env.entries(), [joinTokenEnv]: read.token },
        stdout: log,
        stderr: log,
      });
    } catch (error) {
      return fail((error as Error).message);
    }
    const { code } = await process.exited;
    if (code !== 0) return fail(`winfleet-agent join exited with code ${code}`);
    log('EC2Launch: user data finished with exit code 0\r\n');
    return { exitCode: 0, format, output };
  };
  const done = run().then(async (result) => {
    await written;
    return result;
  });
  return { done, output: () => output };
}

/** What the script's Set-Acl does to C:\k (remote-scripts.ts protect-directory's rules). */
async function lockDownKubeDir(machine: SimMachine): Promise<void> {
  await machine.fs.mkdir(kubeDir, { recursive: true });
  await machine.fs.setSecurity(kubeDir, {
    owner: wellKnownSid.administrators,
    protected: true,
    entries: [
      { sid: wellKnownSid.system, read: true, write: true },
      { sid: wellKnownSid.administrators, read: true, write: true },
    ],
  });
  // What was below C:\k before: Administrators' and inheriting (icacls /setowner, /reset /T).
  await machine.fs.resetSecurityBelow(kubeDir);
}

/** Invoke-WebRequest -OutFile: a GET that must answer 200, bounded in size and time. */
async function httpDownload(url: string): Promise<Buffer> {
  let response: Response;
  try {
    response = await fetch(url, {
      signal: AbortSignal.timeout(downloadTimeoutMs),
      redirect: 'follow',
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new Error(`Unable to connect to the remote server (${cause})`);
  }
  if (response.status !== 200) {
    throw new Error(
      `The remote server returned an error: (${response.status}) ${response.statusText}.`,
    );
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.length;
    if (size > maxDownloadBytes)
      throw new Error(`the download is larger than ${maxDownloadBytes} bytes`);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}
