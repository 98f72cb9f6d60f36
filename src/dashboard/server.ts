/**
 * The dashboard's HTTP routes, served by the operator's status server (loopback by default:
 * reach it with `kubectl port-forward`). Read-only: GET and HEAD only.
 * - `/`: the page; `/dashboard.js`, `/dashboard.css`: its script and style (no external assets,
 *   for air-gapped clusters; a strict Content-Security-Policy allows nothing else);
 * - `/api/overview`: the overview as JSON (overview.ts);
 * - `/api/stream`: the overview as server-sent events, again after every change (live.ts);
 * - `/api/hosts/<namespace>/<name>`: one host's detail, with the Events about it and its Node
 *   read from the API server when asked (no Events cache: the detail is opened rarely).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as k8s from '@kubernetes/client-node';
import type { WindowsHost } from '../api/windows-host.ts';
import type { WindowsNodePool } from '../api/windows-node-pool.ts';
import type { Informer } from '../controller-runtime/informer.ts';
import { WinfleetError } from '../errors/catalog.ts';
import { httpStatus } from '../kube/client.ts';
import { isForbiddenStatus } from '../net/http-status.ts';
import { dashboardCss, dashboardHtml, dashboardScript } from './dashboard-page.ts';
import { OverviewBroadcaster, serveStream } from './live.ts';
import {
  buildHostDetail,
  buildOverview,
  detailEventLimit,
  hostPools,
  newestEvents,
  type Overview,
} from './overview.ts';

/** @package */
export interface DashboardCaches {
  hosts: Informer<WindowsHost>;
  nodes: Informer<k8s.V1Node>;
  pools: Informer<WindowsNodePool>;
  runtimeClasses: Informer<k8s.V1RuntimeClass>;
}

/**
 * Reads the Events about one object: the newest (at most detailEventLimit), newest first
 * (tests pass a fake).
 * @package
 */
export type EventLister = (
  namespace: string,
  kind: string,
  name: string,
) => Promise<k8s.CoreV1Event[]>;

/** One page of an Events list (CoreV1Api.listNamespacedEvent; tests pass a fake). */
export type EventPageLister = (request: {
  namespace: string;
  fieldSelector: string;
  limit: number;
  _continue?: string;
}) => Promise<k8s.CoreV1EventList>;

export interface Dashboard {
  /** Handles the request when it is the dashboard's; false otherwise. */
  route(req: IncomingMessage, res: ServerResponse): boolean | Promise<boolean>;
  broadcaster: OverviewBroadcaster<Overview>;
  /** Ends the open streams. */
  close(): void;
}

const securityHeaders = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
/** Events asked for per page. */
const eventPageSize = 250;
/**
 * The most Events read about one object. The API server lists them by name, not by time (the
 * kubelet names its Events <object>.<hex UnixNano>, so oldest first; winfleet's are named by a
 * hash): the newest can be on any page, so every page is read, up to this many, and sorted.
 * @package
 */
export const eventReadLimit = 1000;
const eventTimeoutMs = 5000;

/**
 * Lists the Events about one object page by page (`_continue`), up to eventReadLimit Events and
 * `timeoutMs` in all, and keeps the newest detailEventLimit, newest first.
 * @package
 */
export function pagedEventLister(
  listPage: EventPageLister,
  timeoutMs = eventTimeoutMs,
): EventLister {
  return async (namespace, kind, name) => {
    const fieldSelector = `involvedObject.kind=${kind},involvedObject.name=${name}`;
    let timer: NodeJS.Timeout | undefined;
    let expired = false;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        expired = true;
        reject(
          new WinfleetError('WF_TIMEOUT', `no answer from the API server in ${timeoutMs / 1000} s`),
        );
      }, timeoutMs);
    });
    const readAll = async () => {
      const items: k8s.CoreV1Event[] = [];
      let token: string | undefined;
      do {
        const page = await listPage({
          namespace,
          fieldSelector,
          limit: Math.min(eventPageSize, eventReadLimit - items.length),
          ...(token ? { _continue: token } : {}),
        });
        items.push(...page.items.slice(0, eventReadLimit - items.length));
        token = page.metadata?._continue || undefined;
      } while (token && items.length < eventReadLimit && !expired);
      return items;
    };
    try {
      return newestEvents(await Promise.race([readAll(), timeout]), detailEventLimit);
    } finally {
      clearTimeout(timer);
    }
  };
}

