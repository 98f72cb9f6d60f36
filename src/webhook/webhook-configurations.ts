/**
 * The MutatingWebhookConfiguration and ValidatingWebhookConfiguration for Pods, applied with
 * server-side apply. Designed so that a broken webhook cannot block the cluster (the gMSA
 * webhook's failure): mutation fails open, validation fails open by default, every call has a
 * timeout of at most 5 s, and kube-system, the operator's namespace and opted-out namespaces
 * are never sent to the webhook at all, so the operator can always repair itself. Opting out
 * is by namespace label only: a pod label would let anyone who can create a pod skip
 * validation, while labelling a namespace takes the right to edit namespaces.
 */
import * as k8s from '@kubernetes/client-node';
import type { WinfleetConfig } from '../config/winfleet-config.ts';

export const webhookConfigurationName = 'winfleet-pods';

export interface WebhookEndpoint {
  /** Base URL of the webhook server (loopback/lab), e.g. https://127.0.0.1:9443 ... */
  url?: string;
  /** ... or the Service in front of it (in a cluster). */
  service?: { namespace: string; name: string; port: number };
}

function clientConfig(
  endpoint: WebhookEndpoint,
  path: string,
  caBundle: string,
): k8s.AdmissionregistrationV1WebhookClientConfig {
  const ca = Buffer.from(caBundle).toString('base64');
  if (endpoint.url) return { url: `${endpoint.url.replace(/\/$/, '')}${path}`, caBundle: ca };
  if (endpoint.service) return { service: { ...endpoint.service, path }, caBundle: ca };
  throw new TypeError('WebhookEndpoint needs url or service');
}

function selectors(config: WinfleetConfig, operatorNamespace: string) {
  const excluded = [...new Set([...config.webhook.excludedNamespaces, operatorNamespace])];
  const { key, value } = config.webhook.optOutLabel;
  return {
    namespaceSelector: {
      matchExpressions: [
        { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: excluded },
        { key, operator: 'NotIn', values: [value] },
      ],
    },
    // Explicitly empty: an operator upgraded from a version that matched the pod label too
    // must not keep that selector.
    objectSelector: {},
  };
}

/** The two webhook configuration objects. */
export function webhookConfigurations(
  config: WinfleetConfig,
  operatorNamespace: string,
  endpoint: WebhookEndpoint,
  caBundle: string,
): [k8s.V1MutatingWebhookConfiguration, k8s.V1ValidatingWebhookConfiguration] {
  const rules: k8s.V1RuleWithOperations[] = [
    {
      apiGroups: [''],
      apiVersions: ['v1'],
      operations: ['CREATE'],
      resources: ['pods'],
      scope: 'Namespaced',
    },
  ];
  const common = {
    admissionReviewVersions: ['v1'],
    sideEffects: 'None',
    timeoutSeconds: Math.min(config.webhook.timeoutSeconds, 5),
    matchPolicy: 'Equivalent',
    rules,
    ...selectors(config, operatorNamespace),
  };
  const metadata = {
    name: webhookConfigurationName,
    labels: { 'app.kubernetes.io/managed-by': 'winfleet' },
  };
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata,
      webhooks: [
        {
          name: 'pods.mutate.winfleet.io',
          clientConfig: clientConfig(endpoint, '/mutate/pods', caBundle),
          failurePolicy: 'Ignore',
          reinvocationPolicy: 'IfNeeded',
          ...common,
        },
      ],
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata,
      webhooks: [
        {
          name: 'pods.validate.winfleet.io',
          clientConfig: clientConfig(endpoint, '/validate/pods', caBundle),
          failurePolicy: config.webhook.validationFailurePolicy,
          ...common,
        },
      ],
    },
  ];
}

/** Applies both configurations (server-side apply, field manager "winfleet"). */
export async function applyWebhookConfigurations(
  kc: k8s.KubeConfig,
  objects: [k8s.V1MutatingWebhookConfiguration, k8s.V1ValidatingWebhookConfiguration],
): Promise<void> {
  const client = k8s.KubernetesObjectApi.makeApiClient(kc);
  for (const object of objects) {
    await client.patch(
      object,
      undefined,
      undefined,
      'winfleet',
      true,
      k8s.PatchStrategy.ServerSideApply,
    );
  }
}
