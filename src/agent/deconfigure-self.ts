/**
 * A Pull-mode host's agent removing winfleet from its own host: what `winfleet-agent cleanup`
 * does over SSH for the operator, done by the agent service on itself because winfleet never
 * reaches such a host over SSH. The operator asks through the Node (deconfigureRequestAnnotation,
 * once the node is drained); the agent, in order:
 *
 * 1. records the request in C:\k\winfleet\deconfigure.json, so that an agent restarted mid-way
 *    (it crashed, the host rebooted) goes on with it — even once its credentials are gone;
 * 2. stops and deletes the node's services, then removes the firewall rule, HNS networks,
 *    environment, files and directories as cleanup does, keeping the node's credentials;
 * 3. removes winfleet's directory but what running processes hold: its own executable and its
 *    service shim's (Windows deletes neither while it runs), which are renamed nowhere and
 *    deleted at the next boot instead (HostOS.deleteAtBoot), with the directories holding them;
 * 4. reports on its Node (deconfiguredAnnotation): the request, the services removed and what
 *    is left until the next boot — the operator then deletes the Node;
 * 5. drops the node's credentials (kubeconfigs, certificates), marks its own service for
 *    deletion (the SCM deletes it when the agent exits) and removes the record of step 1.
 * The run loop then exits, and with it the service.
 *
 * A step that fails throws; the run loop tries again at its next pass, from the record.
 */
import { win32 } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import {
  type DeconfigureReport,
  deconfigureTokenPattern,
  formatDeconfigureReport,
} from '../api/deconfigure-report.ts';
import { deconfigureRequestAnnotation } from '../api/node-annotations.ts';
import { WinfleetError } from '../errors/catalog.ts';
import { compileSchema } from '../schema/validator.ts';
import { kubeDir, paths, winfleetDir } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import {
  readCleanupPlan,
  removeCredentials,
  removeHostChanges,
  removeServices,
} from './cleanup.ts';
import { agentServiceName } from './converge.ts';
import type { HostOS } from './host-os.ts';

/** Where the agent records a deconfigure under way. */
export const deconfigureRecordPath = `${winfleetDir}\\deconfigure.json`;

/** What the record holds: enough to go on without agent.json or the Node. */
interface DeconfigureRecord {
  request: string;
  nodeName: string;
  removedServices: string[];
}

const validateRecord = compileSchema<DeconfigureRecord>(
  {
    type: 'object',
    additionalProperties: false,
    required: ['request', 'nodeName', 'removedServices'],
    properties: {
      request: { type: 'string', pattern: deconfigureTokenPattern.source },
      nodeName: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 },
      removedServices: { type: 'array', items: { type: 'string' } },
    },
  },
  { code: 'WF_AGENT_CONFIG_INVALID', document: deconfigureRecordPath },
);

/** The deconfigure under way, if the record says so. */
export async function readDeconfigureRecord(host: HostOS): Promise<DeconfigureRecord | undefined> {
  const data = await host.readFile(deconfigureRecordPath);
  if (!data) return undefined;
  return validateRecord(JSON.parse(data.toString('utf8')));
}

async function writeRecord(host: HostOS, record: DeconfigureRecord): Promise<void> {
  await host.writeFile(deconfigureRecordPath, `${JSON.stringify(record, null, 2)}\n`);
}

/**
 * The request on the Node, when there is a well-formed one; `refused` is called with a
 * malformed value (the agent then does nothing).
 * @package
 */
export function deconfigureRequest(
  node: k8s.V1Node | undefined,
  refused: (value: string) => void = () => {},
): string | undefined {
  const value = node?.metadata?.annotations?.[deconfigureRequestAnnotation];
  if (value === undefined) return undefined;
  if (deconfigureTokenPattern.test(value)) return value;
  refused(value);
  return undefined;
}

/** What C:\k holds of winfleet's by the report: its directory and the node's credentials. */
const ownEntries = new Set(
  [
    winfleetDir,
    paths.kubeconfig,
    paths.kubeProxyKubeconfig,
    paths.bootstrapKubeconfig,
    paths.certDir,
  ].map((p) => win32.basename(p).toLowerCase()),
);