/** Lists Events through the API server (pagedEventLister). */
export function apiEventLister(kc: k8s.KubeConfig): EventLister {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  return pagedEventLister((request) => core.listNamespacedEvent(request));
}

function send(res: ServerResponse, status: number, type: string, body: string): true {
  res.writeHead(status, { 'content-type': type, ...securityHeaders });
  res.end(res.req?.method === 'HEAD' ? undefined : body);
  return true;
}

const sendJson = (res: ServerResponse, status: number, data: unknown) =>
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(data));

function eventsErrorText(error: unknown, namespace: string): string {
  const status = httpStatus(error);
  if (isForbiddenStatus(status))
    return `the operator may not list Events in namespace ${namespace}: give its ServiceAccount "list" on events there (the Helm chart's Role does)`;
  return `cannot read Events in namespace ${namespace}: ${(error as Error).message ?? String(error)}`;
}

/** The Events about a host and its Node; an error text instead when a list failed. */
async function eventsFor(
  listEvents: EventLister,
  host: WindowsHost,
): Promise<{ events: k8s.CoreV1Event[]; error?: string }> {
  const namespace = host.metadata.namespace ?? '';
  const lists: Promise<k8s.CoreV1Event[]>[] = [
    listEvents(namespace, 'WindowsHost', host.metadata.name).catch((e) => {
      throw eventsErrorText(e, namespace);
    }),
  ];
  const nodeName = host.status?.nodeName;
  // Events about cluster-scoped objects (the kubelet's, winfleet's) go to "default".
  if (nodeName)
    lists.push(
      listEvents('default', 'Node', nodeName).catch((e) => {
        throw eventsErrorText(e, 'default');
      }),
    );
  const results = await Promise.allSettled(lists);
  const events = results.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
  const errors = results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
  return { events, ...(errors.length ? { error: errors.join('; ') } : {}) };
}

/** The names a request's Host may give without any configuration: the loopback ones. */
export const loopbackHostNames: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

/**
 * Whether a request's Host header names the dashboard: one of the loopback names or `allowed`
 * (case-insensitive), with any port or none. The defence against DNS rebinding through
 * `kubectl port-forward`: a page of another site that rebinds its own name to 127.0.0.1 still
 * sends that name as Host, so the browser's same-origin read gets nothing. Parsed strictly: a
 * name or a bracketed IPv6 address, then an optional port; nothing else passes.
 * @package
 */
export function dashboardHostAllowed(
  host: string | undefined,
  allowed: readonly string[] = [],
): boolean {
  if (host === undefined) return false;
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::([0-9]{1,5}))?$/.exec(host);
  if (!match) return false;
  const name = match[1]!.toLowerCase();
  if (match[2] !== undefined && Number(match[2]) > 65535) return false;
  return [...loopbackHostNames, ...allowed].some((a) => a.toLowerCase() === name);
}

/** Whether the dashboard serves `path` (any other is left to the status server). */
function isDashboardPath(path: string): boolean {
  return (
    path === '/' ||
    path === '/index.html' ||
    path === '/dashboard.js' ||
    path === '/dashboard.css' ||
    path === '/api/overview' ||
    path === '/api/stream' ||
    path.startsWith('/api/hosts/')
  );
}

