/**
 * The cluster side of a diagnostics bundle: versions, WindowsHosts, WindowsNodePools, Nodes,
 * Events, RuntimeClasses, winfleet's webhook configurations, the names (never the data) of the
 * Secrets in winfleet's namespace, the operator's logs and metrics. Each item is gathered on
 * its own, so one refused list does not lose the others; when the API server cannot be
 * reached at all, the whole part fails with that reason.
 */
import { open } from 'node:fs/promises';
import * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { apiGroup } from '../../api/group-version.ts';
import { cliExit, ExitCode, unreachableReason } from '../exit-codes.ts';
import { cliVersion } from '../version.ts';

/** One gathered item (text before scrubbing), or why it could not be. */
export interface CollectedItem {
  path: string;
  title: string;
  text?: string;
  error?: string;
  truncated?: boolean;
  /** When truncated: the end was kept (logs, events), not the start. */
  keepTail?: boolean;
}

/** What an item's reader returns: the text, or the text already cut (and whether it was). */
type ItemText = string | { text: string; truncated: boolean };

/** The last `limit` bytes of a file, read without loading the rest (a log may be huge). */
export async function readFileTail(
  file: string,
  limit: number,
): Promise<{ text: string; truncated: boolean }> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, limit);
    const buffer = Buffer.alloc(length);
    let read = 0;
    while (read < length) {
      const { bytesRead } = await handle.read(buffer, read, length - read, size - length + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    // A cut may split a UTF-8 sequence: drop the partial character at the start.
    let text = buffer.subarray(0, read).toString('utf8');
    if (size > limit && text.startsWith('\uFFFD')) text = text.replace(/^\uFFFD+/, '');
    return { text, truncated: size > limit };
  } finally {
    await handle.close();
  }
}

/** Events per page when listing them (the API server's continue token pages the rest). */
export const eventPageSize = 500;
/** At most this many pages (500 000 events) are read, whatever the size limit. */
const maxEventPages = 1000;

export interface ClusterOptions {
  kc: k8s.KubeConfig;
  /** winfleet's namespace (the operator's, its WindowsHosts'). */
  namespace: string;
  /** Events and logs since this time. */
  since: Date;
  /** The operator's status server, when it runs outside the cluster. */
  operatorUrl?: string;
  /** The operator's log file, when it runs outside the cluster. */
  operatorLog?: string;
  /** Item texts are cut to this many characters (the end of logs, the start of lists). */
  limit: number;
}

/** The chart's labels for the operator's Pods and Services (charts/winfleet/templates). */
export const operatorSelector = 'app.kubernetes.io/name=winfleet';
const partOf = 'app.kubernetes.io/part-of=winfleet';

function message(error: unknown): string {
  const body = (error as { body?: unknown }).body;
  if (body !== undefined) {
    try {
      const parsed = JSON.parse(String(body)) as { message?: string; code?: number };
      if (parsed.message) return `${parsed.code ?? ''} ${parsed.message}`.trim();
    } catch {
      // not JSON
    }
  }
  return (error as Error)?.message ?? String(error);
}

/** Objects as YAML without managedFields (noise) and without any Secret data. */
export function objectsYaml(items: readonly object[]): string {
  const clean = items.map((item) => {
    const copy = JSON.parse(JSON.stringify(item)) as {
      metadata?: { managedFields?: unknown; annotations?: Record<string, string> };
    };
    if (copy.metadata) delete copy.metadata.managedFields;
    const lastApplied = 'kubectl.kubernetes.io/last-applied-configuration';
    if (copy.metadata?.annotations?.[lastApplied]) delete copy.metadata.annotations[lastApplied];
    return copy;
  });
  return stringify(clean, { lineWidth: 0 });
}

export function cut(
  text: string,
  limit: number,
  keepTail: boolean,
): { text: string; truncated: boolean } {
  if (text.length <= limit) return { text, truncated: false };
  return {
    text: keepTail ? text.slice(text.length - limit) : text.slice(0, limit),
    truncated: true,
  };
}

/** What the cluster part's readers share: the options, the API clients, the items so far. */
interface ClusterCollection {
  options: ClusterOptions;
  core: k8s.CoreV1Api;
  custom: k8s.CustomObjectsApi;
  items: CollectedItem[];
}

/** Gathers one item: its text cut to the limit, or why it could not be had. */
async function collectItem(
  state: ClusterCollection,
  path: string,
  title: string,
  get: () => Promise<ItemText>,
  keepTail = false,
): Promise<void> {
  try {
    const got = await get();
    const read = typeof got === 'string' ? { text: got, truncated: false } : got;
    const { text, truncated } = cut(read.text, state.options.limit, keepTail);
    state.items.push({ path, title, text, truncated: truncated || read.truncated, keepTail });
  } catch (error) {
    state.items.push({ path, title, error: message(error) });
  }
}

