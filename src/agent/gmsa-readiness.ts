/**
 * The agent's report of whether its host can run gMSA pods (issue 16): the label
 * winfleet.io/gmsa-ready ("true" or "false") and, beside it, the annotation
 * winfleet.io/gmsa-readiness saying why ("<Reason>: <message>"), both on its own Node with the
 * node's own credentials, in one merge patch, and only when they change.
 *
 * The rule, from Microsoft's "Create gMSAs for Windows containers": Container Credential Guard
 * (Windows Server 2019 and later, with the Containers feature) retrieves the gMSA password,
 * either with the host's own identity (the host is joined to the domain) or, on a host that is
 * not joined, through a CCG plug-in and a portable identity. So a host is ready when CCG is
 * there and it is domain-joined or has a registered plug-in. Whether the gMSA's
 * PrincipalsAllowedToRetrieveManagedPassword names this host, or the plug-in's secret works,
 * only the domain controller can say: a ready host can still fail a pod's gMSA at start.
 *
 * The facts are read at most every five minutes, and at once after a reboot (a domain join
 * takes one). A failed read reports the host not ready (CheckFailed): a pod is better kept
 * waiting than started without its identity.
 */
import type * as k8s from '@kubernetes/client-node';
import { gmsaReadinessAnnotation, gmsaReadyLabel } from '../api/node-annotations.ts';
import { GmsaReadinessReason } from '../api/reasons.ts';
import type { AgentContext } from './agent-context.ts';
import { ccgComClassesKey, type GmsaHostFacts } from './windows/gmsa-host-facts.ts';

export interface GmsaReadiness {
  ready: boolean;
  reason: GmsaReadinessReason;
  message: string;
}

/** How often the facts are read again within one boot. */
export const gmsaRecheckMs = 5 * 60_000;

/**
 * Whether a host with these facts can run gMSA pods, and why.
 *
 * @example gmsaReadiness({ partOfDomain: true, domain: 'corp.example.com', ccgAvailable: true,
 *   ccgPlugins: [] }) // { ready: true, reason: 'DomainJoined', … }
 * @package
 */
export function gmsaReadiness(facts: GmsaHostFacts): GmsaReadiness {
  if (!facts.ccgAvailable) {
    return {
      ready: false,
      reason: GmsaReadinessReason.CcgUnavailable,
      message: `Container Credential Guard is not available (no ccg.exe or no ${ccgComClassesKey}); install the Containers feature (Install-WindowsFeature Containers) on Windows Server 2019 or later`,
    };
  }
  if (facts.partOfDomain) {
    return {
      ready: true,
      reason: GmsaReadinessReason.DomainJoined,
      message: `joined to domain "${facts.domain}"; Container Credential Guard available`,
    };
  }
  const registered = facts.ccgPlugins.find((p) => p.comClassRegistered);
  if (registered) {
    return {
      ready: true,
      reason: GmsaReadinessReason.CcgPluginRegistered,
      message: `not domain-joined; CCG plug-in ${registered.clsid} registered; Container Credential Guard available`,
    };
  }
  const listed = facts.ccgPlugins[0];
  if (listed) {
    return {
      ready: false,
      reason: GmsaReadinessReason.CcgPluginNotRegistered,
      message: `not joined to an Active Directory domain (workgroup "${facts.domain}"), and CCG plug-in ${listed.clsid} is listed under ${ccgComClassesKey} but its COM class is not registered (HKEY_CLASSES_ROOT\\CLSID\\${listed.clsid}); reinstall the plug-in`,
    };
  }
  return {
    ready: false,
    reason: GmsaReadinessReason.NotDomainJoined,
    message: `not joined to an Active Directory domain (workgroup "${facts.domain}") and no CCG plug-in is registered under ${ccgComClassesKey}; join the host to the domain or install a CCG plug-in`,
  };
}

/** The label and annotation values for `readiness`. */
export function gmsaReadinessMetadata(readiness: GmsaReadiness): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  return {
    labels: { [gmsaReadyLabel]: String(readiness.ready) },
    annotations: { [gmsaReadinessAnnotation]: `${readiness.reason}: ${readiness.message}` },
  };
}

export interface GmsaReadinessSync {
  /** Merge-patches the agent's own Node's metadata. */
  patchMetadata(metadata: {
    labels: Record<string, string>;
    annotations: Record<string, string>;
  }): Promise<void>;
  /** Injected for tests. Default Date.now. */
  now?: () => number;
}

/** The last readiness read, per agent, with when and in which boot. */
const lastRead = new WeakMap<AgentContext, { at: number; bootId: string; value: GmsaReadiness }>();

async function readReadiness(
  context: AgentContext,
  bootId: string,
  now: number,
): Promise<GmsaReadiness> {
  const last = lastRead.get(context);
  if (last && last.bootId === bootId && now - last.at < gmsaRecheckMs) return last.value;
  let value: GmsaReadiness;
  try {
    value = gmsaReadiness(await context.hostOS.gmsaHostFacts());
  } catch (error) {
    value = {
      ready: false,
      reason: GmsaReadinessReason.CheckFailed,
      message: `cannot read the host's gMSA facts: ${(error as Error).message.split('\n')[0]!.slice(0, 300)}`,
    };
  }
  lastRead.set(context, { at: now, bootId, value });
  return value;
}

/**
 * Writes the host's gMSA readiness on `node` (the agent's own, as read this pass) when the
 * label or annotation differ from it. Returns what it reported.
 */
export async function syncGmsaReadiness(
  context: AgentContext,
  node: k8s.V1Node,
  sync: GmsaReadinessSync,
): Promise<GmsaReadiness> {
  const now = (sync.now ?? Date.now)();
  const readiness = await readReadiness(context, node.status?.nodeInfo?.bootID ?? '', now);
  const wanted = gmsaReadinessMetadata(readiness);
  const labels = node.metadata?.labels ?? {};
  const annotations = node.metadata?.annotations ?? {};
  if (
    labels[gmsaReadyLabel] !== wanted.labels[gmsaReadyLabel] ||
    annotations[gmsaReadinessAnnotation] !== wanted.annotations[gmsaReadinessAnnotation]
  ) {
    await sync.patchMetadata(wanted);
  }
  return readiness;
}
