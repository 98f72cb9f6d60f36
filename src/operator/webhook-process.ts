/**
 * The admission webhook in a process of its own (`winfleet-operator --mode webhook`): what it
 * parses comes from registries any pod creator chooses, so it runs apart from the controllers,
 * as a ServiceAccount with no Secret, CSR or webhook-configuration rights (docs/security.md,
 * "Split privilege"). It reads only the configuration ConfigMap, Nodes, RuntimeClasses and Namespaces
 * (watched), gMSA credential specs, and, where the values opt in, pods' image pull secrets by
 * name. Its serving certificate comes from files (the certificate Secret mounted by the
 * kubelet: tls.crt and tls.key, never the CA key), looked at again every few seconds, so a
 * renewal the controllers' process writes is served without a restart.
 */
import { readFile } from 'node:fs/promises';
import type * as k8s from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import type { WinfleetConfig } from '../config/winfleet-config.ts';
import type { EventRecorder } from '../controller-runtime/events.ts';
import { InformerFactory, resources } from '../controller-runtime/informer-factory.ts';
import type { ImageLookupObserver, ImagePlatformResolver } from '../images/image-platforms.ts';
import { prometheusLookupObserver } from '../images/lookup-metrics.ts';
import { WinfleetKubeConfig } from '../kube/client.ts';
import { waitFor } from '../kube/wait-for.ts';
import type { Logger } from '../log/logger.ts';
import { type AdmissionServer, createAdmissionServer } from '../webhook/admission-server.ts';
import { clusterFacts } from '../webhook/cluster-facts.ts';
import { createWebhookMetrics } from '../webhook/metrics.ts';
import { memoizeCompatibility } from '../webhook/placement.ts';
import { apiPullSecrets, podImageResolver, resolverFor } from '../webhook/pod-images.ts';
import { servingCertificateFromPems } from '../webhook/secret-certificate.ts';
import { podAdmissionDeps, podAdmissionRoutes } from '../webhook/webhook-service.ts';
import { isCompatibleBuild } from '../windows/compatibility.ts';
import { type ConfigSource, configStatusRoute, watchConfig } from './config-source.ts';
import { registerProcessMetrics } from './process-metrics.ts';
import { type StatusServer, startStatusServer } from './status-server.ts';

/** How often the certificate files are read again (the kubelet refreshes a mounted Secret within about a minute). */
export const certificateFileRecheckMs = 10_000;

export interface WebhookProcessOptions {
  kc: k8s.KubeConfig;
  namespace: string;
  log: Logger;
  host: string;
  port: number;
  /** PEM certificate (chain) and key to serve: the mounted certificate Secret's tls.crt, tls.key. */
  certFile: string;
  keyFile: string;
  /** Namespaces whose pods' image pull secrets are read (none by default in the chart). */
  pullSecretNamespaces: 'all' | string[];
  status?: { host: string; port: number };
  /** How long to wait for the certificate files at start (default 5 minutes). */
  certificateWaitMs?: number;
  certificateRecheckMs?: number;
}

export interface WebhookProcess {
  server: AdmissionServer;
  port: number;
  status?: StatusServer;
  stop(): Promise<void>;
}

/** The image resolver in force; a configuration change replaces it. */
export interface ImageResolvers {
  current(): ImagePlatformResolver;
  close(): void;
}

/**
 * Keeps an image resolver built from the current configuration. A new configuration gets a new
 * resolver; the old one is closed a little later, as lookups in flight may still use it.
 * @package
 */
export function createImageResolvers(
  config: ConfigSource,
  observer: ImageLookupObserver,
): ImageResolvers {
  let resolver = resolverFor(config.current(), observer);
  config.onChange((next) => {
    const old = resolver;
    resolver = resolverFor(next, observer);
    setTimeout(() => old.close(), 10_000).unref();
  });
  return { current: () => resolver, close: () => resolver.close() };
}

/** The webhook needs only names and labels of namespaces; the rest is not kept. */
export const slimNamespace = (ns: k8s.V1Namespace): k8s.V1Namespace => ({
  metadata: {
    name: ns.metadata?.name,
    labels: ns.metadata?.labels,
    resourceVersion: ns.metadata?.resourceVersion,
  },
});

/**
 * Reads and checks the certificate files; each problem names the file and the fix. Nothing of
 * the key reaches a message.
 * @package
 */
export async function readCertificateFiles(
  certFile: string,
  keyFile: string,
): Promise<{ certPem: string; keyPem: string }> {
  const [certPem, keyPem] = await Promise.all([
    readFile(certFile, 'utf8'),
    readFile(keyFile, 'utf8'),
  ]);
  const checked = servingCertificateFromPems(`--tls-cert-file ${certFile} with --tls-key-file`, {
    'tls.crt': certPem,
    'tls.key': keyPem,
  });
  return { certPem: checked.certPem, keyPem: checked.keyPem };
}

