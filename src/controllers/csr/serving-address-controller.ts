/**
 * Applies an admin's allow-serving-addresses annotation to a WindowsHost: the addresses it lists
 * become the host's pinned serving addresses (status.servingAddresses), or, when any of them is
 * refused (serving-addresses.ts), nothing changes. Either way an Event says which, and the
 * annotation is removed only while it still holds the value decided on (a JSON patch that tests
 * it first), so an annotation edited meanwhile is decided again instead of removed unapplied.
 */
import * as k8s from '@kubernetes/client-node';
import { EventReason } from '../../api/reasons.ts';
import { servingAddressesAnnotation, type WindowsHost } from '../../api/windows-host.ts';
import type { WinfleetConfig } from '../../config/winfleet-config.ts';
import { Controller, everythingKey } from '../../controller-runtime/controller.ts';
import type { EventRecorder } from '../../controller-runtime/events.ts';
import { type Informer, objectKey } from '../../controller-runtime/informer.ts';
import { hostObject, patchHostStatus } from '../../fleet/host-status.ts';
import {
  type AddressContext,
  parseServingAddressList,
  pinnedServingAddresses,
  refusedAddressProblem,
  vouchedAddress,
} from '../../fleet/serving-addresses.ts';
import { isInvalid, isNotFound } from '../../kube/client.ts';
import type { Logger } from '../../log/logger.ts';
import { type ApiServerNames, apiServerNameSource } from './api-server-names.ts';
import { nodeHoldingAddress } from './node-addresses.ts';

export interface ServingAddressControllerDeps {
  kc: k8s.KubeConfig;
  hosts: Informer<WindowsHost>;
  nodes: Informer<k8s.V1Node>;
  config: () => WinfleetConfig;
  /** The API server's names (api-server-names.ts), which no annotation may add. */
  apiServerNames: () => Promise<ApiServerNames>;
  events: EventRecorder;
  log: Logger;
  /** The WindowsHost patches; the API server's by default (tests pass a fake). */
  api?: HostPatchApi;
}

/** The two WindowsHost patches this controller makes. */
export type HostPatchApi = Pick<
  k8s.CustomObjectsApi,
  'patchNamespacedCustomObjectStatus' | 'patchNamespacedCustomObject'
>;

/** What the annotation on a host comes to. */
export type ServingAddressChange =
  | { kind: 'refuse'; message: string }
  | { kind: 'set'; addresses: string[]; message: string }
  /** The pin already is what the annotation names (a pass after a conflict): only remove it. */
  | { kind: 'unchanged' };

/**
 * What `value`, the annotation on `host`, comes to: refused when it names no address or any
 * refused one (the message names each with its reason), else the new pin.
 * @package
 */
export function servingAddressChange(
  host: WindowsHost,
  value: string,
  context: Omit<AddressContext, 'specAddress'>,
): ServingAddressChange {
  const requested = parseServingAddressList(value);
  const current = pinnedServingAddresses(host);
  const refused =
    requested.length === 0
      ? ['it names no address']
      : requested
          .map((address) =>
            refusedAddressProblem(address, { ...context, specAddress: vouchedAddress(host) }),
          )
          .filter((p): p is string => p !== undefined);
  const shown = (list: string[]) => list.join(', ') || '(none)';
  if (refused.length > 0) {
    return {
      kind: 'refuse',
      message: `${servingAddressesAnnotation} "${value}" refused: ${refused.join('; ')}. The serving addresses stay ${shown(current)}; set the annotation again without the refused addresses`,
    };
  }
  if (host.status?.servingAddresses !== undefined && requested.join(',') === current.join(',')) {
    return { kind: 'unchanged' };
  }
  return {
    kind: 'set',
    addresses: requested,
    message: `Serving addresses changed by ${servingAddressesAnnotation} from ${shown(current)} to ${shown(requested)}`,
  };
}

/** The annotation as a JSON pointer ("/" in its name escaped as "~1"). */
const annotationPath = `/metadata/annotations/${servingAddressesAnnotation.replaceAll('/', '~1')}`;

export function createServingAddressController(deps: ServingAddressControllerDeps): Controller {
  const api = deps.api ?? deps.kc.makeApiClient(k8s.CustomObjectsApi);
  const nodeHolding = nodeHoldingAddress(deps.nodes);

  const controller = new Controller({
    name: 'serving-addresses',
    log: deps.log,
    async reconcile(key) {
      if (key === everythingKey) {
        for (const host of deps.hosts.list()) enqueue(host);
        return undefined;
      }
      try {
        await apply(key);
      } catch (error) {
        // 422: the annotation no longer holds the value decided on; decide on the new one.
        if (isInvalid(error)) return { requeueAfterMs: 250 };
        if (isNotFound(error)) return undefined;
        throw error;
      }
      return undefined;
    },
  });

  async function apply(key: string): Promise<void> {
    const host = deps.hosts.get(key);
    const value = host?.metadata.annotations?.[servingAddressesAnnotation];
    if (!host || value === undefined || host.metadata.deletionTimestamp) return;
    const { serviceCIDR, podCIDR, clusterDomain, servingDnsSuffixes } = deps.config().hosts;
    const apiServer = await deps.apiServerNames();
    const nodeName = host.status?.nodeName ?? host.spec.nodeName;
    const change = servingAddressChange(host, value, {
      network: { serviceCIDR, podCIDR, clusterDomain, servingDnsSuffixes },
      nodeHolding: (address) => nodeHolding(address, host.status?.nodeName),
      ...(nodeName ? { nodeName } : {}),
      apiServerName: (address) => apiServerNameSource(apiServer, address),
    });
    if (change.kind === 'refuse') {
      deps.events.record(host, 'Warning', EventReason.ServingAddressesRefused, change.message);
    } else if (change.kind === 'set') {
      await patchHostStatus(api, host, { servingAddresses: change.addresses });
      deps.events.record(host, 'Normal', EventReason.ServingAddressesChanged, change.message);
    }
    await api.patchNamespacedCustomObject(
      {
        ...hostObject(host),
        body: [
          { op: 'test', path: annotationPath, value },
          { op: 'remove', path: annotationPath },
        ],
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
    );
  }
  const enqueue = (host: WindowsHost) => {
    if (host.metadata.annotations?.[servingAddressesAnnotation] !== undefined) {
      controller.enqueue(objectKey(host));
    }
  };
  deps.hosts.on('add', enqueue).on('update', enqueue);
  return controller;
}
