/**
 * The one seam between `winfleet-agent join` and the payload pull (payload-pull.ts): every
 * manifest file whose staged copy under C:\k\winfleet\payload is missing or different, pulled
 * from the payload artifact's registry by digest, mirrors first, verified while streaming; and
 * the agent's service shim (winfleet-service.exe, which the manifest leaves out because the
 * operator installs it itself over SSH: payload-sync.ts), pulled the same way and put at its
 * own path. A registry that cannot be reached throws retryable errors (join.ts retries with
 * backoff); content that does not match its digest does not.
 *
 * When the operator serves its payload from a directory (no `payload` in winfleet-join), hosts
 * cannot pull: only a payload already staged with the manifest's hashes (a pre-baked image) is
 * accepted, and anything else is refused saying so.
 */
import { WinfleetError } from '../errors/catalog.ts';
import type { DockerConfigEntry, DockerConfigSource } from '../images/docker-config.ts';
import type { JoinPayloadSource } from '../join/join-info.ts';
import { serviceShimFileName } from '../payload/payload.ts';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import { paths } from './agent-config.ts';
import type { HostOS } from './host-os.ts';
import { pullPayload as pullFromRegistry } from './payload-pull.ts';
import { replaceExecutable } from './replace-executable.ts';

/**
 * Pulls the manifest's files into the payload directory, and the agent's service shim to its
 * own path, verified against the artifact's payload.json; throws retryable errors while the
 * registry cannot be reached.
 * @package
 */
export type PullPayload = (
  host: HostOS,
  manifest: ServicesManifest,
  source: JoinPayloadSource | undefined,
  credentials: DockerConfigEntry[] | undefined,
  options: { signal?: AbortSignal },
) => Promise<void>;

/** The pull secret's entries as the Docker config document the registry client searches. */
export function asDockerConfig(entries: readonly DockerConfigEntry[]): DockerConfigSource {
  const auths = Object.fromEntries(
    entries.map(({ key, credentials: c }) => [
      key,
      {
        ...(c.username !== undefined ? { username: c.username } : {}),
        ...(c.password !== undefined ? { password: c.password } : {}),
        ...(c.identityToken !== undefined ? { identitytoken: c.identityToken } : {}),
        ...(c.registryToken !== undefined ? { registrytoken: c.registryToken } : {}),
      },
    ]),
  );
  return { source: 'the payload pull secret', config: { auths } };
}

/** @package */
export const pullPayload: PullPayload = async (host, manifest, source, credentials, options) => {
  if (!source) return checkStaged(host, manifest);
  const pulled = await pullFromRegistry(host, manifest, source, {
    extraFiles: [serviceShimFileName],
    ...(credentials && credentials.length > 0 ? { pullSecret: asDockerConfig(credentials) } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const shim = pulled.payload.files.find((f) => f.name === serviceShimFileName)!;
  if ((await host.fileSha256(paths.serviceExe)) === shim.sha256) return;
  // The shim may run already (a join again after a failed one): replaced as a running file is.
  const staged = `${paths.payload}\\${serviceShimFileName}`;
  await replaceExecutable(host, paths.serviceExe, (to) => host.copyFile(staged, to));
};

/** Without a registry: the staged payload, checked, or a plain refusal. */
async function checkStaged(host: HostOS, manifest: ServicesManifest): Promise<void> {
  if ((await host.fileSha256(paths.serviceExe)) === undefined) {
    throw new WinfleetError(
      'WF_AGENT_FILE_MISSING',
      `${paths.serviceExe} is missing, and the operator names no payload registry to pull it from (winfleet-join has no payload: the operator serves its payload from a directory); run the operator with --payload-image, or stage the payload`,
    );
  }
  for (const file of manifest.files) {
    const staged = `${paths.payload}\\${file.payload}`;
    const actual = await host.fileSha256(staged);
    if (actual === file.sha256) continue;
    throw new WinfleetError(
      'WF_AGENT_FILE_MISSING',
      `${staged} is ${actual ? 'not the file the manifest names' : 'missing'}, and the operator names no payload registry to pull it from (winfleet-join has no payload); run the operator with --payload-image, or stage the payload in ${paths.payload}`,
    );
  }
}
