/**
 * The kubelet API of a simulated host: what the real kubelet serves on port 10250, for the API
 * server's `kubectl logs` (and what a person would reach with the kubelet's own credentials),
 * behind the host's Windows Firewall (firewall.ts).
 *
 * As kubelet v1.36 does it (cmd/kubelet/app/server.go InitializeTLS, pkg/kubelet/kubelet.go,
 * pkg/kubelet/server/{server,auth}.go):
 * - TLS with the serving certificate: with serverTLSBootstrap, the one the kubelet-serving CSR
 *   got (<certDir>\kubelet-server-current.pem, picked up when it appears or changes), and no
 *   handshake until then ("no serving certificate available for the kubelet"); without it, a
 *   self-signed <certDir>\kubelet.crt for the host name, generated once;
 * - authentication: a client certificate that chains to the KubeletConfiguration's clientCAFile
 *   and is meant for client auth (the user is its CN, the groups its O), else a bearer token
 *   checked with a TokenReview; neither is 401 "Unauthorized" (anonymous is off);
 * - authorization: a SubjectAccessReview as the node for `nodes/<subresource>` of this node,
 *   the subresource from the path (proxy for /containerLogs; with KubeletFineGrainedAuthz
 *   pods, healthz or configz first); refused is 403 "Forbidden (user=…, verb=…, resource=nodes,
 *   subresource(s)=[…])";
 * - GET /containerLogs/{namespace}/{pod}/{container}: the container's CRI log file
 *   (container-logs.ts) with the PodLogOptions of the query, and the kubelet's errors for a pod
 *   that is not on this node, an unknown container, or one that has not started.
 * Connections the firewall does not allow get no answer, as the firewall drops them: the API
 * server gives up after its TLS handshake timeout.
 */
import { X509Certificate } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TLSSocket } from 'node:tls';
import * as k8s from '@kubernetes/client-node';
import { httpStatus, isNotFound } from '../../src/kube/client.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/certificates.ts';
import { containerLogPath, type LogReadOptions, renderContainerLog } from './container-logs.ts';
import { callOptions } from './kubelet-kubeconfig.ts';
import type { KubeletSettings } from './kubelet-settings.ts';
import type { SimMachine } from './machine.ts';
import { formatWindowsPath, windowsPathSegments } from './windows-path.ts';

export interface KubeletServerOptions {
  machine: SimMachine;
  /** What it serves with; `port` is where it listens (KubeletConfiguration port, or --port). */
  settings: Pick<KubeletSettings, 'certDir' | 'serverTLSBootstrap' | 'clientCAFile' | 'port'>;
  nodeName: string;
  /** The node's own credentials: reviews and pod lookups are made as the node. */
  kc: k8s.KubeConfig;
  /** Aborted when the kubelet stops: the server closes. */
  signal: AbortSignal;
  log: (severity: 'I' | 'W' | 'E', message: string) => void;
  /** Each API call's timeout. Default 10 s. */
  apiTimeoutMs?: number;
  /** How often the serving certificate file is looked at. Default 500 ms. */
  certPollMs?: number;
  /** How long a connection the firewall dropped is held before it is let go. Default 60 s. */
  droppedConnectionMs?: number;
}

/** The user a request authenticated as. */
interface RequestUser {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const clientAuthUsage = '1.3.6.1.5.5.7.3.2';
const servingCertificateFile = 'kubelet-server-current.pem';

/** Starts serving; rejects (the kubelet exits) when the port cannot be bound. */
export async function startKubeletServer(options: KubeletServerOptions): Promise<KubeletServer> {
  const server = new KubeletServer(options);
  await server.listen();
  return server;
}

export class KubeletServer {
  readonly #options: Required<
    Pick<KubeletServerOptions, 'apiTimeoutMs' | 'certPollMs' | 'droppedConnectionMs'>
  > &
    KubeletServerOptions;
  readonly #https: HttpsServer;
  readonly #tcp: NetServer;
  readonly #dropped = new Set<Socket>();
  readonly #open = new Set<Socket>();
  readonly #core: k8s.CoreV1Api;
  #clientCa: string | undefined;
  #servingPem: string | undefined;
  #closed: Promise<void> | undefined;

