/**
 * containerd's images through ctr.exe (containerd's own client, cmd/ctr): what the agent's
 * pre-pull (../pre-pull.ts) runs on Windows. ctr speaks to containerd over its named pipe
 * (\\.\pipe\containerd-containerd, the default address on Windows) in the k8s.io namespace,
 * where the kubelet's CRI keeps its images, and reads the registry hosts (mirrors, CAs) from
 * the same certs.d directory containerd's CRI does (--hosts-dir).
 *
 * ctr.exe is in the payload (hack/build-payload.sh builds containerd's cmd/ctr for Windows at
 * containerd's version) and installed beside containerd.exe.
 *
 * ctr prints a failure as "ctr: <error>" on standard error and exits 1 (cmd/ctr/main.go:
 * `fmt.Fprintln(os.Stderr, "ctr:", err)`); a pull of a reference the registry does
 * not have fails with containerd's client error
 * `failed to resolve reference "<ref>": <ref>: not found` (client/pull.go fetch,
 * core/remotes/docker/resolver.go Resolve wrapping errdefs.ErrNotFound).
 */
import { WinfleetError } from '../../errors/catalog.ts';
import { hostPaths } from '../../servicesmanifest/host-paths.ts';

/** ctr.exe beside containerd.exe. */
export const ctrExe = `${hostPaths.containerdDir}\\ctr.exe`;
const globalArgs = ['--address', '\\\\.\\pipe\\containerd-containerd', '--namespace', 'k8s.io'];

/** Lists the names of images called `reference` (one per line, or nothing). */
export function imageListArgs(reference: string): string[] {
  return [...globalArgs, 'images', 'list', '--quiet', `name==${reference}`];
}

/** Pulls (and unpacks for the default snapshotter) `reference` for the host's platform. */
export function imagePullArgs(reference: string): string[] {
  return [
    ...globalArgs,
    'images',
    'pull',
    '--hosts-dir',
    hostPaths.containerdCertsDir,
    '--',
    reference,
  ];
}

/**
 * Whether `ctr images list --quiet name==<reference>` listed the image: only that exact name,
 * one per line; anything else in the output is refused, not guessed at.
 */
export function parseImageListOutput(stdout: string, reference: string): boolean {
  const lines = stdout.split(/\r?\n/).filter((line) => line !== '');
  for (const line of lines) {
    if (line !== reference)
      throw new WinfleetError(
        'WF_WINDOWS_COMMAND_FAILED',
        `ctr images list printed "${line.slice(0, 200)}" for a filter on "${reference}"`,
      );
  }
  return lines.length > 0;
}

/** containerd's error from ctr's standard error: its last "ctr: " line, or the whole text. */
export function ctrError(stderr: string): string {
  const lines = stderr.split(/\r?\n/).filter((line) => line.trim() !== '');
  const last = [...lines].reverse().find((line) => line.startsWith('ctr: '));
  return (last ? last.slice('ctr: '.length) : lines.join(' ')).slice(0, 500);
}
