/**
 * A client of a Node process's inspector (started with --inspect=127.0.0.1:PORT), for the
 * benchmarks: a CPU profile of a chosen window, the process's GC pauses over it (a
 * PerformanceObserver installed in the process), and a heap snapshot, without stopping or
 * restarting the process. Over Node's own WebSocket client.
 */

import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { waitFor } from '../src/kube/wait-for.ts';

export interface GcPause {
  /** ms since the process's timeOrigin. */
  start: number;
  duration: number;
  /** minor (scavenge), major (mark-compact), incremental, weakcb. */
  kind: string;
}

export interface Inspector {
  send<T = unknown>(method: string, params?: Record<string, unknown>): Promise<T>;
  /** Evaluates `expression` in the process and returns its value (JSON-able). */
  evaluate<T>(expression: string): Promise<T>;
  /** Starts recording GC pauses in the process (kept in globalThis.__benchGc). */
  recordGc(): Promise<void>;
  /** The GC pauses since recordGc(), and the process's performance.now() at the start. */
  gcPauses(): Promise<GcPause[]>;
  /** The process's performance.now(). */
  now(): Promise<number>;
  /**
   * Live Timeout objects in the process (after a collection, the timers still armed or still
   * referenced), unref'd ones included, which process.getActiveResourcesInfo() leaves out.
   */
  countTimers(): Promise<number>;
  /** Writes a heap snapshot to `file`. */
  heapSnapshot(file: string): Promise<void>;
  close(): void;
}

const gcKinds: Record<number, string> = { 1: 'minor', 2: 'major', 4: 'incremental', 8: 'weakcb' };

/** Connects to the inspector listening on 127.0.0.1:`port`. */
export async function connectInspector(port: number): Promise<Inspector> {
  const targets = await waitFor(
    async () =>
      (await fetch(`http://127.0.0.1:${port}/json/list`).then(
        (r) => r.json() as Promise<{ webSocketDebuggerUrl: string }[]>,
        () => undefined,
      )) || undefined,
    { description: 'the inspector', timeoutMs: 60_000 },
  );
  const ws = new WebSocket(targets[0]!.webSocketDebuggerUrl);
  await once(ws as unknown as EventTarget, 'open');
  let next = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  const listeners = new Map<string, (params: Record<string, unknown>) => void>();
  ws.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as {
      id?: number;
      result?: unknown;
      error?: { message: string };
      method?: string;
      params?: Record<string, unknown>;
    };
    if (message.id !== undefined) {
      const waiter = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) waiter?.reject(new Error(message.error.message));
      else waiter?.resolve(message.result);
    } else if (message.method) {
      listeners.get(message.method)?.(message.params ?? {});
    }
  });
  const send = <T>(method: string, params: Record<string, unknown> = {}): Promise<T> =>
    new Promise((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  const evaluate = async <T>(expression: string): Promise<T> => {
    const answer = await send<{ result: { value: T }; exceptionDetails?: { text: string } }>(
      'Runtime.evaluate',
      { expression, returnByValue: true },
    );
    if (answer.exceptionDetails) throw new Error(answer.exceptionDetails.text);
    return answer.result.value;
  };
  return {
    send,
    evaluate,
    async recordGc() {
      await evaluate(`(() => {
        globalThis.__benchGc?.observer.disconnect();
        const pauses = [];
        const observer = new PerformanceObserver((list) => {
          for (const e of list.getEntries()) pauses.push([e.startTime, e.duration, e.detail?.kind ?? 0]);
        });
        observer.observe({ entryTypes: ['gc'] });
        globalThis.__benchGc = { observer, pauses };
      })()`);
    },
    async gcPauses() {
      const raw = await evaluate<[number, number, number][]>(
        'globalThis.__benchGc ? globalThis.__benchGc.pauses : []',
      );
      return raw.map(([start, duration, kind]) => ({
        start,
        duration,
        kind: gcKinds[kind] ?? String(kind),
      }));
    },
    now: () => evaluate<number>('performance.now()'),
    async countTimers() {
      const proto = await send<{ result: { objectId: string } }>('Runtime.evaluate', {
        expression:
          '(() => { const t = setTimeout(() => {}, 1 << 30); clearTimeout(t); return Object.getPrototypeOf(t); })()',
      });
      const found = await send<{ objects: { objectId: string } }>('Runtime.queryObjects', {
        prototypeObjectId: proto.result.objectId,
      });
      const length = await send<{ result: { value: number } }>('Runtime.callFunctionOn', {
        objectId: found.objects.objectId,
        functionDeclaration:
          'function () { return this.filter((t) => t._idleTimeout > 0 && !t._destroyed).length; }',
        returnByValue: true,
      });
      await send('Runtime.releaseObjectGroup', { objectGroup: '' }).catch(() => {});
      return length.result.value;
    },
    async heapSnapshot(file) {
      const out = createWriteStream(file);
      listeners.set('HeapProfiler.addHeapSnapshotChunk', (params) => {
        out.write(String(params.chunk));
      });
      await send('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
      listeners.delete('HeapProfiler.addHeapSnapshotChunk');
      out.end();
      await once(out, 'finish');
    },
    close: () => ws.close(),
  };
}

/** GC pauses summed by kind: count, total and longest, in ms. */
export function summarizeGc(pauses: readonly GcPause[]): string {
  const byKind = new Map<string, { n: number; total: number; max: number }>();
  for (const p of pauses) {
    const s = byKind.get(p.kind) ?? { n: 0, total: 0, max: 0 };
    s.n++;
    s.total += p.duration;
    s.max = Math.max(s.max, p.duration);
    byKind.set(p.kind, s);
  }
  if (byKind.size === 0) return 'none';
  return [...byKind]
    .map(([k, s]) => `${k} ${s.n}× ${s.total.toFixed(0)} ms (max ${s.max.toFixed(1)})`)
    .join(', ');
}