  constructor(options: KubeletServerOptions) {
    this.#options = {
      apiTimeoutMs: 10_000,
      certPollMs: 500,
      droppedConnectionMs: 60_000,
      ...options,
    };
    this.#core = options.kc.makeApiClient(k8s.CoreV1Api);
    // Client certificates are asked for but not required: a token may authenticate instead.
    this.#https = createHttpsServer({ requestCert: true, rejectUnauthorized: false }, (req, res) =>
      this.#handle(req, res),
    );
    this.#https.on('tlsClientError', () => {});
    this.#tcp = createNetServer((socket) => this.#accept(socket));
    this.#tcp.on('error', () => {});
  }

  /** Where it listens: the host's address and the kubelet port. */
  get address(): string {
    return `${this.#options.machine.address}:${this.#options.settings.port}`;
  }

  async listen(): Promise<void> {
    const { machine, settings, signal, log } = this.#options;
    const { port } = settings;
    if (settings.clientCAFile) {
      this.#clientCa = (await machine.fs.readFile(settings.clientCAFile)).toString('utf8');
    }
    await this.#loadServingCertificate();
    // The kubelet binds all addresses; a simulated host has one. A kubelet that just stopped
    // may still hold the port for a moment.
    for (let attempt = 1; ; attempt++) {
      try {
        await new Promise<void>((resolve, reject) => {
          this.#tcp.once('error', reject);
          this.#tcp.listen({ host: machine.address, port, exclusive: true }, () => {
            this.#tcp.off('error', reject);
            resolve();
          });
        });
        break;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'EADDRINUSE' || attempt >= 20 || signal.aborted) {
          throw new Error(
            `Failed to listen and serve: listen tcp 0.0.0.0:${port}: bind: ${code === 'EADDRINUSE' ? 'Only one usage of each socket address (protocol/network address/port) is normally permitted.' : (error as Error).message}`,
          );
        }
        await sleep(250);
      }
    }
    log('I', `Starting to listen on ${this.address} (the kubelet API)`);
    if (signal.aborted) void this.close();
    signal.addEventListener('abort', () => void this.close(), { once: true });
    void this.#watchServingCertificate();
  }

  /** Stops listening and ends every connection. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      for (const socket of [...this.#dropped, ...this.#open]) socket.destroy();
      await new Promise<void>((resolve) => this.#tcp.close(() => resolve()));
    })();
    return this.#closed;
  }

  // Connections and TLS.

  #accept(socket: Socket): void {
    socket.on('error', () => {});
    const { machine, settings, droppedConnectionMs } = this.#options;
    const { port } = settings;
    if (this.#closed) {
      socket.destroy();
      return;
    }
    if (!machine.firewall.allowsInbound('TCP', port)) {
      // Dropped: nothing is ever sent back; the client waits until it gives up.
      socket.pause();
      this.#dropped.add(socket);
      const timer = setTimeout(() => socket.destroy(), droppedConnectionMs);
      timer.unref();
      socket.once('close', () => {
        clearTimeout(timer);
        this.#dropped.delete(socket);
      });
      return;
    }
    this.#open.add(socket);
    socket.once('close', () => this.#open.delete(socket));
    this.#https.emit('connection', socket);
  }

  /** The serving certificate and key (PEM) to serve with, if there is one yet. */
  async #servingCertificate(): Promise<string | undefined> {
    const { machine, settings, nodeName, log } = this.#options;
    const dir = windowsPathSegments(settings.certDir);
    if (settings.serverTLSBootstrap) {
      const file = formatWindowsPath([...dir, servingCertificateFile]);
      return (await machine.fs.tryReadFile(file))?.toString('utf8');
    }
    const certFile = formatWindowsPath([...dir, 'kubelet.crt']);
    const keyFile = formatWindowsPath([...dir, 'kubelet.key']);
    const [cert, key] = await Promise.all([
      machine.fs.tryReadFile(certFile),
      machine.fs.tryReadFile(keyFile),
    ]);
    if (cert && key) return `${cert}${key}`;
    // InitializeTLS: certutil.GenerateSelfSignedCertKey for the host name.
    const ca = await createCertificateAuthority(`${nodeName}-ca@${Math.floor(Date.now() / 1000)}`);
    const pair = await issueCertificate(ca, {
      commonName: `${nodeName}@${Math.floor(Date.now() / 1000)}`,
      dnsNames: [nodeName],
      usage: 'server',
    });
    await machine.fs.mkdir(formatWindowsPath(dir), { recursive: true });
    await machine.fs.writeFileAtomic(certFile, `${pair.certPem}${ca.certPem}`);
    await machine.fs.writeFileAtomic(keyFile, pair.keyPem);
    log('I', `Using self-signed cert ${certFile}`);
    return `${pair.certPem}${ca.certPem}${pair.keyPem}`;
  }

  async #loadServingCertificate(): Promise<void> {
    const pem = await this.#servingCertificate();
    if (pem === this.#servingPem || pem === undefined) return;
    const cert = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/g);
    const key = pem.match(
      /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----\n?/,
    )?.[0];
    if (!cert || !key) return;
    this.#https.setSecureContext({
      cert: cert.join(''),
      key,
      ...(this.#clientCa ? { ca: this.#clientCa } : {}),
    });
    this.#servingPem = pem;
    this.#options.log('I', 'Serving the kubelet API with the current serving certificate');
  }

  /** The certificate manager's part: a new serving certificate is used from then on. */
  async #watchServingCertificate(): Promise<void> {
    const { signal, certPollMs, log } = this.#options;
    while (!signal.aborted) {
      await sleep(certPollMs, undefined, { signal }).catch(() => {});
      if (signal.aborted) break;
      await this.#loadServingCertificate().catch((error: unknown) =>
        log('W', `Cannot load the serving certificate: ${(error as Error).message}`),
      );
    }
  }

  // Requests.

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://kubelet');
    try {
      const user = await this.#authenticate(req);
      if (!user) throw new HttpError(401, 'Unauthorized');
      await this.#authorize(user, req.method ?? 'GET', url.pathname);
      if (req.method === 'GET' && url.pathname === '/healthz') {
        res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' }).end('ok');
        return;
      }
      const logs = /^\/containerLogs\/([^/]*)\/([^/]*)\/([^/]*)$/.exec(url.pathname);
      if (req.method === 'GET' && logs) {
        await this.#containerLogs(
          req,
          res,
          logs.slice(1).map(decodeURIComponent) as [string, string, string],
          url.searchParams,
        );
        return;
      }
      throw new HttpError(404, '404 page not found');
    } catch (error) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const status = error instanceof HttpError ? error.status : 500;
      if (status === 500 && !this.#options.signal.aborted) {
        this.#options.log('E', `Kubelet API request failed: ${(error as Error).message}`);
      }
      res
        .writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' })
        .end(`${(error as Error).message}\n`);
    }
  }

  /** The client certificate's user, else the bearer token's; undefined for neither. */
  async #authenticate(req: IncomingMessage): Promise<RequestUser | undefined> {
    const socket = req.socket as TLSSocket;
    const peer = socket.getPeerCertificate();
    if (this.#clientCa && socket.authorized && peer?.raw) {
      const certificate = new X509Certificate(peer.raw);
      const usages = certificate.keyUsage;
      // The x509 authenticator verifies for client auth (an EKU-less certificate passes).
      if (!usages || usages.includes(clientAuthUsage)) {
        const subject = peer.subject as unknown as Record<string, string | string[] | undefined>;
        const cn = subject.CN;
        const groups = subject.O === undefined ? [] : [subject.O].flat();
        if (typeof cn === 'string' && cn !== '') return { name: cn, groups };
      }
    }
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!bearer) return undefined;
    const review = await this.#options.kc
      .makeApiClient(k8s.AuthenticationV1Api)
      .createTokenReview({ body: { spec: { token: bearer } } }, this.#call());
    const user = review.status?.user;
    if (!review.status?.authenticated || !user?.username) return undefined;
    return {
      name: user.username,
      groups: user.groups ?? [],
      ...(user.uid ? { uid: user.uid } : {}),
      ...(user.extra ? { extra: user.extra } : {}),
    };
  }

  /** SubjectAccessReviews as the node; allowed when any subresource is. */
  async #authorize(user: RequestUser, method: string, path: string): Promise<void> {
    const verb = (
      { POST: 'create', GET: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' } as Record<
        string,
        string
      >
    )[method];
    const subresources = kubeletSubresources(path);
    const api = this.#options.kc.makeApiClient(k8s.AuthorizationV1Api);
    for (const subresource of subresources) {
      const review = await api.createSubjectAccessReview(
        {
          body: {
            spec: {
              user: user.name,
              groups: user.groups,
              ...(user.uid ? { uid: user.uid } : {}),
              ...(user.extra ? { extra: user.extra } : {}),
              resourceAttributes: {
                verb: verb ?? '',
                group: '',
                version: 'v1',
                resource: 'nodes',
                subresource,
                name: this.#options.nodeName,
              },
            },
          },
        },
        this.#call(),
      );
      if (review.status?.allowed) return;
    }
    throw new HttpError(
      403,
      `Forbidden (user=${user.name}, verb=${verb ?? ''}, resource=nodes, subresource(s)=[${subresources.join(' ')}])`,
    );
  }

  async #containerLogs(
    req: IncomingMessage,
    res: ServerResponse,
    [namespace, podName, containerName]: [string, string, string],
    query: URLSearchParams,
  ): Promise<void> {
    if (podName === '') throw new HttpError(400, '{"message": "Missing podID."}');
    if (containerName === '') throw new HttpError(400, '{"message": "Missing container name."}');
    if (namespace === '') throw new HttpError(400, '{"message": "Missing podNamespace."}');
    const options = podLogOptions(query);
    const pod = await this.#pod(namespace, podName);
    if (!pod) throw new HttpError(404, `pod "${podName}" does not exist`);
    const specs = [
      ...(pod.spec?.initContainers ?? []),
      ...(pod.spec?.containers ?? []),
      ...(pod.spec?.ephemeralContainers ?? []),
    ];
    if (!specs.some((c) => c.name === containerName)) {
      throw new HttpError(404, `container "${containerName}" not found in pod "${podName}"`);
    }
    const restartCount = logFileOf(pod, containerName, options.previous);
    const path = containerLogPath(
      { namespace, name: podName, uid: pod.metadata?.uid ?? '' },
      containerName,
      restartCount,
    );
    const { fs } = this.#options.machine;
    const read = async () => (await fs.tryReadFile(path))?.toString('utf8');
    let text = await read();
    if (text === undefined) {
      throw new HttpError(
        400,
        `failed to try resolving symlinks in path "${path}": lstat ${path}: The system cannot find the file specified.`,
      );
    }
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked' });
    res.write(renderContainerLog(text, options));
    if (!options.follow) {
      res.end();
      return;
    }
    // Follow: what is appended, until the client goes or the kubelet stops.
    const gone = new AbortController();
    req.once('close', () => gone.abort());
    const signal = AbortSignal.any([gone.signal, this.#options.signal]);
    while (!signal.aborted) {
      await sleep(250, undefined, { signal }).catch(() => {});
      const now = await read().catch(() => undefined);
      if (now === undefined || now.length <= text.length || signal.aborted) continue;
      res.write(renderContainerLog(now.slice(text.length), { timestamps: options.timestamps }));
      text = now;
    }
    res.end();
  }

  /** The pod, when it is bound to this node (the kubelet's pod manager knows only those). */
  async #pod(namespace: string, name: string): Promise<k8s.V1Pod | undefined> {
    try {
      const pod = await this.#core.readNamespacedPod({ namespace, name }, this.#call());
      return pod.spec?.nodeName === this.#options.nodeName ? pod : undefined;
    } catch (error) {
      // The node authorizer refuses pods bound elsewhere: to this kubelet they do not exist.
      if (isNotFound(error) || httpStatus(error) === 403) return undefined;
      throw error;
    }
  }

  #call(): k8s.ConfigurationOptions {
    return callOptions(this.#options.signal, this.#options.apiTimeoutMs);
  }
}

