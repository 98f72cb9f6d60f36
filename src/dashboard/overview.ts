/**
 * What the dashboard shows, from the operator's informers: every WindowsHost with its state,
 * every node with its OS, build, versions and readiness, and the RuntimeClasses winfleet keeps.
 */
import type * as k8s from '@kubernetes/client-node';
import {
  desiredServicesVersionAnnotation,
  servicesVersionAnnotation,
} from '../api/node-annotations.ts';
import type { WindowsHost } from '../api/windows-host.ts';
import type { Informer } from '../controller/informer.ts';
import { nodeIsReady } from '../controller/informer-factory.ts';
import { windowsBuildLabel } from '../windows/builds.ts';

export interface Overview {
  generatedAt: string;
  hosts: {
    namespace: string;
    name: string;
    address: string;
    pool?: string;
    node?: string;
    windowsVersion?: string;
    servicesVersion?: string;
    state: string;
    message: string;
    lastError?: string;
  }[];
  nodes: {
    name: string;
    os: string;
    build?: string;
    kernelVersion?: string;
    kubeletVersion?: string;
    servicesVersion?: string;
    desiredServicesVersion?: string;
    ready: boolean;
    schedulable: boolean;
  }[];
  runtimeClasses: { name: string; handler: string; build?: string; managed: boolean }[];
}

function hostState(host: WindowsHost): { state: string; message: string } {
  const conditions = host.status?.conditions ?? [];
  const degraded = conditions.find((c) => c.type === 'Degraded' && c.status === 'True');
  if (host.metadata.deletionTimestamp)
    return {
      state: 'Removing',
      message: conditions.find((c) => c.type === 'Ready')?.message ?? '',
    };
  if (degraded) return { state: `Degraded (${degraded.reason})`, message: degraded.message };
  const ready = conditions.find((c) => c.type === 'Ready');
  if (ready?.status === 'True') return { state: 'Ready', message: ready.message };
  const latest = [...conditions]
    .filter((c) => c.type !== 'Degraded')
    .sort((a, b) => a.lastTransitionTime.localeCompare(b.lastTransitionTime))
    .at(-1);
  return {
    state: latest ? `${latest.type}: ${latest.reason}` : 'Pending',
    message: latest?.message ?? '',
  };
}

export function buildOverview(informers: {
  hosts: Informer<WindowsHost>;
  nodes: Informer<k8s.V1Node>;
  runtimeClasses: Informer<k8s.V1RuntimeClass>;
}): Overview {
  return {
    generatedAt: new Date().toISOString(),
    hosts: informers.hosts
      .list()
      .map((h) => ({
        namespace: h.metadata.namespace ?? '',
        name: h.metadata.name,
        address: `${h.spec.address}:${h.spec.port ?? 22}`,
        pool: h.spec.pool,
        node: h.status?.nodeName,
        windowsVersion: h.status?.windowsVersion,
        servicesVersion: h.status?.servicesVersion,
        ...hostState(h),
        lastError: h.status?.lastError
          ? `${h.status.lastError.step}: ${h.status.lastError.message}`
          : undefined,
      }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    nodes: informers.nodes
      .list()
      .map((n) => ({
        name: n.metadata?.name ?? '',
        os: n.metadata?.labels?.['kubernetes.io/os'] ?? n.status?.nodeInfo?.operatingSystem ?? '',
        build: n.metadata?.labels?.[windowsBuildLabel],
        kernelVersion: n.status?.nodeInfo?.kernelVersion,
        kubeletVersion: n.status?.nodeInfo?.kubeletVersion,
        servicesVersion: n.metadata?.annotations?.[servicesVersionAnnotation],
        desiredServicesVersion: n.metadata?.annotations?.[desiredServicesVersionAnnotation],
        ready: nodeIsReady(n),
        schedulable: !n.spec?.unschedulable,
      }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    runtimeClasses: informers.runtimeClasses
      .list()
      .map((r) => ({
        name: r.metadata?.name ?? '',
        handler: r.handler,
        build: r.scheduling?.nodeSelector?.[windowsBuildLabel],
        managed: r.metadata?.labels?.['app.kubernetes.io/managed-by'] === 'winfleet',
      }))
      .sort((a, b) => a.name.localeCompare(b.name)),
  };
}
