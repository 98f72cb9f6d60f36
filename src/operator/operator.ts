/**
 * The winfleet operator as a library: starts the shared informers, the configuration watch,
 * the controllers and the admission webhook, and stops them. main.ts is its command line.
 */
import { stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { installCrds } from '../api/install-crds.ts';
import { type WindowsHost, windowsHostResource } from '../api/windows-host.ts';
import { type Controller, everythingKey } from '../controller/controller.ts';
import { createEventRecorder } from '../controller/events.ts';
import { InformerFactory, resources } from '../controller/informer-factory.ts';
import { acquireLeadership } from '../controller/leader-election.ts';
import { createCsrController } from '../controllers/csr/csr-controller.ts';
import { createHostController } from '../controllers/hosts/host-controller.ts';
import {
  createWindowsInstancesController,
  windowsInstancesName,
} from '../controllers/hosts/windows-instances.ts';
import { createRuntimeClassController } from '../controllers/runtimeclasses/runtime-class-controller.ts';
import { dashboardHtml } from '../dashboard/dashboard-page.ts';
import { buildOverview } from '../dashboard/overview.ts';
import type { ImagePlatformResolver } from '../images/image-platforms.ts';
import { prometheusLookupObserver } from '../images/lookup-metrics.ts';
import { httpStatus } from '../kube/client.ts';
import { createLogger, type Logger } from '../log/logger.ts';
import { payloadSource } from '../payload/payload-source.ts';
import { clusterFacts } from '../webhook/cluster-facts.ts';
import { createWebhookMetrics } from '../webhook/metrics.ts';
import { memoizeCompatibility } from '../webhook/placement.ts';
import { apiPullSecrets, podImageResolver, resolverFor } from '../webhook/pod-images.ts';
import type { WebhookEndpoint } from '../webhook/webhook-configurations.ts';
import { startWebhookService, type WebhookService } from '../webhook/webhook-service.ts';
import { isCompatibleBuild } from '../windows/compatibility.ts';
import { clusterAccess } from './cluster-access.ts';
import { watchConfig } from './config-source.ts';
import { type ExtraRoute, type StatusServer, startStatusServer } from './status-server.ts';

export const defaultOperatorNamespace = 'winfleet-system';

export interface OperatorOptions {
  kc: k8s.KubeConfig;
  namespace?: string;
  log?: Logger;
  /** The admission webhook; false to run without it. */
  webhook?:
    | false
    | {
        host: string;
        port: number;
        endpoint: WebhookEndpoint;
        dnsNames: string[];
        ipAddresses: string[];
        certValidityMs?: number;
        caValidityMs?: number;
      };
  /** /healthz, /readyz, /metrics (and the dashboard) on this port; 0 picks one. */
  status?: { host: string; port: number };
  /** Elect a leader on a Lease before running controllers (default true). */
  leaderElection?: boolean;
  identity?: string;
  /** Directory with payload.json and the Windows binaries; without it, hosts are not joined. */
  payloadDir?: string;
}

export interface Operator {
  namespace: string;
  webhook?: WebhookService;
  status?: StatusServer;
  controllers: Controller[];
  stop(): Promise<void>;
}

async function ensureNamespace(kc: k8s.KubeConfig, name: string): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  try {
    await core.createNamespace({
      body: { metadata: { name, labels: { 'app.kubernetes.io/part-of': 'winfleet' } } },
    });
  } catch (error) {
    if (httpStatus(error) !== 409) throw error;
  }
}