/** The API server's version; the whole part fails when the API server cannot be asked. */
async function serverVersionOrExit(kc: k8s.KubeConfig): Promise<k8s.VersionInfo> {
  try {
    return await kc.makeApiClient(k8s.VersionApi).getCode();
  } catch (error) {
    const server = kc.getCurrentCluster()?.server ?? '';
    throw cliExit(
      ExitCode.cluster,
      unreachableReason(error, server) ?? `cannot ask the API server ${server}: ${message(error)}`,
    );
  }
}

/** The chart's operator Pods in winfleet's namespace. */
async function operatorPods(state: ClusterCollection): Promise<k8s.V1Pod[]> {
  const { namespace } = state.options;
  return (await state.core.listNamespacedPod({ namespace, labelSelector: operatorSelector })).items;
}

/** versions.txt: the API server's, the CLI's and the operator images' versions. */
async function versionsText(
  state: ClusterCollection,
  serverVersion: k8s.VersionInfo,
): Promise<string> {
  const { namespace } = state.options;
  const lines = [
    `API server: ${serverVersion.gitVersion} (${serverVersion.platform}, built ${serverVersion.buildDate})`,
    `winfleet CLI: ${cliVersion}`,
  ];
  try {
    const pods = await operatorPods(state);
    if (pods.length === 0)
      lines.push(
        `operator: no Pods labelled ${operatorSelector} in ${namespace} (running outside the cluster?)`,
      );
    for (const pod of pods)
      for (const c of pod.status?.containerStatuses ?? [])
        lines.push(
          `operator ${pod.metadata?.name}/${c.name}: ${c.image} (${c.imageID || 'image id unknown'})`,
        );
  } catch (error) {
    lines.push(`operator: cannot list its Pods: ${message(error)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** All objects of one of winfleet's custom resources, as YAML. */
async function listCustomYaml(state: ClusterCollection, plural: string): Promise<string> {
  return objectsYaml(
    (
      (await state.custom.listClusterCustomObject({
        group: apiGroup,
        version: 'v1alpha1',
        plural,
      })) as {
        items: object[];
      }
    ).items,
  );
}

/**
 * The Events since `since`, paged, and no more pages once the kept events pass the size limit:
 * a cluster's events can be many times what the bundle keeps.
 */
async function recentEventsYaml(state: ClusterCollection): Promise<ItemText> {
  const { since, limit } = state.options;
  const events: k8s.CoreV1Event[] = [];
  let size = 0;
  let next: string | undefined;
  let pages = 0;
  do {
    const page = await state.core.listEventForAllNamespaces({
      limit: eventPageSize,
      ...(next ? { _continue: next } : {}),
    });
    const recent = page.items.filter((e) => {
      const at =
        e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata?.creationTimestamp;
      return at === undefined || new Date(at as unknown as string).getTime() >= since.getTime();
    });
    events.push(...recent);
    if (recent.length > 0) size += objectsYaml(recent).length;
    next = page.metadata?._continue || undefined;
    pages++;
  } while (next && size <= limit && pages < maxEventPages);
  const text = objectsYaml(events);
  return { text, truncated: next !== undefined || text.length > limit };
}

/** winfleet's mutating and validating webhook configurations, CA bundles replaced by their length. */
async function winfleetWebhooksYaml(state: ClusterCollection): Promise<string> {
  const { kc, namespace } = state.options;
  const admission = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  const ours = (c: k8s.V1MutatingWebhookConfiguration | k8s.V1ValidatingWebhookConfiguration) =>
    c.metadata?.name?.includes('winfleet') ||
    c.metadata?.labels?.['app.kubernetes.io/part-of'] === 'winfleet' ||
    (c.webhooks ?? []).some(
      (w) => w.name.endsWith(apiGroup) || w.clientConfig.service?.namespace === namespace,
    );
  const mutating = (await admission.listMutatingWebhookConfiguration()).items.filter(ours);
  const validating = (await admission.listValidatingWebhookConfiguration()).items.filter(ours);
  // The CA bundles are public certificates, but long: their length says enough.
  for (const c of [...mutating, ...validating])
    for (const w of c.webhooks ?? [])
      if (w.clientConfig.caBundle)
        w.clientConfig.caBundle = `(${w.clientConfig.caBundle.length} base64 characters)`;
  return objectsYaml([
    ...mutating.map((c) => ({ kind: 'MutatingWebhookConfiguration', ...c })),
    ...validating.map((c) => ({ kind: 'ValidatingWebhookConfiguration', ...c })),
  ]);
}

/** The names, types and key counts of the Secrets in winfleet's namespace (never their data). */
async function secretNamesText(state: ClusterCollection): Promise<string> {
  const secrets = (await state.core.listNamespacedSecret({ namespace: state.options.namespace }))
    .items;
  return `${secrets.map((s) => `${s.metadata?.name}\t${s.type}\t${Object.keys(s.data ?? {}).length} keys`).join('\n')}\n`;
}

/**
 * Operator logs: the chart's Pods, or (--operator-log) the log file of an operator that runs
 * outside the cluster; then Pods the chart made are not the operator that runs, and their
 * logs are not asked for.
 */
async function collectOperatorLogs(state: ClusterCollection): Promise<void> {
  const { options, core } = state;
  const { namespace, since, limit } = options;
  try {
    const pods = options.operatorLog ? [] : await operatorPods(state);
    for (const pod of pods) {
      for (const container of pod.spec?.containers ?? []) {
        const name = `${pod.metadata?.name}-${container.name}`.replace(/[^A-Za-z0-9._-]/g, '_');
        await collectItem(
          state,
          `cluster/operator-logs/${name}.log`,
          `operator log (${pod.metadata?.name}/${container.name})`,
          async () => {
            const log = await core.readNamespacedPodLog({
              name: pod.metadata!.name!,
              namespace,
              container: container.name,
              sinceSeconds: Math.max(1, Math.ceil((Date.now() - since.getTime()) / 1000)),
              limitBytes: limit,
            });
            return String(log);
          },
          true,
        );
      }
    }
    if (pods.length === 0 && !options.operatorLog)
      state.items.push({
        path: 'cluster/operator-logs',
        title: 'operator log',
        error: `no Pods labelled ${operatorSelector} in ${namespace}; for an operator outside the cluster pass --operator-log FILE`,
      });
  } catch (error) {
    state.items.push({
      path: 'cluster/operator-logs',
      title: 'operator log',
      error: message(error),
    });
  }
  if (options.operatorLog) {
    const file = options.operatorLog;
    await collectItem(
      state,
      'cluster/operator-logs/operator-log-file.log',
      `operator log (--operator-log ${file})`,
      () => readFileTail(file, limit),
      true,
    );
  }
}

/** The operator's /metrics: from --operator-url, or through the API server's Service proxy. */
async function operatorMetricsText(state: ClusterCollection): Promise<string> {
  const { options, core } = state;
  const { namespace } = options;
  if (options.operatorUrl) {
    const url = new URL('/metrics', options.operatorUrl);
    const response = await fetch(url, { signal: AbortSignal.timeout(15_000) });
    if (!response.ok)
      throw cliExit(ExitCode.problem, `--operator-url: ${url} answered ${response.status}`);
    return await response.text();
  }
  const services = (await core.listNamespacedService({ namespace, labelSelector: partOf })).items;
  const service = services.find((s) => s.spec?.ports?.some((p) => p.name === 'metrics'));
  if (!service)
    throw cliExit(
      ExitCode.problem,
      `no Service labelled ${partOf} with a "metrics" port in ${namespace}; for an operator outside the cluster pass --operator-url http://HOST:PORT`,
    );
  return String(
    await core.connectGetNamespacedServiceProxyWithPath({
      name: `${service.metadata!.name}:metrics`,
      namespace,
      path: 'metrics',
    }),
  );
}

/** Gathers the cluster part, item by item (the API server first: without it nothing else). */
export async function collectCluster(options: ClusterOptions): Promise<CollectedItem[]> {
  const { kc, namespace, since } = options;
  const state: ClusterCollection = {
    options,
    core: kc.makeApiClient(k8s.CoreV1Api),
    custom: kc.makeApiClient(k8s.CustomObjectsApi),
    items: [],
  };
  const item = (path: string, title: string, get: () => Promise<ItemText>, keepTail = false) =>
    collectItem(state, path, title, get, keepTail);
  const serverVersion = await serverVersionOrExit(kc);
  await item('cluster/versions.txt', 'API server, winfleet CLI and operator image versions', () =>
    versionsText(state, serverVersion),
  );
  await item('cluster/windowshosts.yaml', 'WindowsHosts (all namespaces)', () =>
    listCustomYaml(state, 'windowshosts'),
  );
  await item('cluster/windowsnodepools.yaml', 'WindowsNodePools (all namespaces)', () =>
    listCustomYaml(state, 'windowsnodepools'),
  );
  await item('cluster/nodes.yaml', 'Nodes', async () =>
    objectsYaml((await state.core.listNode()).items),
  );
  await item(
    'cluster/events.yaml',
    `Events since ${since.toISOString()} (all namespaces)`,
    () => recentEventsYaml(state),
    true,
  );
  await item('cluster/runtimeclasses.yaml', 'RuntimeClasses', async () =>
    objectsYaml((await kc.makeApiClient(k8s.NodeV1Api).listRuntimeClass()).items),
  );
  await item(
    'cluster/webhooks.yaml',
    "winfleet's mutating and validating webhook configurations",
    () => winfleetWebhooksYaml(state),
  );
  await item(
    'cluster/secrets.txt',
    `Secrets in ${namespace} (names and types only, never data)`,
    () => secretNamesText(state),
  );
  await collectOperatorLogs(state);
  await item(
    'cluster/operator-metrics.txt',
    'operator metrics (/metrics of its status server)',
    () => operatorMetricsText(state),
  );
  return state.items;
}
