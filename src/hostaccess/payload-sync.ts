/**
 * Putting a payload on a host: the agent to its own path, every other file under the payload
 * directory, each copied only when its SHA-256 on the host differs, after C:\k is locked down
 * to SYSTEM and Administrators. Joining and upgrading both copy through here.
 */
import { type Payload, readPayloadFile } from '../payload/payload.ts';
import { hostPaths, kubeDir } from '../servicesmanifest/host-paths.ts';
import type { RemoteHost } from './remote-host.ts';

const agentFileName = 'winfleet-agent.exe';

/** Copies the payload files (from `dir`) that differ on the host; returns the paths copied. */
export async function syncPayload(
  remote: RemoteHost,
  dir: string,
  payload: Payload,
): Promise<string[]> {
  await remote.script('ensure-directory', {
    path: hostPaths.payload,
    record: hostPaths.createdDirectories,
  });
  // Before any file lands: C:\k inherits C:\'s DACL, under which every local account could
  // read the node's key and write where LocalSystem services run from.
  await remote.script('protect-directory', { path: kubeDir });
  const files = payload.files.map((file) => {
    const agent = file.name.toLowerCase() === agentFileName;
    return {
      path: agent ? hostPaths.agentExe : `${hostPaths.payload}\\${file.name}`,
      sha256: file.sha256,
      read: () => readPayloadFile(dir, file),
      // The agent may be running: it is copied beside itself and swapped in.
      mayBeRunning: agent,
    };
  });
  return remote.syncFiles(files);
}
