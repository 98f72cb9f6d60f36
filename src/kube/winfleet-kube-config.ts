/**
 * winfleet's KubeConfig: every API request of the process goes through one connection pool
 * per API server and credentials, which sets winfleet's User-Agent and counts the request
 * (request-interceptor.ts, request-metrics.ts). client-node builds a new undici Agent for
 * every request (KubeConfig.createDispatcher, called by applySecurityAuthentication, which
 * API calls and watches both use); this class keeps the pool instead, and builds a new one
 * only when the TLS material differs, as when a rotated client certificate file is read.
 */
import * as k8s from '@kubernetes/client-node';
import { Agent, type Dispatcher } from 'undici';
import { WinfleetError } from '../errors/catalog.ts';
import { countingInterceptor } from './request-interceptor.ts';
import { requestKind } from './request-kind.ts';
import { KubeRequestCounter } from './request-metrics.ts';
import { userAgents } from './user-agent.ts';

type AgentOptions = Record<string, unknown>;
type CreateDispatcher = (
  cluster: k8s.Cluster | null,
  agentOptions: AgentOptions,
) => Dispatcher | undefined;

/** The options that decide a pool: the TLS material and verification settings. */
const poolOptionKeys = [
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'rejectUnauthorized',
  'servername',
];

interface Pool {
  options: AgentOptions;
  dispatcher: Dispatcher;
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  return a === b;
}

function samePoolOptions(a: AgentOptions, b: AgentOptions): boolean {
  return poolOptionKeys.every((key) => sameValue(a[key], b[key]));
}

export interface WinfleetKubeConfigOptions {
  /** The User-Agent the process sends (user-agent.ts); default the CLI's. */
  userAgent?: string;
  /** Where requests are counted; default a counter of its own. */
  requests?: KubeRequestCounter;
}

/** What `outsideRequest` gives for any KubeConfig: nothing to add for one not winfleet's. */
export function outsideRequest(kc: k8s.KubeConfig, method: string, path: string) {
  return kc instanceof WinfleetKubeConfig
    ? kc.outsideRequest(method, path)
    : { headers: {}, done: (_status: number | undefined) => {} };
}

export class WinfleetKubeConfig extends k8s.KubeConfig {
  readonly userAgent: string;
  readonly requests: KubeRequestCounter;
  /** The pool per cluster server and user. */
  readonly #pools = new Map<string, Pool>();

  constructor(options: WinfleetKubeConfigOptions = {}) {
    super();
    this.userAgent = options.userAgent ?? userAgents.cli;
    this.requests = options.requests ?? new KubeRequestCounter();
    const base = (k8s.KubeConfig.prototype as unknown as { createDispatcher?: CreateDispatcher })
      .createDispatcher;
    if (typeof base !== 'function') {
      throw new WinfleetError(
        'WF_TERMINAL',
        '@kubernetes/client-node has no KubeConfig.createDispatcher: the version in use does not match the one winfleet was built against',
      );
    }
    // A private method of KubeConfig: replaced on the instance, as TypeScript does not let a
    // subclass declare it.
    const createDispatcher: CreateDispatcher = (cluster, agentOptions) =>
      this.#pool(cluster, agentOptions, () => base.call(this, cluster, agentOptions));
    Object.defineProperty(this, 'createDispatcher', { value: createDispatcher });
  }

  #pool(
    cluster: k8s.Cluster | null,
    options: AgentOptions,
    build: () => Dispatcher | undefined,
  ): Dispatcher {
    const key = `${cluster?.name ?? ''}\n${cluster?.server ?? ''}\n${this.getCurrentUser()?.name ?? ''}`;
    const cached = this.#pools.get(key);
    if (cached && samePoolOptions(cached.options, options)) return cached.dispatcher;
    // Without TLS options client-node leaves fetch's global dispatcher; winfleet counts those too.
    const agent = build() ?? new Agent();
    const dispatcher = agent.compose(
      countingInterceptor(this.userAgent, (verb, resource, code) =>
        this.requests.count(verb, resource, code),
      ),
    );
    this.#pools.set(key, { options: { ...options }, dispatcher });
    // Requests (and watches) still open on the old pool finish on it; it closes after them.
    if (cached) cached.dispatcher.close().catch(() => {});
    return dispatcher;
  }

  /**
   * For a request made with this kubeconfig's options outside client-node (node:https): its
   * User-Agent header, and `done` to count it with its status (undefined: no response).
   */
  outsideRequest(method: string, path: string) {
    const { verb, resource } = requestKind(method, path);
    return {
      headers: { 'user-agent': this.userAgent },
      done: (status: number | undefined) =>
        this.requests.count(verb, resource, status === undefined ? 'error' : String(status)),
    };
  }

  /** Closes the connection pools (requests in flight finish first). */
  async close(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((p) => p.dispatcher.close().catch(() => {})));
  }
}
