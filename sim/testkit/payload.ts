/**
 * A stand-in payload for tests and the lab: small files in place of the Windows binaries, each
 * "winfleet-standin <name> <version>" (the simulated hosts read their version from it), with a
 * real payload.json listing their SHA-256.
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Payload } from '../../src/payload/payload.ts';

export const standInFiles = [
  'containerd.exe',
  // containerd starts one per running pod sandbox; no service runs it (containerd-standin.ts).
  'containerd-shim-runhcs-v1.exe',
  'kubelet.exe',
  'kube-proxy.exe',
  // Runs the kubelet and kube-proxy services, with their output in C:\k\logs.
  'kube-log-runner.exe',
  'csi-proxy.exe',
  'windows_exporter.exe',
  'win-bridge.exe',
  'host-local.exe',
  // The CNI plugin the node's conflist names (the simulated hosts' CNI needs it in C:\k\cni\bin).
  'sdnbridge.exe',
  'winfleet-agent.exe',
  'winfleet-service.exe',
];

/** Writes a stand-in payload into `dir` and returns its manifest. */
export async function writeStandInPayload(
  dir: string,
  options: { version?: string; kubernetesVersion?: string } = {},
): Promise<Payload> {
  const kubernetesVersion = options.kubernetesVersion ?? 'v1.36.5';
  const version = options.version ?? `${kubernetesVersion.slice(1)}-wf.1`;
  await mkdir(dir, { recursive: true });
  const files = [];
  for (const name of standInFiles) {
    const fileVersion = name.startsWith('winfleet-') ? version : kubernetesVersion;
    const content = Buffer.from(`winfleet-standin ${name.replace(/\.exe$/, '')} ${fileVersion}\n`);
    await writeFile(join(dir, name), content);
    files.push({
      name,
      version: fileVersion,
      sha256: createHash('sha256').update(content).digest('hex'),
      source: { path: name },
    });
  }
  const payload: Payload = { version, kubernetesVersion, files };
  await writeFile(join(dir, 'payload.json'), `${JSON.stringify(payload, null, 2)}\n`);
  return payload;
}
