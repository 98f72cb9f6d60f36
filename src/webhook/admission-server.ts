/**
 * The HTTPS server the API server calls: admission routes, /healthz, /readyz and /metrics.
 * Its certificate can be replaced while it runs (setSecureContext): connections already open
 * keep their session, new ones get the new certificate, no request is dropped. A handler that
 * throws never takes the server down: the request is allowed with a warning (the cluster is
 * never blocked by a winfleet bug) and the error is logged.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log/logger.ts';
import {
  type AdmissionDecision,
  type AdmissionRequest,
  admissionInputError,
  admissionInputStatus,
  admissionResponse,
  maxAdmissionBodyBytes,
  parseAdmissionReview,
} from './admission-review.ts';
import type { WebhookMetrics } from './metrics.ts';

export type AdmissionHandler = (request: AdmissionRequest) => Promise<AdmissionDecision>;

export interface AdmissionServerOptions {
  cert: string;
  key: string;
  /** Path → handler, e.g. { '/mutate/pods': …, '/validate/pods': … }. */
  routes: Record<string, { name: 'mutate' | 'validate' | string; handler: AdmissionHandler }>;
  /** /readyz answers 200 only when this returns true. */
  ready?: () => boolean;
  metrics?: WebhookMetrics;
  log: Logger;
}

export interface AdmissionServer {
  server: Server;
  listen(port: number, host?: string): Promise<number>;
  /** Swaps the serving certificate without dropping connections. */
  updateCertificate(cert: string, key: string): void;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > maxAdmissionBodyBytes) {
      reject(
        admissionInputError(
          `Request body of ${declared} bytes is over the ${maxAdmissionBodyBytes}-byte limit`,
          413,
        ),
      );
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxAdmissionBodyBytes) {
        reject(
          admissionInputError(`Request body is over the ${maxAdmissionBodyBytes}-byte limit`, 413),
        );
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: string, type = 'application/json'): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function decisionLabel(decision: AdmissionDecision): string {
  if (!decision.allowed) return 'denied';
  return decision.patch && decision.patch.length > 0 ? 'patched' : 'allowed';
}

/** Creates the admission HTTPS server (not yet listening). */
export function createAdmissionServer(options: AdmissionServerOptions): AdmissionServer {
  const server = createServer(
    { cert: options.cert, key: options.key, minVersion: 'TLSv1.2' },
    (req, res) => {
      void handleRequest(options, req, res);
    },
  );
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.on('tlsClientError', () => {});
  return {
    server,
    listen(port, host = '127.0.0.1') {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      });
    },
    updateCertificate(cert, key) {
      server.setSecureContext({ cert, key, minVersion: 'TLSv1.2' });
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** Answers one request: the probes and /metrics, else the admission route of its path. */
async function handleRequest(
  options: AdmissionServerOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { metrics } = options;
  const path = (req.url ?? '/').split('?')[0]!;
  if (req.method === 'GET' && path === '/healthz') return send(res, 200, 'ok', 'text/plain');
  if (req.method === 'GET' && path === '/readyz') {
    const ready = options.ready?.() ?? true;
    return send(res, ready ? 200 : 503, ready ? 'ok' : 'not ready', 'text/plain');
  }
  if (req.method === 'GET' && path === '/metrics' && metrics) {
    return send(res, 200, await metrics.registry.metrics(), metrics.registry.contentType);
  }
  const route = options.routes[path];
  if (!route) return send(res, 404, JSON.stringify({ error: `No route ${path}` }));
  if (req.method !== 'POST')
    return send(res, 405, JSON.stringify({ error: `Use POST for ${path}` }));
  return admit(options, path, route, req, res);
}

/** Counts an admission's decision and observes its latency since `started`. */
function observeAdmission(
  metrics: WebhookMetrics | undefined,
  webhook: string,
  started: bigint,
  decision: string,
): void {
  metrics?.admissions.inc({ webhook, decision });
  metrics?.latency.observe({ webhook }, Number(process.hrtime.bigint() - started) / 1e9);
}

/**
 * One AdmissionReview: read and parsed strictly (a bad one answered 4xx), then decided by the
 * route's handler; a handler that throws allows the request with a warning.
 */
async function admit(
  options: AdmissionServerOptions,
  path: string,
  route: AdmissionServerOptions['routes'][string],
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { log, metrics } = options;
  const started = process.hrtime.bigint();
  let request: AdmissionRequest;
  try {
    const type = req.headers['content-type'] ?? '';
    if (!type.startsWith('application/json')) {
      throw admissionInputError(`Content-Type must be application/json, got "${type}"`, 415);
    }
    request = parseAdmissionReview(await readBody(req));
  } catch (error) {
    const status = admissionInputStatus(error);
    observeAdmission(metrics, route.name, started, 'bad_request');
    return send(res, status, JSON.stringify({ error: (error as Error).message }));
  }
  let decision: AdmissionDecision;
  try {
    decision = await route.handler(request);
    observeAdmission(metrics, route.name, started, decisionLabel(decision));
  } catch (error) {
    log.error('admission handler failed; allowing the request', {
      route: path,
      uid: request.uid,
      error,
    });
    decision = {
      allowed: true,
      warnings: [`winfleet ${route.name} webhook error: ${(error as Error).message}`],
    };
    observeAdmission(metrics, route.name, started, 'error');
  }
  send(res, 200, admissionResponse(request.uid, decision));
}
