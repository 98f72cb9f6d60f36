/** Polling a component's health endpoint until it answers 200 or the component dies. */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ComponentProcess } from './component-process.ts';

/** TLS material for a health probe. */
export interface ProbeTls {
  ca: string;
  cert?: string;
  key?: string;
}

/** GETs `url` once; resolves with status and body, rejects on network errors. */
export function probe(
  url: string,
  tls?: ProbeTls,
  timeoutMs = 2000,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const isHttps = url.startsWith('https:');
    const req = (isHttps ? httpsRequest : httpRequest)(
      url,
      { method: 'GET', timeout: timeoutMs, ...(isHttps ? tls : {}) },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`Timed out after ${timeoutMs}ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** Thrown when a component fails to become healthy; carries the tail of its log. */
export class ComponentStartError extends Error {
  readonly component: string;
  readonly logTail: string;
  constructor(component: string, reason: string, logTail: string) {
    super(
      `${component} did not become healthy: ${reason}\n--- last lines of ${component}'s log ---\n${logTail}`,
    );
    this.name = 'ComponentStartError';
    this.component = component;
    this.logTail = logTail;
  }
}

/** Waits until `url` answers 200, failing early if `component` exits. */
export async function waitHealthy(
  component: ComponentProcess,
  url: string,
  tls: ProbeTls | undefined,
  deadline: number,
): Promise<void> {
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (component.exited) {
      const code = await component.waitForExit();
      throw new ComponentStartError(
        component.name,
        `exited with code ${code}`,
        component.logTail(),
      );
    }
    try {
      const { status, body } = await probe(url, tls);
      if (status === 200) return;
      last = `HTTP ${status}: ${body.slice(0, 300)}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await sleep(150);
  }
  throw new ComponentStartError(
    component.name,
    `${url} still failing (${last})`,
    component.logTail(),
  );
}
