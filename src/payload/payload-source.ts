/** The payload the operator serves from its payload directory, reloaded when payload.json changes. */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import { nodeHostSettings } from '../hostsettings/node-host-settings.ts';
import type { NodeNetwork } from '../servicesmanifest/node-network.ts';
import type { LoadedPayload } from './loaded-payload.ts';
import { servicesManifestFor } from './node-services.ts';
import { loadPayload } from './payload.ts';
import { payloadFileOnDisk } from './payload-file.ts';

/**
 * `apiServer` is the API server URL the hosts use (always bypassed by their proxy); without it
 * the configuration's host settings are left out of the manifest. `network` is the pod network
 * the manifest carries (routed when it gives none).
 */
export function payloadSource(
  dir: string,
  config: () => WinfleetConfig,
  apiServer?: () => string,
  network?: () => NodeNetwork | undefined,
): () => Promise<LoadedPayload> {
  let cached: { key: string; value: LoadedPayload } | undefined;
  return async () => {
    const info = await stat(join(dir, 'payload.json'));
    const priority = config().hosts.kubelet.priorityClass;
    const hostSettings = apiServer ? nodeHostSettings(config(), apiServer()) : undefined;
    const nodeNetwork = network?.();
    const key = `${info.mtimeMs}:${info.size}:${priority}:${JSON.stringify(hostSettings)}:${JSON.stringify(nodeNetwork)}`;
    if (cached?.key === key) return cached.value;
    const payload = await loadPayload(dir);
    let totalBytes = 0;
    for (const file of payload.files) {
      if ('path' in file.source) totalBytes += (await stat(join(dir, file.source.path))).size;
    }
    const value: LoadedPayload = {
      fileOnDisk: (file) => payloadFileOnDisk(dir, file),
      payload,
      manifest: servicesManifestFor(payload, {
        kubeletPriorityClass: priority,
        ...(hostSettings ? { hostSettings } : {}),
        ...(nodeNetwork ? { network: nodeNetwork } : {}),
      }),
      totalBytes,
    };
    cached = { key, value };
    return value;
  };
}
