/**
 * The start-up check for a cluster that approves node client certificates for every bootstrap
 * token. kube-controller-manager approves a node client CSR by itself when its requester may
 * create `certificatesigningrequests/nodeclient`; bind that (the ClusterRole
 * system:certificates.k8s.io:certificatesigningrequests:nodeclient) to the group
 * system:bootstrappers and every bootstrap token, winfleet's included, gets a certificate for
 * any node name it asks for, without winfleet's checks. The check asks the API server the
 * controller manager's own question (a SubjectAccessReview) for an identity with the groups
 * each winfleet token has, so a binding to any of them, or a custom role, is found too.
 */
import * as k8s from '@kubernetes/client-node';
import { EventReason } from '../../api/reasons.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import { bootstrapGroup } from '../../join/bootstrap-tokens.ts';
import type { Logger } from '../../log/logger.ts';

export const nodeClientRole = 'system:certificates.k8s.io:certificatesigningrequests:nodeclient';

/** Groups every winfleet bootstrap token authenticates with. */
const tokenGroups = ['system:bootstrappers', bootstrapGroup, 'system:authenticated'];

/**
 * Why kube-controller-manager would approve a node client CSR from any winfleet bootstrap
 * token (the authorizer's reason, naming the binding), or undefined when it would not.
 */
export async function bootstrapTokensAutoApproved(kc: k8s.KubeConfig): Promise<string | undefined> {
  const review = await kc.makeApiClient(k8s.AuthorizationV1Api).createSubjectAccessReview({
    body: {
      spec: {
        // No real token has this id, so only what the groups grant counts.
        user: 'system:bootstrap:winfleet-check',
        groups: tokenGroups,
        resourceAttributes: {
          group: 'certificates.k8s.io',
          resource: 'certificatesigningrequests',
          subresource: 'nodeclient',
          verb: 'create',
        },
      },
    },
  });
  if (!review.status?.allowed) return undefined;
  return review.status.reason || `groups ${tokenGroups.join(', ')} may create nodeclient CSRs`;
}

/**
 * Logs a warning and records a Warning Event on the operator's Namespace when the cluster
 * auto-approves bootstrap tokens' node client CSRs. Never fails start-up: a check that cannot
 * be made is logged.
 */
export async function warnIfBootstrapTokensAutoApproved(deps: {
  kc: k8s.KubeConfig;
  namespace: string;
  events: EventRecorder;
  log: Logger;
}): Promise<void> {
  let reason: string | undefined;
  try {
    reason = await bootstrapTokensAutoApproved(deps.kc);
  } catch (error) {
    deps.log.warn(
      'cannot check whether the cluster auto-approves node client CSRs of bootstrap tokens; the operator needs create on subjectaccessreviews',
      { error },
    );
    return;
  }
  if (!reason) {
    deps.log.debug('bootstrap tokens are not auto-approved for node client certificates');
    return;
  }
  const message = `The cluster approves node client certificates for every bootstrap token, winfleet's included (${reason}): anyone holding one host's token can get a certificate for any node name without winfleet's checks. Remove the binding of ClusterRole ${nodeClientRole} to system:bootstrappers (bind it to a group only your own tokens carry)`;
  deps.log.warn(message, { reason });
  const namespace = await deps.kc
    .makeApiClient(k8s.CoreV1Api)
    .readNamespace({ name: deps.namespace })
    .catch(() => undefined);
  deps.events.record(
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: deps.namespace, uid: namespace?.metadata?.uid },
    },
    'Warning',
    EventReason.BootstrapAutoApproval,
    message,
  );
}
