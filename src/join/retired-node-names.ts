/**
 * Node names of removed Pull-mode hosts, kept from being issued again while the certificate
 * they were given may still be valid: Kubernetes cannot revoke a client certificate, so a
 * removed host keeps a working `system:node:<name>` identity until it expires, and a later join
 * under the same name would share it. The ConfigMap `winfleet-retired-node-names` in the
 * operator's namespace maps each name to `{"until": <RFC 3339>, "host": "<ns>/<name>"}`;
 * `until` is the removal time plus hosts.retiredNodeNameDays (default 365: kube-controller-
 * manager's default --cluster-signing-duration; lower both together). The operator writes it
 * when it releases a Pull host's finalizer (get, create and update, which it holds in its
 * namespace); the join approver reads it fresh and refuses a name before its `until`. Expired
 * entries are dropped on the next write. Entries are parsed strictly; one the approver does not
 * understand refuses its name (fails closed).
 */
import * as k8s from '@kubernetes/client-node';
import { WinfleetError } from '../errors/catalog.ts';
import { isAlreadyExists, isConflict, isNotFound } from '../kube/client.ts';

export const retiredNodeNamesConfigMap = 'winfleet-retired-node-names';

export interface RetiredNodeName {
  until: string;
  host: string;
}

const utc = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** An entry, or why it is not one. */
export function parseRetiredNodeName(text: string): RetiredNodeName | { problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { problem: 'not JSON' };
  }
  const entry = value as Partial<RetiredNodeName> | null;
  if (
    typeof entry !== 'object' ||
    entry === null ||
    Array.isArray(entry) ||
    Object.keys(entry).some((k) => k !== 'until' && k !== 'host') ||
    typeof entry.until !== 'string' ||
    !utc.test(entry.until) ||
    Number.isNaN(Date.parse(entry.until)) ||
    typeof entry.host !== 'string' ||
    entry.host.length > 317
  ) {
    return { problem: 'not {"until": "<RFC 3339 UTC>", "host": "<namespace>/<name>"}' };
  }
  return { until: entry.until, host: entry.host };
}

/** The entry for `nodeName` still in force at `now`, read fresh; undefined when none. */
export async function readRetiredNodeName(
  kc: k8s.KubeConfig,
  namespace: string,
  nodeName: string,
  now: Date,
): Promise<RetiredNodeName | { problem: string } | undefined> {
  let configMap: k8s.V1ConfigMap;
  try {
    configMap = await kc
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedConfigMap({ name: retiredNodeNamesConfigMap, namespace });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  const text = configMap.data?.[nodeName];
  if (text === undefined) return undefined;
  const entry = parseRetiredNodeName(text);
  if ('problem' in entry) return entry;
  return Date.parse(entry.until) > now.getTime() ? entry : undefined;
}

/** Records `nodeName` as retired until `until`; drops expired entries. Retries on conflicts. */
export async function retireNodeName(
  kc: k8s.KubeConfig,
  namespace: string,
  nodeName: string,
  entry: RetiredNodeName,
  now: Date,
): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  for (let attempt = 0; attempt < 5; attempt++) {
    let current: k8s.V1ConfigMap | undefined;
    try {
      current = await core.readNamespacedConfigMap({ name: retiredNodeNamesConfigMap, namespace });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    const data: Record<string, string> = {};
    for (const [name, text] of Object.entries(current?.data ?? {})) {
      const kept = parseRetiredNodeName(text);
      // Unreadable entries are kept (they refuse their name) for an admin to look at.
      if ('problem' in kept || Date.parse(kept.until) > now.getTime()) data[name] = text;
    }
    data[nodeName] = JSON.stringify(entry);
    try {
      if (current) {
        await core.replaceNamespacedConfigMap({
          name: retiredNodeNamesConfigMap,
          namespace,
          body: { ...current, data },
        });
      } else {
        await core.createNamespacedConfigMap({
          namespace,
          body: {
            metadata: {
              name: retiredNodeNamesConfigMap,
              labels: { 'app.kubernetes.io/managed-by': 'winfleet' },
            },
            data,
          },
        });
      }
      return;
    } catch (error) {
      if (!isConflict(error) && !isAlreadyExists(error)) throw error;
    }
  }
  throw new WinfleetError(
    'WF_TIMEOUT',
    `ConfigMap ${namespace}/${retiredNodeNamesConfigMap} kept changing under five writes`,
  );
}
