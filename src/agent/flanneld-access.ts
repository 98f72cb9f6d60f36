/**
 * flanneld lists and watches every Node (its kube subnet manager), which the Node authorizer
 * no longer lets a node do: the operator binds this node's user to winfleet:flanneld-node-reader
 * (src/controllers/hosts/flanneld-node-readers.ts). Started before that binding, flanneld's
 * reflector gets 403 and backs off up to 30 s between tries, so the node would wait that long
 * for its routes. The agent holds flanneld back until the API server says this node may list
 * Nodes (a SelfSubjectAccessReview with the node's own credentials, which every authenticated
 * user may ask); once allowed, it does not ask again in this process. A review that cannot be
 * asked (the API server away) holds nothing back: flanneld, running or not, retries on its own,
 * and an outage never stops it.
 */
import * as k8s from '@kubernetes/client-node';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import type { AgentContext } from './agent-context.ts';

/** flanneld's service in a manifest (flannel-vxlan). */
export const flanneldServiceName = 'flanneld';
/** The services that list every Node with the node's credentials: flanneld, hybrid-overlay-node. */
const nodeListingServices = [flanneldServiceName, 'hybrid-overlay-node'];

const allowed = new WeakMap<AgentContext, true>();
const lastSaid = new WeakMap<AgentContext, string>();

/**
 * The services to hold back for flanneld's access: flanneld while the node has no credentials
 * or the API server answers that it may not list Nodes; none otherwise.
 * @package
 */
export async function flanneldHoldBack(
  context: AgentContext,
  manifest: ServicesManifest,
  kc: k8s.KubeConfig | undefined,
): Promise<Set<string>> {
  const held = manifest.services.find((s) => nodeListingServices.includes(s.name))?.name;
  if (!held) return new Set();
  if (allowed.has(context)) return new Set();
  const say = (message: string) => {
    if (lastSaid.get(context) === message) return;
    lastSaid.set(context, message);
    context.stderr(`${message}\n`);
  };
  if (!kc) {
    say(`${held} waits: the node has no credentials yet`);
    return new Set([held]);
  }
  try {
    const review = await kc.makeApiClient(k8s.AuthorizationV1Api).createSelfSubjectAccessReview({
      body: { spec: { resourceAttributes: { verb: 'list', resource: 'nodes' } } },
    });
    if (review.status?.allowed === true) {
      allowed.set(context, true);
      say(`${held} may list Nodes: it runs`);
      return new Set();
    }
  } catch (error) {
    say(
      `Cannot ask whether this node may list Nodes (${(error as Error).message}): ${held} is not held back`,
    );
    return new Set();
  }
  say(
    `${held} waits: this node may not list Nodes yet (the operator binds it to ClusterRole winfleet:flanneld-node-reader)`,
  );
  return new Set([held]);
}