/** Whether `path` is a directory (HostOS lists a directory, and refuses a file: ENOTDIR). */
async function entriesOf(host: HostOS, path: string): Promise<string[] | 'file' | undefined> {
  try {
    return await host.listDirectory(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') return 'file';
    throw error;
  }
}

/**
 * Removes `path` (a file, or a directory with all it holds) but `keep`; what a running process
 * holds is deleted at the next boot instead, and so is each directory still holding something
 * then (after what it holds: the boot deletes in order). Returns what is left until the boot.
 */
async function removeOrDeleteAtBoot(
  host: HostOS,
  path: string,
  keep: ReadonlySet<string>,
): Promise<string[]> {
  if (keep.has(path.toLowerCase())) return [];
  const entries = await entriesOf(host, path);
  if (entries === undefined) return [];
  if (entries === 'file') {
    if (await host.removeFileIfUnused(path)) return [];
    await host.deleteAtBoot(path);
    return [path];
  }
  const left: string[] = [];
  for (const entry of entries) {
    left.push(...(await removeOrDeleteAtBoot(host, `${path}\\${entry}`, keep)));
  }
  if (left.length === 0 && !entries.some((e) => keep.has(`${path}\\${e}`.toLowerCase()))) {
    await host.removePath(path);
    return [];
  }
  if (left.length > 0) {
    await host.deleteAtBoot(path);
    left.push(path);
  }
  return left;
}

/**
 * Carries out the deconfigure (see the module comment) for `start` or the recorded one; `report`
 * writes the report on the Node with the node's credentials, or is undefined once they are gone
 * (an agent restarted after it dropped them). Returns the report.
 * @package
 */
export async function deconfigureSelf(
  context: AgentContext,
  start: { request: string; nodeName: string } | undefined,
  report: ((report: DeconfigureReport) => Promise<void>) | undefined,
): Promise<DeconfigureReport> {
  const host = context.hostOS;
  const recorded = await readDeconfigureRecord(host);
  if (!recorded && !start) {
    throw new WinfleetError(
      'WF_INVARIANT',
      'Deconfiguring was asked for without a request and with none recorded',
    );
  }
  const record: DeconfigureRecord = recorded ?? { ...start!, removedServices: [] };
  await writeRecord(host, record);
  context.stderr(
    `removing winfleet from this host, as the operator asked (request ${record.request})\n`,
  );
  const plan = await readCleanupPlan(host);
  const removed = await removeServices(host, plan.services);
  record.removedServices = [...new Set([...record.removedServices, ...removed])];
  await writeRecord(host, record);
  await removeHostChanges(host, plan, { keepCredentials: true });
  const left = await removeOrDeleteAtBoot(
    host,
    winfleetDir,
    new Set([deconfigureRecordPath.toLowerCase()]),
  );
  // C:\k goes too when winfleet's directory is all it holds besides the credentials, which go
  // after the report (now, or at the boot after winfleet's directory).
  const kubeEntries = (await host.listDirectory(kubeDir)) ?? [];
  const onlyOurs = kubeEntries.every((e) => ownEntries.has(e.toLowerCase()));
  if (onlyOurs && left.length > 0) left.push(kubeDir);
  const result: DeconfigureReport = {
    request: record.request,
    removedServices: [...record.removedServices, agentServiceName],
    left,
  };
  // The report goes while the node's credentials still work; then they go.
  if (report) await report(JSON.parse(formatDeconfigureReport(result)) as DeconfigureReport);
  await removeCredentials(host);
  await host.deleteServiceWhenStopped(agentServiceName);
  await host.removePath(deconfigureRecordPath);
  if (left.length === 0) {
    await host.removePath(winfleetDir);
    if (onlyOurs) await host.removePath(kubeDir);
  } else if (onlyOurs) {
    await host.deleteAtBoot(kubeDir);
  }
  context.stderr(
    `winfleet removed from this host; left until the next boot: ${result.left.join(', ') || 'nothing'}\n`,
  );
  return result;
}
