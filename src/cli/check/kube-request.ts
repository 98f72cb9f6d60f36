/**
 * One request to the API server with the kubeconfig's credentials and extra headers (the
 * client library's impersonation sets a user but no group, and a node is a user in the group
 * system:nodes). Bounded by a timeout; the body is read up to 1 MiB.
 */

import http from 'node:http';
import https from 'node:https';
import type * as k8s from '@kubernetes/client-node';
import { WinfleetError } from '../../errors/catalog.ts';
import { outsideRequest } from '../../kube/winfleet-kube-config.ts';

export interface KubeResponse {
  status: number;
  body: string;
  date?: string;
}

const maxBody = 1024 * 1024;

export async function kubeRequest(
  kc: k8s.KubeConfig,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<KubeResponse> {
  const server = kc.getCurrentCluster()?.server;
  if (!server)
    throw new WinfleetError(
      'WF_KUBECONFIG_INVALID',
      'the kubeconfig names no cluster server; pass --kubeconfig FILE or --context NAME',
    );
  const url = new URL(path, server);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const request: https.RequestOptions = {
    method,
    timeout: options.timeoutMs ?? 15_000,
    agent: false,
    headers: {
      accept: 'application/json',
      ...(payload ? { 'content-type': 'application/json' } : {}),
    },
  };
  await kc.applyToHTTPSOptions(request);
  const outside = outsideRequest(kc, method, path);
  request.headers = { ...request.headers, ...outside.headers, ...options.headers };
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https.request : http.request)(url, request, (res) => {
      outside.done(res.statusCode);
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= maxBody) chunks.push(chunk);
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString('utf8'),
          ...(res.headers.date ? { date: res.headers.date } : {}),
        }),
      );
      res.on('error', reject);
    });
    req.on('timeout', () =>
      req.destroy(
        new WinfleetError('WF_CLUSTER_UNREACHABLE', `${method} ${path} timed out`, {
          cause: { code: 'ETIMEDOUT', message: `${method} ${path} timed out` },
        }),
      ),
    );
    req.on('error', (error) => {
      outside.done(undefined);
      reject(error);
    });
    req.end(payload);
  });
}

/** The `message` of a Kubernetes Status body, or the body's start. */
export function statusMessage(body: string): string {
  try {
    const message = (JSON.parse(body) as { message?: unknown }).message;
    if (typeof message === 'string') return message;
  } catch {
    // not JSON
  }
  return body.slice(0, 200);
}
