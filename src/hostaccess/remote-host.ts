/**
 * The operator's view of one host over SSH: run catalog scripts and read their JSON, copy
 * files only when the remote SHA-256 differs, and run the agent.
 */

import { parsePowerShellJson, powerShellErrorText } from '../powershell/powershell.ts';
import {
  type HostFacts,
  type RemoteScriptName,
  type RemoteScripts,
  remoteCommand,
} from './remote-scripts.ts';
import { type CommandResult, SshError, type SshSession } from './ssh-session.ts';

export class RemoteCommandError extends Error {
  readonly step: string;
  readonly result: CommandResult;
  constructor(step: string, result: CommandResult, detail: string) {
    super(`${step} failed (exit ${result.code}): ${detail}`);
    this.name = 'RemoteCommandError';
    this.step = step;
    this.result = result;
  }
}

/** A file to have on the host. */
export interface SyncFile {
  path: string;
  sha256: string;
  read: () => Promise<Buffer>;
  /** The file is an executable that may be running (the agent itself). */
  mayBeRunning?: boolean;
}

export class RemoteHost {
  readonly session: SshSession;
  readonly timeoutMs: number;

  constructor(session: SshSession, timeoutMs: number) {
    this.session = session;
    this.timeoutMs = timeoutMs;
  }

  async script<K extends RemoteScriptName>(name: K, args: RemoteScripts[K]): Promise<unknown> {
    const result = await this.session.exec(remoteCommand(name, args), this.timeoutMs);
    if (result.code !== 0)
      throw new RemoteCommandError(
        name,
        result,
        powerShellErrorText(result.stderr) || result.stdout.trim(),
      );
    return parsePowerShellJson(result.stdout, name);
  }

  facts(): Promise<HostFacts> {
    return this.script('host-facts', {}) as Promise<HostFacts>;
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
      if (file.mayBeRunning) {
        // A running executable cannot be overwritten: copy beside it, then swap the names.
        await this.session.upload(`${file.path}.new`, await file.read());
        await this.script('replace-file', { source: `${file.path}.new`, target: file.path });
      } else {
        await this.session.upload(file.path, await file.read());
      }
      copied.push(file.path);
    }
    if (copied.length > 0) {
      const after = (await this.script('file-hashes', { paths: copied })) as Record<
        string,
        string | null
      >;
      const bad = files.filter((f) => copied.includes(f.path) && after[f.path] !== f.sha256);
      if (bad.length > 0)
        throw new SshError(
          'sftp',
          `After copying, ${bad.map((b) => b.path).join(', ')} still differ on the host`,
        );
    }
    return copied;
  }

  /** Runs `winfleet-agent <args>` and returns its JSON result. */
  async agent(args: string[]): Promise<Record<string, unknown>> {
    const result = await this.session.exec(remoteCommand('run-agent', { args }), this.timeoutMs);
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
      throw new RemoteCommandError(step, result, message);
    }
    return parsed;
  }
}