/** The webhook's configuration watch records no Events: the controllers' process does. */
const noEvents: EventRecorder = { record: () => {} };

/**
 * Waits for the certificate files (the mounted Secret may not be written yet), logging each new
 * problem once.
 */
async function waitForCertificateFiles(
  options: WebhookProcessOptions,
  log: Logger,
): Promise<{ certPem: string; keyPem: string }> {
  const read = () => readCertificateFiles(options.certFile, options.keyFile);
  let lastProblem = '';
  return await waitFor(
    () =>
      read().catch((error: unknown) => {
        const problem = (error as Error).message;
        if (problem !== lastProblem) log.warn('waiting for the certificate files', { problem });
        lastProblem = problem;
        return undefined;
      }),
    {
      description: `the webhook certificate in ${options.certFile} and ${options.keyFile} (the mounted certificate Secret, which the controllers' process or cert-manager writes)`,
      timeoutMs: options.certificateWaitMs ?? 5 * 60_000,
      intervalMs: 1000,
    },
  );
}

/**
 * Rereads the certificate files on an interval and serves a renewed certificate; a file that
 * cannot be read keeps the last good one. Returns the (unref'd) interval to clear.
 */
function recheckCertificateFiles(
  options: WebhookProcessOptions,
  server: AdmissionServer,
  initial: { certPem: string; keyPem: string },
  log: Logger,
): NodeJS.Timeout {
  const read = () => readCertificateFiles(options.certFile, options.keyFile);
  let served = initial;
  const recheck = setInterval(() => {
    read().then(
      (next) => {
        if (next.certPem === served.certPem && next.keyPem === served.keyPem) return;
        server.updateCertificate(next.certPem, next.keyPem);
        served = next;
        log.info('serving the renewed certificate from the files');
      },
      (error: unknown) => {
        // Mid-update (the kubelet swaps the files as one) or broken: keep serving the last good.
        log.warn('cannot read the certificate files; serving the last good certificate', {
          error: (error as Error).message,
        });
      },
    );
  }, options.certificateRecheckMs ?? certificateFileRecheckMs);
  recheck.unref();
  return recheck;
}

/** Starts the webhook process; resolves once it serves admissions. */
export async function startWebhookProcess(options: WebhookProcessOptions): Promise<WebhookProcess> {
  const log = options.log.child({ component: 'webhook' });
  const registry = new Registry();
  registerProcessMetrics(registry);
  if (options.kc instanceof WinfleetKubeConfig) options.kc.requests.registerIn(registry);
  const metrics = createWebhookMetrics(registry);
  const stops: (() => void | Promise<void>)[] = [];
  const stop = async () => {
    for (const step of [...stops].reverse()) await step();
  };
  try {
    const factory = new InformerFactory(options.kc, log);
    const config = watchConfig(factory, options.namespace, noEvents, log);
    const nodes = factory.get<k8s.V1Node>(resources.nodes);
    const runtimeClasses = factory.get<k8s.V1RuntimeClass>(resources.runtimeClasses);
    const namespaces = factory.get<k8s.V1Namespace>(resources.namespaces, {
      transform: slimNamespace,
    });
    await factory.start();
    stops.push(() => factory.stop());
    const images = createImageResolvers(config, prometheusLookupObserver(registry));
    stops.push(() => images.close());
    const current = (): WinfleetConfig => config.current();
    const deps = podAdmissionDeps(
      {
        kc: options.kc,
        config: current,
        operatorNamespace: options.namespace,
        facts: clusterFacts(options.kc, { nodes, runtimeClasses, namespaces }, current),
        isCompatible: memoizeCompatibility(isCompatibleBuild),
        resolveImages: podImageResolver(
          () => images.current(),
          apiPullSecrets(options.kc, options.pullSecretNamespaces),
        ),
      },
      log,
    );
    const initial = await waitForCertificateFiles(options, log);
    const server = createAdmissionServer({
      cert: initial.certPem,
      key: initial.keyPem,
      log,
      metrics,
      routes: podAdmissionRoutes(deps),
    });
    const port = await server.listen(options.port, options.host);
    stops.push(() => server.close());
    const recheck = recheckCertificateFiles(options, server, initial, log);
    stops.push(() => clearInterval(recheck));
    const status = options.status
      ? await startStatusServer({
          ...options.status,
          registry,
          ready: () => true,
          log,
          routes: [configStatusRoute(config)],
        })
      : undefined;
    if (status) stops.push(() => status.close());
    log.info('webhook running', { namespace: options.namespace, port, statusPort: status?.port });
    return { server, port, status, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
