/**
 * A stand-in payload for tests and the lab: small files in place of the Windows binaries, each
 * "winfleet-standin <name> <version>" (the simulated hosts read their version from it), with a
 * real payload.json listing their SHA-256.
 */
import { createHash } from 'node:crypto';
import { mkdir, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Payload } from '../../src/payload/payload.ts';
import { hashFile } from '../../src/payload/payload-file.ts';

/**
 * How a real payload's bytes split between its files (the share of each, from the Kubernetes
 * node binaries, containerd and winfleet's own builds for Windows), to make stand-ins of a
 * real payload's total size. ctr.exe (20 MB in payload v1.36.5-wf.4, beside containerd.exe's
 * 37 MB) is not among them: its stand-in stays small.
 */
export const realPayloadShares: Readonly<Record<string, number>> = {
  'kubelet.exe': 0.33,
  'kube-proxy.exe': 0.16,
  'containerd.exe': 0.15,
  'containerd-shim-runhcs-v1.exe': 0.04,
  'kube-log-runner.exe': 0.01,
  'csi-proxy.exe': 0.05,
  'windows_exporter.exe': 0.07,
  'win-bridge.exe': 0.01,
  'host-local.exe': 0.01,
  'sdnbridge.exe': 0.01,
  'winfleet-agent.exe': 0.15,
  'winfleet-service.exe': 0.01,
};

/** Sizes for writeStandInPayload that add up to `totalBytes`, split as a real payload is. */
export function realPayloadSizes(totalBytes: number): Record<string, number> {
  return Object.fromEntries(
    Object.entries(realPayloadShares).map(([name, share]) => [
      name,
      Math.round(totalBytes * share),
    ]),
  );
}

export const standInFiles = [
  'containerd.exe',
  // containerd's client, which the agent's pre-pull runs (src/agent/windows/containerd-images.ts).
  'ctr.exe',
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
  // flannel-vxlan: flanneld (a service through winfleet-service.exe), flannel's CNI plugin and
  // the win-overlay plugin it delegates to.
  'flanneld.exe',
  'flannel.exe',
  'win-overlay.exe',
  'winfleet-agent.exe',
  'winfleet-service.exe',
];

/**
 * Writes a stand-in payload into `dir` and returns its manifest. `sizes` (bytes by file name)
 * pads those files to a real binary's size: the stand-in line, then zeros (a sparse file,
 * hashed as a stream: nothing that size is held in memory).
 */
export async function writeStandInPayload(
  dir: string,
  options: {
    version?: string;
    kubernetesVersion?: string;
    sizes?: Record<string, number>;
    /**
     * Files beyond standInFiles, as an administrator adds them to a payload: hybrid-overlay-node.exe
     * (ovn-hybrid), which winfleet's payload build cannot make.
     */
    extraFiles?: readonly string[];
  } = {},
): Promise<Payload> {
  const kubernetesVersion = options.kubernetesVersion ?? 'v1.36.5';
  const version = options.version ?? `${kubernetesVersion.slice(1)}-wf.1`;
  await mkdir(dir, { recursive: true });
  const files = [];
  for (const name of [...standInFiles, ...(options.extraFiles ?? [])]) {
    const fileVersion = name.startsWith('winfleet-') ? version : kubernetesVersion;
    const content = Buffer.from(`winfleet-standin ${name.replace(/\.exe$/, '')} ${fileVersion}\n`);
    await writeFile(join(dir, name), content);
    const size = options.sizes?.[name];
    if (size !== undefined && size > content.length) await truncate(join(dir, name), size);
    files.push({
      name,
      version: fileVersion,
      sha256:
        size !== undefined && size > content.length
          ? (await hashFile(join(dir, name))).sha256
          : createHash('sha256').update(content).digest('hex'),
      source: { path: name },
    });
  }
  const payload: Payload = { version, kubernetesVersion, files };
  await writeFile(join(dir, 'payload.json'), `${JSON.stringify(payload, null, 2)}\n`);
  return payload;
}
