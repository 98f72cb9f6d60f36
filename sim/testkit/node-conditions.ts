/**
 * A Node's conditions in tests: read one, wait for one to reach a status (returning the
 * seconds it took), and print a measured time as a test diagnostic (a measurement, never an
 * assertion).
 */
import type { TestContext } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { waitFor } from '../../src/kube/wait-for.ts';

export function nodeConditions(core: k8s.CoreV1Api, nodeName: string, t: TestContext) {
  const condition = async (type: string) =>
    (await core.readNode({ name: nodeName })).status?.conditions?.find((c) => c.type === type);
  /** Waits for the condition's status; returns it and the seconds it took. */
  const until = async (type: string, status: string, timeoutMs = 60_000) => {
    const started = Date.now();
    const c = await waitFor(
      async () => {
        const found = await condition(type);
        return found?.status === status ? found : undefined;
      },
      { description: `${type}=${status} on ${nodeName}`, timeoutMs, intervalMs: 200 },
    );
    return { c, seconds: (Date.now() - started) / 1000 };
  };
  const measured = (what: string, seconds: number) =>
    t.diagnostic(`${what}: ${seconds.toFixed(1)} s`);
  return { condition, until, measured };
}