/**
 * The `nodes` subresources a kubelet API path is authorized as (pkg/kubelet/server/auth.go),
 * the fine-grained one first (KubeletFineGrainedAuthz, on by default in v1.36).
 */
export function kubeletSubresources(path: string): string[] {
  const under = (prefix: string) => path === prefix || path.startsWith(`${prefix}/`);
  const fine = under('/pods')
    ? ['pods']
    : under('/healthz')
      ? ['healthz']
      : under('/configz')
        ? ['configz']
        : under('/runningpods')
          ? ['pods']
          : [];
  const coarse = under('/stats')
    ? 'stats'
    : under('/metrics')
      ? 'metrics'
      : under('/logs')
        ? 'log'
        : under('/checkpoint')
          ? 'checkpoint'
          : under('/statusz')
            ? 'statusz'
            : under('/flagz')
              ? 'configz'
              : 'proxy';
  return [...fine, coarse];
}

interface PodLogQuery extends LogReadOptions {
  follow: boolean;
  previous: boolean;
}

/** PodLogOptions from the query, decoded and validated as the kubelet does. */
export function podLogOptions(query: URLSearchParams): PodLogQuery {
  const bad = () => new HttpError(400, '{"message": "Unable to decode query."}');
  const invalid = () => new HttpError(422, '{"message": "Invalid request."}');
  const bool = (name: string) => {
    const value = query.get(name);
    if (value === null || value === '') return false;
    if (value === 'true' || value === 'false') return value === 'true';
    throw bad();
  };
  const int = (name: string) => {
    const value = query.get(name);
    if (value === null || value === '') return undefined;
    if (!/^-?\d+$/.test(value)) throw bad();
    return Number(value);
  };
  const tail = query.get('tail');
  const tailLines =
    tail !== null && tail !== 'all' && tail !== '' ? Number(tail) : int('tailLines');
  if (tailLines !== undefined && !Number.isInteger(tailLines)) throw bad();
  const limitBytes = int('limitBytes');
  const sinceSeconds = int('sinceSeconds');
  const sinceTimeText = query.get('sinceTime');
  const sinceTime = sinceTimeText ? new Date(sinceTimeText) : undefined;
  if (sinceTime && Number.isNaN(sinceTime.getTime())) throw bad();
  // validation.ValidatePodLogOptions.
  if (tailLines !== undefined && tailLines < 0) throw invalid();
  if (limitBytes !== undefined && limitBytes < 1) throw invalid();
  if (sinceSeconds !== undefined && sinceSeconds < 1) throw invalid();
  if (sinceSeconds !== undefined && sinceTime !== undefined) throw invalid();
  const options: PodLogQuery = {
    follow: bool('follow'),
    previous: bool('previous'),
    timestamps: bool('timestamps'),
  };
  if (tailLines !== undefined) options.tailLines = tailLines;
  if (limitBytes !== undefined) options.limitBytes = limitBytes;
  const since =
    sinceTime ??
    (sinceSeconds !== undefined ? new Date(Date.now() - sinceSeconds * 1000) : undefined);
  if (since) options.sinceTime = since;
  return options;
}

