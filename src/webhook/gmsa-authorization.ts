/**
 * The check that a pod's ServiceAccount may `use` each GMSACredentialSpec the pod names, asked
 * as the windows-gmsa webhook asks it (kubernetes-sigs/windows-gmsa admission-webhook
 * kube_client.go, isAuthorizedToUseCredSpec): a SubjectAccessReview for the user
 * system:serviceaccount:<namespace>:<name> with the groups system:serviceaccounts and
 * system:serviceaccounts:<namespace>, verb `use` on windows.k8s.io `gmsacredentialspecs`, the
 * credential spec's name, in the pod's namespace. A Role there or a ClusterRole (bound by a
 * RoleBinding there, or a ClusterRoleBinding) with that rule allows it.
 *
 * winfleet asks with a cluster-scoped SubjectAccessReview (the operator may create those
 * already) rather than the LocalSubjectAccessReview windows-gmsa creates: the same question.
 *
 * Fail closed, as windows-gmsa does: a review that fails or times out refuses the pod, whose
 * message says the check could not be made. (If the webhook itself cannot be reached, the
 * validating webhook's failurePolicy decides: config.webhook.validationFailurePolicy.)
 */
import * as k8s from '@kubernetes/client-node';
import { WinfleetError } from '../errors/catalog.ts';
import type { GmsaCredentialSpecName } from './pod-os.ts';

export const gmsaApiGroup = 'windows.k8s.io';
export const gmsaResource = 'gmsacredentialspecs';

/** One question: may this ServiceAccount use this credential spec? */
export interface GmsaUseQuestion {
  namespace: string;
  serviceAccount: string;
  credentialSpec: string;
}

/** The authorizer's answer; `reason` is its own text (naming the binding when it allows). */
export interface GmsaUseAnswer {
  allowed: boolean;
  reason?: string;
}

/** Asks the authorizer; throws when it cannot be asked. */
export type GmsaUseReview = (question: GmsaUseQuestion) => Promise<GmsaUseAnswer>;

/** How long one review may take: well inside the webhook's own timeout (at most 5 s). */
export const gmsaReviewTimeoutMs = 2000;

/** The SubjectAccessReview spec windows-gmsa sends for `question`. */
export function gmsaUseReviewSpec(question: GmsaUseQuestion): k8s.V1SubjectAccessReviewSpec {
  const { namespace, serviceAccount, credentialSpec } = question;
  return {
    user: `system:serviceaccount:${namespace}:${serviceAccount}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`],
    resourceAttributes: {
      namespace,
      verb: 'use',
      group: gmsaApiGroup,
      version: 'v1',
      resource: gmsaResource,
      name: credentialSpec,
    },
  };
}

/** The review through the API server, bounded by `timeoutMs`. */
export function gmsaUseReviewer(
  kc: k8s.KubeConfig,
  timeoutMs = gmsaReviewTimeoutMs,
): GmsaUseReview {
  const authorization = kc.makeApiClient(k8s.AuthorizationV1Api);
  return async function reviewGmsaUse(question) {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new WinfleetError(
              'WF_TIMEOUT',
              `the SubjectAccessReview took longer than ${timeoutMs} ms`,
            ),
          ),
        timeoutMs,
      );
    });
    try {
      const review = await Promise.race([
        authorization.createSubjectAccessReview({ body: { spec: gmsaUseReviewSpec(question) } }),
        timeout,
      ]);
      const status = review.status;
      return {
        allowed: status?.allowed === true && status.denied !== true,
        ...(status?.reason ? { reason: status.reason } : {}),
      };
    } finally {
      clearTimeout(timer);
    }
  };
}

/** The ServiceAccount a pod runs as (the ServiceAccount admission plugin sets it before us). */
export function podServiceAccount(pod: k8s.V1Pod): string {
  return pod.spec?.serviceAccountName || pod.spec?.serviceAccount || 'default';
}

/** The RBAC that lets `serviceAccount` in `namespace` use `credentialSpec`, as one sentence. */
export function missingGmsaRbac(question: GmsaUseQuestion): string {
  const { namespace, serviceAccount, credentialSpec } = question;
  return `grant it with a Role or ClusterRole rule {apiGroups: [${gmsaApiGroup}], resources: [${gmsaResource}], verbs: [use], resourceNames: [${credentialSpec}]} bound to ServiceAccount ${serviceAccount} in namespace ${namespace} (a RoleBinding there), e.g. kubectl create clusterrole use-gmsa-${credentialSpec} --verb=use --resource=${gmsaResource}.${gmsaApiGroup} --resource-name=${credentialSpec} && kubectl create rolebinding use-gmsa-${credentialSpec} -n ${namespace} --clusterrole=use-gmsa-${credentialSpec} --serviceaccount=${namespace}:${serviceAccount}`;
}

/**
 * One denial line per credential spec the pod's ServiceAccount may not use (or that could not
 * be checked), naming every field that names it and the RBAC that is missing. Each distinct
 * name is reviewed once, all at once.
 * @package
 */
export async function gmsaUseProblems(
  pod: k8s.V1Pod,
  namespace: string,
  names: readonly GmsaCredentialSpecName[],
  review: GmsaUseReview,
): Promise<string[]> {
  const serviceAccount = podServiceAccount(pod);
  const fieldsByName = new Map<string, string[]>();
  for (const { field, name } of names)
    fieldsByName.set(name, [...(fieldsByName.get(name) ?? []), field]);
  const lines = await Promise.all(
    [...fieldsByName].map(async ([credentialSpec, fields]) => {
      const question = { namespace, serviceAccount, credentialSpec };
      const who = `ServiceAccount ${namespace}/${serviceAccount}`;
      let answer: GmsaUseAnswer;
      try {
        answer = await review(question);
      } catch (error) {
        return `${fields.join(', ')}: cannot check that ${who} may use GMSACredentialSpec "${credentialSpec}" (${(error as Error).message}); the pod is refused until it can be checked: try again`;
      }
      if (answer.allowed) return undefined;
      const why = answer.reason ? ` (the authorizer: ${answer.reason})` : '';
      return `${fields.join(', ')}: ${who} may not use GMSACredentialSpec "${credentialSpec}"${why}; ${missingGmsaRbac(question)}`;
    }),
  );
  return lines.filter((line): line is string => line !== undefined);
}
