/**
 * The one seam between `winfleet-agent join` and the payload pull.
 *
 * The pull itself (src/agent/payload-pull.ts: every manifest file whose staged copy under
 * C:\k\winfleet\payload is missing or different, pulled from the payload artifact's registry
 * by digest, mirrors first, verified while streaming) is written beside this work and is not on
 * main yet. Until it is, `pullPayload` below accepts only a payload already staged with the
 * manifest's hashes (a pre-baked image) and says plainly that it cannot pull. When
 * payload-pull.ts lands, `pullPayload` becomes its function: this file is the only place to
 * switch.
 */
import { WinfleetError } from '../errors/catalog.ts';
import type { DockerConfigEntry } from '../images/docker-config.ts';
import type { JoinPayloadSource } from '../join/join-info.ts';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import { paths } from './agent-config.ts';
import { sha256 } from './converge.ts';
import type { HostOS } from './host-os.ts';

/**
 * Pulls the manifest's files into the payload directory, and the agent's service shim
 * (winfleet-service.exe, which the manifest leaves out because the operator installs it over
 * SSH: payload-sync.ts) to its own path, verified against the artifact's payload.json; throws
 * retryable errors while the registry cannot be reached.
 */
export type PullPayload = (
  host: HostOS,
  manifest: ServicesManifest,
  source: JoinPayloadSource | undefined,
  credentials: DockerConfigEntry[] | undefined,
  options: { signal?: AbortSignal },
) => Promise<void>;

/** Until payload-pull.ts lands: the staged payload, checked, or a plain refusal. */
export const pullPayload: PullPayload = async (host, manifest, source) => {
  if (!(await host.readFile(paths.serviceExe))) {
    throw new WinfleetError(
      'WF_AGENT_FILE_MISSING',
      `${paths.serviceExe} is missing, and this agent cannot pull it yet: use an agent built with the payload pull, or stage the payload`,
    );
  }
  for (const file of manifest.files) {
    const staged = `${paths.payload}\\${file.payload}`;
    const data = await host.readFile(staged);
    if (data && sha256(data) === file.sha256) continue;
    throw new WinfleetError(
      'WF_AGENT_FILE_MISSING',
      `${staged} is ${data ? 'not the file the manifest names' : 'missing'}, and this agent cannot pull payload files yet${source ? ` from ${source.repository}@${source.digest}` : ''}: use an agent built with the payload pull, or stage the payload in ${paths.payload}`,
    );
  }
};
