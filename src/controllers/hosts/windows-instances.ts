/**
 * WMCO's BYOH format, for users moving from OpenShift: the ConfigMap `windows-instances` in the
 * operator's namespace, one entry per host, key = address, value = `username=<user>`. Each entry
 * becomes a WindowsHost (labelled as coming from the ConfigMap) using the SSH key Secret WMCO
 * uses, `cloud-private-key` (key `private-key.pem`). Removing an entry removes its host;
 * deleting the ConfigMap removes them all. A bad entry is reported on the ConfigMap, naming the
 * key and the fix, and changes nothing.
 */
import * as k8s from '@kubernetes/client-node';
import { apiVersion } from '../../api/group-version.ts';
import { EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { Controller, everythingKey } from '../../controller-runtime/controller.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import type { Informer } from '../../controller-runtime/informer.ts';
import type { Logger } from '../../log/logger.ts';

export const windowsInstancesName = 'windows-instances';
export const sourceLabel = 'winfleet.io/source';
export const sourceValue = 'windows-instances';
export const wmcoKeySecret = { name: 'cloud-private-key', key: 'private-key.pem' };

export interface InstanceEntry {
  address: string;
  username: string;
}

/** Parses the ConfigMap's data; returns entries and per-key problems. */
export function parseWindowsInstances(data: Record<string, string>): {
  entries: InstanceEntry[];
  problems: string[];
} {
  const entries: InstanceEntry[] = [];
  const problems: string[] = [];
  for (const [address, value] of Object.entries(data)) {
    const addressOk =
      /^(\d{1,3}\.){3}\d{1,3}$/.test(address) ||
      /^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$/.test(
        address,
      );
    const match = /^\s*username=([^\s=]+)\s*$/.exec(value);
    if (!addressOk)
      problems.push(`data["${address}"]: the key must be the host's IPv4 address or DNS name`);
    else if (!match)
      problems.push(
        `data["${address}"]: the value must be "username=<user>", got "${value.trim()}"`,
      );
    else entries.push({ address, username: match[1]! });
  }
  return { entries, problems };
}

/** The WindowsHost name for an address: byoh-10-1-42-1, byoh-instance-example-com. */
export function hostNameFor(address: string): string {
  return `byoh-${address.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`
    .slice(0, 63)
    .replace(/-+$/, '');
}

export function createWindowsInstancesController(deps: {
  kc: k8s.KubeConfig;
  namespace: string;
  configMaps: Informer<k8s.V1ConfigMap>;
  hosts: Informer<WindowsHost>;
  events: EventRecorder;
  log: Logger;
}): Controller {
  const objects = k8s.KubernetesObjectApi.makeApiClient(deps.kc);
  const controller = new Controller({
    name: 'windows-instances',
    log: deps.log,
    async reconcile() {
      const cm = deps.configMaps.get(`${deps.namespace}/${windowsInstancesName}`);
      const { entries, problems } = parseWindowsInstances(cm?.data ?? {});
      if (cm && problems.length > 0) {
        deps.events.record(
          { ...cm, apiVersion: 'v1', kind: 'ConfigMap' },
          'Warning',
          EventReason.InvalidEntry,
          problems.join('\n'),
        );
      }
      const wanted = new Map(entries.map((e) => [hostNameFor(e.address), e]));
      for (const [name, entry] of wanted) {
        const body: WindowsHost = {
          apiVersion,
          kind: 'WindowsHost',
          metadata: { name, namespace: deps.namespace, labels: { [sourceLabel]: sourceValue } },
          spec: {
            address: entry.address,
            username: entry.username,
            sshKeySecretRef: wmcoKeySecret,
          },
        };
        await objects.patch(
          body,
          undefined,
          undefined,
          'winfleet-windows-instances',
          true,
          k8s.PatchStrategy.ServerSideApply,
        );
      }
      // Entries that went away (and, with bad entries, only those clearly removed).
      const badKeys = new Set(Object.keys(cm?.data ?? {}).map(hostNameFor));
      for (const host of deps.hosts.list()) {
        if (
          host.metadata.namespace !== deps.namespace ||
          host.metadata.labels?.[sourceLabel] !== sourceValue
        )
          continue;
        if (
          wanted.has(host.metadata.name) ||
          badKeys.has(host.metadata.name) ||
          host.metadata.deletionTimestamp
        )
          continue;
        await objects.delete(host);
        deps.log.info('removing host: its windows-instances entry is gone', {
          host: host.metadata.name,
        });
      }
      return undefined;
    },
  });
  const poke = () => controller.enqueue(everythingKey);
  deps.configMaps.on('add', poke).on('update', poke).on('delete', poke);
  // Only a host made from the ConfigMap can need re-applying once it is gone.
  deps.hosts.on('delete', (host) => {
    if (host.metadata.labels?.[sourceLabel] === sourceValue) poke();
  });
  return controller;
}
