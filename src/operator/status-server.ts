/** The operator's plain HTTP endpoint: /healthz, /readyz, /metrics (and later the dashboard). */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '../log/logger.ts';

export interface StatusServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

export type ExtraRoute = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

export async function startStatusServer(options: {
  host: string;
  port: number;
  registry: Registry;
  ready: () => boolean;
  log: Logger;
  routes?: ExtraRoute[];
}): Promise<StatusServer> {
  const server = createServer((req, res) => {
    void (async () => {
      try {
        const path = (req.url ?? '/').split('?')[0];
        if (path === '/healthz') return end(res, 200, 'ok');
        if (path === '/readyz')
          return options.ready() ? end(res, 200, 'ok') : end(res, 503, 'not ready');
        if (path === '/metrics')
          return end(res, 200, await options.registry.metrics(), options.registry.contentType);
        for (const route of options.routes ?? []) if (await route(req, res)) return;
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
