/**
 * The operator's plain HTTP endpoints: the status server (/healthz, /readyz, /metrics, /config),
 * which probes and Prometheus reach on the pod's address, and the dashboard's own listener,
 * on loopback by default (kubectl port-forward reaches it). Both are one small server with
 * routes.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '../log/logger.ts';

/** @package */
export interface StatusServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

export type ExtraRoute = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

/** A plain HTTP server answering `routes` in order, 404 for what none takes. */
export async function startHttpServer(options: {
  host: string;
  port: number;
  log: Logger;
  routes: ExtraRoute[];
}): Promise<StatusServer> {
  const server = createServer((req, res) => {
    void (async () => {
      try {
        for (const route of options.routes) if (await route(req, res)) return;
        end(res, 404, 'not found');
      } catch (error) {
        options.log.error('status request failed', { url: req.url, error });
        end(res, 500, 'internal error');
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** /healthz, /readyz and /metrics, then `routes`. */
export function startStatusServer(options: {
  host: string;
  port: number;
  registry: Registry;
  ready: () => boolean;
  log: Logger;
  routes?: ExtraRoute[];
}): Promise<StatusServer> {
  const builtIn: ExtraRoute = async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') end(res, 200, 'ok');
    else if (path === '/readyz') options.ready() ? end(res, 200, 'ok') : end(res, 503, 'not ready');
    else if (path === '/metrics')
      end(res, 200, await options.registry.metrics(), options.registry.contentType);
    else return false;
    return true;
  };
  return startHttpServer({
    host: options.host,
    port: options.port,
    log: options.log,
    routes: [builtIn, ...(options.routes ?? [])],
  });
}

function end(
  res: ServerResponse,
  status: number,
  body: string,
  type = 'text/plain; charset=utf-8',
): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': type });
  res.end(body);
}