/**
 * Which log file of the container to read (its restart count), or the kubelet's error for a
 * container that has none (kubelet_pods.go validateContainerLogStatus).
 */
function logFileOf(pod: k8s.V1Pod, container: string, previous: boolean): number {
  const name = pod.metadata?.name ?? '';
  const status = [
    ...(pod.status?.containerStatuses ?? []),
    ...(pod.status?.initContainerStatuses ?? []),
    ...(pod.status?.ephemeralContainerStatuses ?? []),
  ].find((s) => s.name === container);
  if (!status) {
    throw new HttpError(400, `container "${container}" in pod "${name}" is not available`);
  }
  const { running, terminated, waiting } = status.state ?? {};
  const last = status.lastState?.terminated;
  if (previous) {
    if (!last) {
      throw new HttpError(
        400,
        `previous terminated container "${container}" in pod "${name}" not found`,
      );
    }
    return Math.max(0, status.restartCount - 1);
  }
  if (running || terminated) return status.restartCount;
  if (last) return Math.max(0, status.restartCount - 1);
  if (waiting) {
    throw new HttpError(
      400,
      `container "${container}" in pod "${name}" is waiting to start: ${waiting.reason ?? ''}`,
    );
  }
  throw new HttpError(
    400,
    `container "${container}" in pod "${name}" is waiting to start - no logs yet`,
  );
}
