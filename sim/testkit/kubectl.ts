/**
 * Runs kubectl against a test cluster with a manifest on stdin, as a person would: tests that
 * must see what kubectl prints (admission warnings, server-side dry runs) go through it.
 */
import { execFile } from 'node:child_process';

export interface KubectlResult {
  /** kubectl's exit code (0 on success). */
  code: number;
  stdout: string;
  stderr: string;
}

/** `kubectl --kubeconfig <kubeconfig> <args…>` with `input` on stdin; never rejects. */
export function kubectl(kubeconfig: string, args: string[], input = ''): Promise<KubectlResult> {
  return new Promise((resolve) => {
    const child = execFile(
      'kubectl',
      ['--kubeconfig', kubeconfig, ...args],
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end(input);
  });
}

/** A server-side dry run of creating `manifest`: what the webhooks say, nothing stored. */
export function dryRunCreate(kubeconfig: string, manifest: string): Promise<KubectlResult> {
  return kubectl(kubeconfig, ['create', '--dry-run=server', '-o', 'name', '-f', '-'], manifest);
}
