/**
 * The operator's view of one host over SSH: run catalog scripts and read their JSON, copy
 * files only when the remote SHA-256 differs, run the agent, and have it remove winfleet.
 * A script or agent run that fails is WF_REMOTE_COMMAND_FAILED with the step in its details.
 */

import { errorCode, WinfleetError } from '../errors/catalog.ts';
import { parsePowerShellJson, powerShellErrorText } from '../powershell/powershell.ts';
import { hostPaths, winfleetDir } from '../servicesmanifest/host-paths.ts';
import {
  type HostFacts,
  type RemoteScriptName,
  type RemoteScripts,
  readHostFacts,
  remoteCommand,
} from './remote-scripts.ts';
import type { CommandResult, SshSession } from './ssh-session.ts';

/** What WF_REMOTE_COMMAND_FAILED carries: the step as the host named it, and its output. */
export interface RemoteCommandFailure {
  /** The catalog script (`file-hashes`) or the agent's step (`agent bootstrap: kubelet`). */
  step: string;
  result: CommandResult;
}

function remoteCommandFailed(
  step: string,
  result: CommandResult,
  detail: string,
): WinfleetError<RemoteCommandFailure> {
  return new WinfleetError(
    'WF_REMOTE_COMMAND_FAILED',
    `${step} failed (exit ${result.code}): ${detail}`,
    {
      details: { step, result },
    },
  );
}

/** The step a host reported failing, when `error` is a failed remote command. */
export function failedRemoteStep(error: unknown): string | undefined {
  return errorCode(error) === 'WF_REMOTE_COMMAND_FAILED'
    ? (error as WinfleetError<RemoteCommandFailure>).details?.step
    : undefined;
}

/** A local file, verified, to copy from; released once copied. */
export interface LocalFile {
  path: string;
  release(): Promise<void>;
}

/** A file to have on the host. */
export interface SyncFile {
  path: string;
  sha256: string;
  /** The verified local copy, fetched only when the host's differs. */
  local: () => Promise<LocalFile>;
  /** The file is an executable that may be running (the agent itself). */
  mayBeRunning?: boolean;
}

export class RemoteHost {
  readonly session: SshSession;
  readonly timeoutMs: number;
  /** How long one file copy may take. */
  readonly uploadTimeoutMs: number;

  constructor(session: SshSession, timeoutMs: number, uploadTimeoutMs = 300_000) {
    this.session = session;
    this.timeoutMs = timeoutMs;
    this.uploadTimeoutMs = uploadTimeoutMs;
  }

  /**
   * Runs a catalog script and reads its JSON. `input` goes to the script's stdin (a secret the
   * script reads with [Console]::In; see SshSession.exec), never into its command line.
   */
  async script<K extends RemoteScriptName>(
    name: K,
    args: RemoteScripts[K],
    options: { input?: string } = {},
  ): Promise<unknown> {
    const result = await this.#exec(name, remoteCommand(name, args), options.input);
    if (result.code !== 0)
      throw remoteCommandFailed(
        name,
        result,
        powerShellErrorText(result.stderr) || result.stdout.trim(),
      );
    return parsePowerShellJson(result.stdout, name);
  }

  /** Runs a command; one stopped for printing too much fails naming `step`. */
  async #exec(step: string, command: string, input?: string): Promise<CommandResult> {
    try {
      return await this.session.exec(command, this.timeoutMs, undefined, input);
    } catch (error) {
      if (errorCode(error) !== 'WF_REMOTE_COMMAND_FAILED') throw error;
      throw new WinfleetError<RemoteCommandFailure>(
        'WF_REMOTE_COMMAND_FAILED',
        `${step} failed: ${(error as Error).message}`,
        { cause: error, details: { step, result: { code: -1, stdout: '', stderr: '' } } },
      );
    }
  }

  async facts(): Promise<HostFacts> {
    return readHostFacts(await this.script('host-facts', {}));
  }

  /** Copies each file whose remote SHA-256 differs; returns the paths copied. */
  async syncFiles(files: SyncFile[]): Promise<string[]> {
    if (files.length === 0) return [];
    const remote = (await this.script('file-hashes', {
      paths: files.map((f) => f.path),
    })) as Record<string, string | null>;
    const copied: string[] = [];
    for (const file of files) {
      if (remote[file.path] === file.sha256) continue;
      // A running executable cannot be overwritten: copy beside it, then swap the names.
      const target = file.mayBeRunning ? `${file.path}.new` : file.path;
      await this.#copy(file, target);
      if (file.mayBeRunning)
        await this.script('replace-file', { source: target, target: file.path });
      copied.push(file.path);
    }
    if (copied.length > 0) {
      const after = (await this.script('file-hashes', { paths: copied })) as Record<
        string,
        string | null
      >;
      const bad = files.filter((f) => copied.includes(f.path) && after[f.path] !== f.sha256);
      if (bad.length > 0)
        throw new WinfleetError(
          'WF_SSH_FILE_COPY',
          `After copying, ${bad.map((b) => b.path).join(', ')} still differ on the host; check free space and antivirus on the host`,
        );
    }
    return copied;
  }

  /**
   * Streams `file` from its local copy to `target`; the bytes sent must have the hash it is
   * listed with (a local file changed after it was verified is never swapped in).
   */
  async #copy(file: SyncFile, target: string): Promise<void> {
    const local = await file.local();
    try {
      const sent = await this.session.uploadFile(target, local.path, this.uploadTimeoutMs);
      if (sent.sha256 !== file.sha256)
        throw new WinfleetError(
          'WF_PAYLOAD_INVALID',
          `${local.path} changed while it was copied to ${target} (SHA-256 ${sent.sha256}, expected ${file.sha256}); it is copied again on the next attempt`,
        );
    } finally {
      await local.release();
    }
  }

  /** Copies a file to the host whatever it holds now (config files, which are small). */
  upload(path: string, data: Buffer): Promise<void> {
    return this.session.upload(path, data);
  }

  close(): void {
    this.session.close();
  }

  /** Runs `winfleet-agent <args>` and returns its JSON result. */
  async agent(args: string[]): Promise<Record<string, unknown>> {
    const result = await this.#exec(`agent ${args[0]}`, remoteCommand('run-agent', { args }));
    const lastLine = result.stdout.trim().split('\n').at(-1) ?? '';
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(lastLine) as Record<string, unknown>;
    } catch {
      // Not JSON: fall through to the error below with what it printed.
    }
    if (result.code !== 0) {
      const step =
        typeof parsed.step === 'string' ? `agent ${args[0]}: ${parsed.step}` : `agent ${args[0]}`;
      const message =
        typeof parsed.error === 'string'
          ? parsed.error
          : powerShellErrorText(result.stderr) || result.stdout.trim();
      throw remoteCommandFailed(step, result, message);
    }
    return parsed;
  }

  /**
   * Has the agent undo what it did (services, files, networks, environment), then removes
   * the directories it names (winfleet's own, and C:\k when winfleet created it). A host
   * without the agent has nothing of winfleet's to undo.
   */
  async removeWinfleet(): Promise<void> {
    const hashes = (await this.script('file-hashes', { paths: [hostPaths.agentExe] })) as Record<
      string,
      string | null
    >;
    if (!hashes[hostPaths.agentExe]) return;
    const result = await this.agent(['cleanup']);
    for (const path of (result.removeAfter as string[] | undefined) ?? [winfleetDir]) {
      await this.script('remove-path', { path });
    }
  }
}
