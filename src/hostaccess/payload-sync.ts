/**
 * Putting a payload on a host: the agent and its service shim to their own paths, every other
 * file under the payload directory, each copied only when its SHA-256 on the host differs
 * (streamed from the operator's disk, never held whole in memory; a registry payload's file is
 * fetched into the operator's cache first, and only when some host lacks it),
 * after C:\k is locked down to SYSTEM and Administrators. Joining and upgrading both copy
 * through here: the whole payload, or — for a host that pulls the rest from the registry
 * itself — only the agent and its service shim.
 */
import {
  agentFileName,
  type Payload,
  type PayloadFile,
  serviceShimFileName,
} from '../payload/payload.ts';
import type { PayloadFileOnDisk } from '../payload/payload-file.ts';
import { hostPaths, kubeDir } from '../servicesmanifest/host-paths.ts';
import type { RemoteHost } from './remote-host.ts';

/** Where each file the operator installs itself goes; the rest go to the payload directory. */
const ownPaths: Record<string, string> = {
  [agentFileName]: hostPaths.agentExe,
  [serviceShimFileName]: hostPaths.serviceExe,
};

/**
 * Copies the payload files that differ on the host, each from `fileOnDisk` (a payload
 * directory's file, or a registry payload's blob fetched into the operator's cache only when a
 * host needs it); returns the paths copied.
 */
export function syncPayload(
  remote: RemoteHost,
  payload: Payload,
  fileOnDisk: (file: PayloadFile) => Promise<PayloadFileOnDisk>,
): Promise<string[]> {
  return syncFiles(remote, payload.files, fileOnDisk);
}

/**
 * Copies only the files the operator installs itself (the agent and its service shim) when
 * they differ on the host, as syncPayload does; returns the paths copied.
 */
export function syncOperatorFiles(
  remote: RemoteHost,
  payload: Payload,
  fileOnDisk: (file: PayloadFile) => Promise<PayloadFileOnDisk>,
): Promise<string[]> {
  const own = payload.files.filter((f) => ownPaths[f.name.toLowerCase()] !== undefined);
  return syncFiles(remote, own, fileOnDisk);
}

async function syncFiles(
  remote: RemoteHost,
  payloadFiles: readonly PayloadFile[],
  fileOnDisk: (file: PayloadFile) => Promise<PayloadFileOnDisk>,
): Promise<string[]> {
  await remote.script('ensure-directory', {
    path: hostPaths.payload,
    record: hostPaths.createdDirectories,
  });
  // Before any file lands: C:\k inherits C:\'s DACL, under which every local account could
  // read the node's key and write where LocalSystem services run from.
  await remote.script('protect-directory', { path: kubeDir });
  const files = payloadFiles.map((file) => {
    const own = ownPaths[file.name.toLowerCase()];
    return {
      path: own ?? `${hostPaths.payload}\\${file.name}`,
      sha256: file.sha256,
      local: () => fileOnDisk(file),
      // The agent service runs both: they are copied beside themselves and swapped in.
      mayBeRunning: own !== undefined,
    };
  });
  // The agent last, after its shim: a new agent restarts at once (its run loop sees its own
  // hash change) and must find the new shim in place.
  const rank = (path: string) =>
    path === hostPaths.agentExe ? 2 : path === hostPaths.serviceExe ? 0 : 1;
  files.sort((a, b) => rank(a.path) - rank(b.path));
  return remote.syncFiles(files);
}
