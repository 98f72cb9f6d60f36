/**
 * Runs the winfleet command line (src/cli/main.ts) as a child process for e2e tests, with
 * KUBECONFIG removed from its environment (tests pass --kubeconfig), and collects its exit code
 * and output; a run that outlasts `timeoutMs` is killed.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const cli = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

export interface WinfleetRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runWinfleet(args: string[], timeoutMs = 120_000): Promise<WinfleetRun> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env.KUBECONFIG;
    const child = spawn(process.execPath, [cli, ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