/** Starts the operator and resolves once it is serving and its controllers run. */
export async function startOperator(options: OperatorOptions): Promise<Operator> {
  const { kc } = options;
  const namespace = options.namespace ?? defaultOperatorNamespace;
  const log = options.log ?? createLogger({}, { component: 'operator' });
  const identity = options.identity ?? `${hostname()}-${process.pid}`;
  await ensureNamespace(kc, namespace);
  await installCrds(kc);

  const events = createEventRecorder(kc, 'winfleet-operator', log);
  const factory = new InformerFactory(kc, log);
  const config = watchConfig(factory, namespace, events, log);
  const nodes = factory.get<k8s.V1Node>(resources.nodes);
  const runtimeClasses = factory.get<k8s.V1RuntimeClass>(resources.runtimeClasses);
  const namespaces = factory.get<k8s.V1Namespace>(resources.namespaces, {
    transform: (ns) => ({
      metadata: {
        name: ns.metadata?.name,
        labels: ns.metadata?.labels,
        resourceVersion: ns.metadata?.resourceVersion,
      },
    }),
  });
  const hosts = factory.get<WindowsHost>(windowsHostResource);
  const csrs = factory.get<k8s.V1CertificateSigningRequest>(resources.csrs);
  const instances = factory.get<k8s.V1ConfigMap>(resources.configMaps, {
    namespace,
    fieldSelector: `metadata.name=${windowsInstancesName}`,
  });
  const registry = new Registry();
  const webhookMetrics = createWebhookMetrics(registry);
  const lookupObserver = prometheusLookupObserver(registry);

  const controllers: Controller[] = [];

  await factory.start();

  let resolver: ImagePlatformResolver = resolverFor(config.current(), lookupObserver);
  let webhook: WebhookService | undefined;
  if (options.webhook) {
    const facts = clusterFacts(kc, { nodes, runtimeClasses, namespaces }, () => config.current());
    webhook = await startWebhookService({
      kc,
      operatorNamespace: namespace,
      config: () => config.current(),
      facts,
      // A malformed os.version from a registry runs nowhere.
      isCompatible: memoizeCompatibility(isCompatibleBuild),
      resolveImages: podImageResolver(() => resolver, apiPullSecrets(kc)),
      host: options.webhook.host,
      port: options.webhook.port,
      endpoint: options.webhook.endpoint,
      dnsNames: options.webhook.dnsNames,
      ipAddresses: options.webhook.ipAddresses,
      certValidityMs: options.webhook.certValidityMs,
      caValidityMs: options.webhook.caValidityMs,
      metrics: webhookMetrics,
      log,
    });
  }
  config.onChange((next) => {
    const old = resolver;
    resolver = resolverFor(next, lookupObserver);
    setTimeout(() => old.close(), 10_000).unref();
    webhook?.refresh();
    for (const c of controllers) c.enqueue(everythingKey);
  });

  const dashboard: ExtraRoute = (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/' || path === '/index.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(dashboardHtml);
      return true;
    }
    if (path === '/api/overview') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(buildOverview({ hosts, nodes, runtimeClasses })));
      return true;
    }
    return false;
  };
  const status = options.status
    ? await startStatusServer({
        ...options.status,
        registry,
        ready: () => true,
        log,
        routes: [dashboard],
      })
    : undefined;

  const stopController = new AbortController();
  const stopped = async () => {
    stopController.abort();
    for (const c of controllers) c.stop();
    factory.stop();
    await webhook?.stop();
    await status?.close();
    resolver.close();
  };
  if (options.leaderElection ?? true) {
    await acquireLeadership(
      kc,
      { namespace, name: 'winfleet-operator', identity, log, signal: stopController.signal },
      () => {
        // Controller-runtime's rule: a replica that lost the lease exits and restarts clean.
        log.error('lost the leader lease; exiting');
        process.exit(1);
      },
    );
  }
  // Controllers start only once this replica leads; informer events before that are replayed
  // by enqueueing everything now.
  controllers.push(
    createRuntimeClassController({
      kc,
      nodes,
      runtimeClasses,
      config: () => config.current(),
      events,
      log,
    }),
    createCsrController({ kc, csrs, hosts, nodes, events, log }),
    createWindowsInstancesController({ kc, namespace, configMaps: instances, hosts, events, log }),
  );
  if (options.payloadDir) {
    const hostController = createHostController({
      kc,
      operatorNamespace: namespace,
      config: () => config.current(),
      hosts,
      nodes,
      payload: payloadSource(options.payloadDir, () => config.current()),
      cluster: clusterAccess(kc),
      events,
      log,
    });
    controllers.push(hostController);
    // A new payload (a new payload.json) is rolled out to every host.
    const payloadFile = join(options.payloadDir, 'payload.json');
    let seen = await stat(payloadFile).then(
      (s) => `${s.mtimeMs}:${s.size}`,
      () => '',
    );
    const poll = setInterval(() => {
      stat(payloadFile).then(
        (s) => {
          const now = `${s.mtimeMs}:${s.size}`;
          if (now === seen) return;
          seen = now;
          log.info('payload changed; rolling it out', { payload: payloadFile });
          hostController.enqueue(everythingKey);
        },
        () => {},
      );
    }, 2000);
    poll.unref();
    stopController.signal.addEventListener('abort', () => clearInterval(poll));
  } else {
    log.warn('no payload directory given (--payload-dir): WindowsHosts will not be joined');
  }
  for (const c of controllers) c.enqueue(everythingKey);
  log.info('operator running', {
    namespace,
    identity,
    webhookPort: webhook?.port,
    statusPort: status?.port,
  });
  return { namespace, webhook, status, controllers, stop: stopped };
}
