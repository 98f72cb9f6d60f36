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
import { WinfleetError } from '../errors/catalog.ts';
import { isNotFound } from '../kube/client.ts';

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
  throw new WinfleetError('WF_INVARIANT', 'WebhookEndpoint needs url or service');
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
  // Ephemeral containers are added by an UPDATE of pods/ephemeralcontainers, never at CREATE:
  // the validating webhook checks the gMSA credential specs they name there too.
  const validatingRules: k8s.V1RuleWithOperations[] = [
    ...rules,
    {
      apiGroups: [''],
      apiVersions: ['v1'],
      operations: ['UPDATE'],
      resources: ['pods/ephemeralcontainers'],
      scope: 'Namespaced',
    },
  ];
  const common = {
    admissionReviewVersions: ['v1'],
    sideEffects: 'None',
    timeoutSeconds: Math.min(config.webhook.timeoutSeconds, 5),
    matchPolicy: 'Equivalent',
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
          rules,
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
          rules: validatingRules,
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

/**
 * Who keeps the two objects: `create` applies them whole (the operator owns them; dev and lab),
 * `patch` patches only the caBundle and the endpoint of objects someone else created (the Helm
 * chart, which owns them so that `helm uninstall` removes them; RBAC can then limit the
 * operator to get and patch on these two names), `none` leaves them alone (cert-manager's
 * CA injector keeps the caBundle).
 */
export type WebhookConfigurationsMode = 'create' | 'patch' | 'none';

/** @package */
export type WebhookConfiguration =
  | k8s.V1MutatingWebhookConfiguration
  | k8s.V1ValidatingWebhookConfiguration;
type Webhook = k8s.V1MutatingWebhook | k8s.V1ValidatingWebhook;

const sameService = (
  a: k8s.AdmissionregistrationV1ServiceReference | undefined,
  b: k8s.AdmissionregistrationV1ServiceReference | undefined,
) =>
  a !== undefined &&
  b !== undefined &&
  a.namespace === b.namespace &&
  a.name === b.name &&
  (a.port ?? 443) === (b.port ?? 443) &&
  (a.path ?? '') === (b.path ?? '');

/** The clientConfig fields to change so that `have` becomes `want` (a strategic merge patch). */
function clientConfigPatch(
  have: k8s.AdmissionregistrationV1WebhookClientConfig | undefined,
  want: k8s.AdmissionregistrationV1WebhookClientConfig,
): Record<string, unknown> | undefined {
  const patch: Record<string, unknown> = {};
  if ((have?.caBundle ?? '') !== (want.caBundle ?? '')) patch.caBundle = want.caBundle;
  if (want.url !== undefined && (have?.url !== want.url || have?.service)) {
    Object.assign(patch, { url: want.url, service: null });
  }
  if (want.service && (!sameService(have?.service, want.service) || have?.url)) {
    Object.assign(patch, { service: want.service, url: null });
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** A namespace selector with its expressions' values sorted, to compare two of them. */
function normalSelector(selector: k8s.V1LabelSelector | undefined): string {
  return JSON.stringify({
    matchLabels: selector?.matchLabels ?? {},
    matchExpressions: (selector?.matchExpressions ?? []).map((e) => ({
      key: e.key,
      operator: e.operator,
      values: [...(e.values ?? [])].sort(),
    })),
  });
}

/**
 * What the configuration decides but the existing webhook says otherwise (namespaces, failure
 * policy, timeout): in patch mode these are the chart's to set, so they are reported, not
 * changed (changing them would make the next `helm upgrade` conflict with the operator).
 */
function configDifferences(kind: string, name: string, have: Webhook, want: Webhook): string[] {
  const where = `${kind} ${name} webhook ${want.name}`;
  const differences: string[] = [];
  if (have.failurePolicy !== want.failurePolicy)
    differences.push(
      `${where}: failurePolicy is ${have.failurePolicy}, the configuration says ${want.failurePolicy}`,
    );
  if (have.timeoutSeconds !== want.timeoutSeconds)
    differences.push(
      `${where}: timeoutSeconds is ${have.timeoutSeconds}, the configuration says ${want.timeoutSeconds}`,
    );
  const rulesOf = (w: Webhook) =>
    JSON.stringify(
      (w.rules ?? []).map((r) => [r.operations, r.resources, r.apiGroups, r.apiVersions]),
    );
  if (rulesOf(have) !== rulesOf(want))
    differences.push(
      `${where}: rules are ${JSON.stringify(have.rules ?? [])}, this operator's are ${JSON.stringify(want.rules)} (an older chart? helm upgrade to the operator's version)`,
    );
  if (normalSelector(have.namespaceSelector) !== normalSelector(want.namespaceSelector))
    differences.push(
      `${where}: namespaceSelector is ${JSON.stringify(have.namespaceSelector)}, the configuration says ${JSON.stringify(want.namespaceSelector)}`,
    );
  return differences;
}

/**
 * What patch mode changes in one existing object `current` so that it serves as `desired`: the
 * strategic merge patch of its webhooks' clientConfig (none when the caBundle and endpoint are
 * already right; matched by webhook name, so nothing else of the chart's webhooks is sent), and
 * what else differs (see configDifferences), to report. A webhook of `desired` that `current`
 * lacks is a WF_WEBHOOK_CONFIGURATION_MISSING error naming the fix.
 * @package
 */
export function webhookConfigurationPatch(
  current: WebhookConfiguration,
  desired: WebhookConfiguration,
): { patch?: { webhooks: Record<string, unknown>[] }; differences: string[] } {
  const kind = desired.kind!;
  const name = desired.metadata!.name!;
  const patches: Record<string, unknown>[] = [];
  const differences: string[] = [];
  for (const want of (desired.webhooks ?? []) as Webhook[]) {
    const have = (current.webhooks as Webhook[] | undefined)?.find((w) => w.name === want.name);
    if (!have) {
      throw new WinfleetError(
        'WF_WEBHOOK_CONFIGURATION_MISSING',
        `${kind} ${name} has no webhook ${want.name}: upgrade the Helm chart to the operator's version (helm upgrade)`,
      );
    }
    const clientConfig = clientConfigPatch(have.clientConfig, want.clientConfig);
    if (clientConfig) patches.push({ name: want.name, clientConfig });
    differences.push(...configDifferences(kind, name, have, want));
  }
  return patches.length > 0 ? { patch: { webhooks: patches }, differences } : { differences };
}

/**
 * Patch mode: sets the caBundle (and the endpoint, when it points elsewhere) of the existing
 * objects with a strategic merge patch per object (webhookConfigurationPatch), and never
 * creates one — a missing object or webhook is a WF_WEBHOOK_CONFIGURATION_MISSING error naming
 * the fix. Returns what else differs from `desired` (see configDifferences), for the caller to
 * report.
 * @package
 */
export async function patchWebhookConfigurations(
  kc: k8s.KubeConfig,
  desired: [k8s.V1MutatingWebhookConfiguration, k8s.V1ValidatingWebhookConfiguration],
): Promise<string[]> {
  const api = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  const differences: string[] = [];
  for (const object of desired as WebhookConfiguration[]) {
    const kind = object.kind!;
    const name = object.metadata!.name!;
    const mutating = kind === 'MutatingWebhookConfiguration';
    let current: WebhookConfiguration;
    try {
      current = mutating
        ? await api.readMutatingWebhookConfiguration({ name })
        : await api.readValidatingWebhookConfiguration({ name });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      throw new WinfleetError(
        'WF_WEBHOOK_CONFIGURATION_MISSING',
        `${kind} ${name} does not exist, and with --webhook-configurations=patch the operator only patches it: install or upgrade the Helm chart with webhook.enabled=true, or run the operator with --webhook-configurations=create`,
        { cause: error },
      );
    }
    const { patch, differences: found } = webhookConfigurationPatch(current, object);
    differences.push(...found);
    if (!patch) continue;
    const request = { name, body: patch };
    const options = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch);
    if (mutating) await api.patchMutatingWebhookConfiguration(request, options);
    else await api.patchValidatingWebhookConfiguration(request, options);
  }
  return differences;
}