/** /api/hosts/<namespace>/<name>: the host's detail from the caches, with its Events. */
async function serveHostDetail(
  caches: DashboardCaches,
  listEvents: EventLister,
  namespace: string,
  name: string,
  res: ServerResponse,
): Promise<boolean> {
  if (!dnsLabel.test(namespace) || !dnsSubdomain.test(name))
    return sendJson(res, 400, {
      error: 'give /api/hosts/<namespace>/<name> with a Kubernetes namespace and object name',
    });
  const host = caches.hosts.get(`${namespace}/${name}`);
  if (!host)
    return sendJson(res, 404, {
      error: `no WindowsHost ${namespace}/${name} in the operator's cache (kubectl get windowshosts -n ${namespace})`,
    });
  const node = host.status?.nodeName ? caches.nodes.get(host.status.nodeName) : undefined;
  const { events, error } = await eventsFor(listEvents, host);
  // The pools as the overview's row has them, so the detail's host is that row.
  const pools = hostPools({ hosts: [host], pools: caches.pools.list() }).get(
    `${namespace}/${name}`,
  );
  return sendJson(res, 200, buildHostDetail(host, node, events, { eventsError: error, pools }));
}

/** The dashboard: its overview broadcaster fed by the caches' changes, and its routes. */
export function createDashboard(
  caches: DashboardCaches,
  listEvents: EventLister,
  options: {
    maxClients?: number;
    coalesceMs?: number;
    heartbeatMs?: number;
    /**
     * Host names (or addresses) besides the loopback ones a request may name in its Host
     * header (--dashboard-allowed-host); any other is answered 421.
     */
    allowedHosts?: readonly string[];
  } = {},
): Dashboard {
  const overview = () =>
    buildOverview({
      hosts: caches.hosts.list(),
      nodes: caches.nodes.list(),
      pools: caches.pools.list(),
      runtimeClasses: caches.runtimeClasses.list(),
    });
  const broadcaster = new OverviewBroadcaster<Overview>({ build: overview, ...options });
  // Registered once for the operator's life; each only marks the overview dirty.
  const changed = () => broadcaster.changed();
  for (const informer of [caches.hosts, caches.nodes, caches.pools, caches.runtimeClasses]) {
    const i = informer as Informer<k8s.KubernetesObject>;
    i.on('add', changed).on('update', changed).on('delete', changed);
  }

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (!isDashboardPath(path)) return false;
    if (!dashboardHostAllowed(req.headers.host, options.allowedHosts)) {
      // A name the dashboard does not answer to: most likely a rebound one (421 Misdirected).
      return send(
        res,
        421,
        'text/plain; charset=utf-8',
        `the dashboard answers only to localhost, 127.0.0.1 and [::1]${options.allowedHosts?.length ? ` and ${options.allowedHosts.join(', ')}` : ''}: open it through kubectl port-forward at http://127.0.0.1:<port>/, or give the operator --dashboard-allowed-host <name>\n`,
      );
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return send(res, 405, 'text/plain; charset=utf-8', 'the dashboard is read-only: use GET\n');
    }
    if (path === '/' || path === '/index.html')
      return send(res, 200, 'text/html; charset=utf-8', dashboardHtml);
    if (path === '/dashboard.js')
      return send(res, 200, 'text/javascript; charset=utf-8', dashboardScript);
    if (path === '/dashboard.css') return send(res, 200, 'text/css; charset=utf-8', dashboardCss);
    if (path === '/api/overview') return sendJson(res, 200, overview());
    if (path === '/api/stream') {
      serveStream(broadcaster, req, res);
      return true;
    }
    const detail = /^\/api\/hosts\/([^/]+)\/([^/]+)$/.exec(path);
    if (detail) return serveHostDetail(caches, listEvents, detail[1] ?? '', detail[2] ?? '', res);
    return sendJson(res, 404, {
      error: `no dashboard API at ${path}: give /api/hosts/<namespace>/<name>`,
    });
  };

  return { route, broadcaster, close: () => broadcaster.close() };
}
