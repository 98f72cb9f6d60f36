/**
 * Removing a Pull-mode WindowsHost (its finalizer) without SSH: the node is cordoned and
 * drained as for every host (host-removal.ts), then the host's agent is asked, through its own
 * Node, to remove winfleet from the host (deconfigureRequestAnnotation = the WindowsHost's uid;
 * src/agent/deconfigure-self.ts). The agent reports on the Node (deconfiguredAnnotation) before
 * it drops its credentials; only that report, for this request and on the host's own Node,
 * lets the removal go on: the Node is deleted, then the finalizer goes.
 *
 * An agent that never answers (the host is off, or cut off) gets what an unreachable SSH host
 * gets: after hosts.removalTimeoutSeconds, Ready says RemovalBlocked with the annotation that
 * finishes the removal without the host (winfleet.io/skip-deconfigure=true), and the request
 * stays on the Node in case it comes back. A host whose Node never registered has no agent
 * that could hear the request: it goes at once, and a Warning Event says what may be left on
 * the machine.
 */
import * as k8s from '@kubernetes/client-node';
import {
  type DeconfigureReport,
  describeLeftovers,
  parseDeconfigureReport,
} from '../../api/deconfigure-report.ts';
import {
  deconfiguredAnnotation,
  deconfigureRequestAnnotation,
} from '../../api/node-annotations.ts';
import { ConditionReason, ConditionType, EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { commandSigner } from '../../fleet/command-signer.ts';
import type { HostStatus } from '../../fleet/host-status.ts';
import type { HostControllerDeps } from './host-deps.ts';
import { blockRemoval, removalTimeoutMs, removalWaitedMs } from './host-removal.ts';

/** How often a removal waiting for the agent's report looks at the Node again. */
const reportPollMs = 2000;

/** The agent's report on `node` for this host's request, or why it is not (yet) one. */
function reportFor(
  host: WindowsHost,
  node: k8s.V1Node,
): { report?: DeconfigureReport; problem?: string } {
  const text = node.metadata?.annotations?.[deconfiguredAnnotation];
  if (text === undefined) return {};
  try {
    const report = parseDeconfigureReport(text);
    return report.request === host.metadata.uid
      ? { report }
      : { problem: `its report answers request ${report.request}, not this removal's` };
  } catch (error) {
    return { problem: `its report is refused: ${(error as Error).message}` };
  }
}

/**
 * Asks the host's agent to deconfigure the host and waits for its report: undefined once it
 * reported (or when no agent can be asked), else when to look again.
 * @package
 */
export async function deconfigureThroughAgent(
  deps: HostControllerDeps,
  host: WindowsHost,
  hs: HostStatus,
  node: k8s.V1Node | undefined,
): Promise<number | undefined> {
  const ref = `${host.metadata.namespace}/${host.metadata.name}`;
  if (!node) {
    if (!hs.status.nodeName) {
      deps.events.record(
        host,
        'Warning',
        EventReason.NodeNeverRegistered,
        `Removed without deconfiguring the machine: Node ${host.spec.nodeName} never registered, so no agent could be asked (winfleet never connects to a Pull-mode host). The machine may still hold winfleet's services, files and node credentials: run "C:\\k\\winfleet\\winfleet-agent.exe cleanup" on it, or delete the machine`,
      );
      return undefined;
    }
    blockRemoval(
      deps,
      host,
      hs,
      `Removal cannot ask the agent of ${ref} to remove winfleet: Node ${hs.status.nodeName}, through which it listens, is gone or no longer carries this host's identity`,
    );
    return 60_000;
  }
  const name = node.metadata!.name!;
  const { report, problem } = reportFor(host, node);
  if (report) {
    deps.events.record(
      host,
      'Normal',
      EventReason.Deconfigured,
      `The agent on Node ${name} removed winfleet's services (${report.removedServices.join(', ')}), files and credentials from the host; ${describeLeftovers(report)}`,
    );
    return undefined;
  }
  const request = host.metadata.uid!;
  const signer = commandSigner(deps.kc);
  if (!signer.holds(node, deconfigureRequestAnnotation, request)) {
    const asked = node.metadata?.annotations?.[deconfigureRequestAnnotation] === request;
    await deps.kc.makeApiClient(k8s.CoreV1Api).patchNode(
      {
        name,
        body: {
          metadata: {
            annotations: signer.annotations(node, deconfigureRequestAnnotation, request),
          },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    // Signed again (a new key, a Node re-created): asked before, no second Event.
    if (!asked)
      deps.events.record(
        host,
        'Normal',
        EventReason.DeconfigureRequested,
        `Node ${name} is drained; asked its agent to remove winfleet from the host (${deconfigureRequestAnnotation}=${request})`,
      );
  }
  const waited = ` (${problem})`;
  if (removalWaitedMs(host) >= removalTimeoutMs(deps)) {
    blockRemoval(
      deps,
      host,
      hs,
      `Removal has not heard from the agent on Node ${name} in ${Math.round(removalWaitedMs(host) / 1000)}s${problem ? waited : ''}: it deconfigures the host when it sees ${deconfigureRequestAnnotation} on its Node, which a host that is off or cut off never does`,
    );
    // The request stays: a host that comes back deconfigures itself after all.
    return 60_000;
  }
  hs.set(
    ConditionType.Ready,
    'False',
    ConditionReason.Deconfiguring,
    `Asked the agent on Node ${name} to remove winfleet from the host; waiting for its report${problem ? waited : ''}`,
  );
  return reportPollMs;
}
