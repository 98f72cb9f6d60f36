/**
 * A GET on the host's loopback interface, for the node services' health endpoints (the
 * kubelet's :10248/healthz, kube-proxy's :10256/healthz): plain HTTP to 127.0.0.1 only, with a
 * timeout, and at most 1 KiB of the body read.
 */
import { request } from 'node:http';
import { WinfleetError } from '../errors/catalog.ts';

export const loopbackTimeoutMs = 5000;
const maxBody = 1024;

export function loopbackHttpGet(
  port: number,
  path: string,
  timeoutMs = loopbackTimeoutMs,
): Promise<{ status: number; body: string }> {
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    return Promise.reject(
      new WinfleetError('WF_INVARIANT', `Cannot probe port ${port}: use a port from 1 to 65535`),
    );
  if (!/^\/[A-Za-z0-9/_.-]*$/.test(path))
    return Promise.reject(
      new WinfleetError(
        'WF_INVARIANT',
        `Cannot probe path ${JSON.stringify(path)}: use a plain path like /healthz`,
      ),
    );
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'GET', timeout: timeoutMs, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
          if (body.length >= maxBody) {
            body = body.slice(0, maxBody);
            res.destroy();
            resolve({ status: res.statusCode ?? 0, body });
          }
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () =>
      req.destroy(
        new WinfleetError(
          'WF_TIMEOUT',
          `GET http://127.0.0.1:${port}${path} did not answer within ${timeoutMs} ms`,
        ),
      ),
    );
    req.on('error', reject);
    req.end();
  });
}
