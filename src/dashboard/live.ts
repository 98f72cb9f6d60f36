/**
 * Live updates for the dashboard: server-sent events (text/event-stream) carrying the overview.
 * A client gets the overview when it connects and again after the caches change: changes are
 * coalesced (at most one overview per `coalesceMs`), and an overview equal to the last one sent
 * is not sent again (Node heartbeats change resourceVersions, not what the page shows). A comment
 * line every `heartbeatMs` keeps proxies (kubectl port-forward, load balancers) from closing an
 * idle stream. At most `maxClients` streams are open at once; more get 503 with Retry-After.
 *
 * The broadcaster holds no listener per client: the caches' change handlers are registered once
 * and only mark the overview dirty; a client that goes is dropped from the set, and the timers
 * stop when the last one does.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Where the stream writes: an HTTP response, or a test's fake. */
export interface StreamClient {
  write(chunk: string): unknown;
  end(): void;
  /**
   * Closes the connection at once, dropping what is queued: a client too slow to read is
   * destroyed, not ended (end() waits for the queue to be sent, forever for a client that
   * never reads, and the connection would hold its memory outside the maxClients count).
   */
  destroy(): unknown;
  /** Bytes queued and not yet sent: a client too slow to read is dropped. */
  readonly writableLength?: number;
}

export interface BroadcasterOptions<T> {
  /** The current overview. */
  build(): T;
  /** At most one overview per this many ms after a change (default 250). */
  coalesceMs?: number;
  /** A comment line this often while clients are connected (default 15 s). */
  heartbeatMs?: number;
  /** Open streams at most (default 20). */
  maxClients?: number;
  /** A client with more than this many bytes unsent is dropped (default 4 MiB). */
  maxBufferedBytes?: number;
  /** The timer functions (tests pass fakes); default the global ones. */
  timers?: {
    setTimeout(fn: () => void, ms: number): unknown;
    clearTimeout(handle: unknown): void;
    setInterval(fn: () => void, ms: number): unknown;
    clearInterval(handle: unknown): void;
  };
}

const defaultMaxClients = 20;

const globalTimers = {
  setTimeout: (fn: () => void, ms: number) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout: (h: unknown) => clearTimeout(h as NodeJS.Timeout),
  setInterval: (fn: () => void, ms: number) => {
    const t = setInterval(fn, ms);
    t.unref();
    return t;
  },
  clearInterval: (h: unknown) => clearInterval(h as NodeJS.Timeout),
};

/** One SSE frame: `event: name` and the JSON on one data line (JSON has no raw newlines). */
function sseFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** @package */
export class OverviewBroadcaster<T extends { generatedAt?: string }> {
  readonly #options: BroadcasterOptions<T>;
  readonly #timers: NonNullable<BroadcasterOptions<T>['timers']>;
  readonly #clients = new Set<StreamClient>();
  #pending: unknown;
  #heartbeat: unknown;
  /** The last overview sent, without its generatedAt, to skip sending the same again. */
  #lastSent: string | undefined;
  #closed = false;
  /** Overviews sent to all clients since start (tests read it). */
  broadcasts = 0;

  constructor(options: BroadcasterOptions<T>) {
    this.#options = options;
    this.#timers = options.timers ?? globalTimers;
  }

  get clientCount(): number {
    return this.#clients.size;
  }

  get maxClients(): number {
    return this.#options.maxClients ?? defaultMaxClients;
  }

  /**
   * Adds a client and sends it the current overview; false (nothing written) when the limit is
   * reached or the broadcaster is closed. The caller calls remove() when the client goes.
   */
  add(client: StreamClient): boolean {
    if (this.#closed || this.#clients.size >= this.maxClients) return false;
    this.#clients.add(client);
    const overview = this.#options.build();
    client.write(`retry: 3000\n${sseFrame('overview', overview)}`);
    if (this.#clients.size === 1) {
      this.#lastSent = comparable(overview);
      this.#heartbeat = this.#timers.setInterval(
        () => this.#beat(),
        this.#options.heartbeatMs ?? 15_000,
      );
    }
    return true;
  }

  remove(client: StreamClient): void {
    if (!this.#clients.delete(client)) return;
    if (this.#clients.size === 0) this.#idle();
  }

  /** The caches changed: an overview goes out within coalesceMs, once for any number of changes. */
  changed(): void {
    if (this.#closed || this.#clients.size === 0 || this.#pending !== undefined) return;
    this.#pending = this.#timers.setTimeout(() => {
      this.#pending = undefined;
      this.#flush();
    }, this.#options.coalesceMs ?? 250);
  }

  /** Ends every stream and refuses new ones. */
  close(): void {
    this.#closed = true;
    for (const client of [...this.#clients]) {
      this.#clients.delete(client);
      safely(() => client.end());
    }
    this.#idle();
  }

  #flush(): void {
    if (this.#clients.size === 0) return;
    const overview = this.#options.build();
    const same = comparable(overview);
    if (same === this.#lastSent) return;
    this.#lastSent = same;
    this.broadcasts++;
    this.#send(sseFrame('overview', overview));
  }

  #beat(): void {
    this.#send(': keep-alive\n\n');
  }

  #send(chunk: string): void {
    const limit = this.#options.maxBufferedBytes ?? 4 * 1024 * 1024;
    for (const client of [...this.#clients]) {
      if ((client.writableLength ?? 0) > limit) {
        this.remove(client);
        safely(() => client.destroy());
        continue;
      }
      safely(() => client.write(chunk));
    }
  }

  #idle(): void {
    if (this.#pending !== undefined) this.#timers.clearTimeout(this.#pending);
    if (this.#heartbeat !== undefined) this.#timers.clearInterval(this.#heartbeat);
    this.#pending = undefined;
    this.#heartbeat = undefined;
    this.#lastSent = undefined;
  }
}

function comparable(overview: { generatedAt?: string }): string {
  return JSON.stringify({ ...overview, generatedAt: undefined });
}

function safely(fn: () => unknown): void {
  try {
    fn();
  } catch {
    // A client that went away mid-write: its 'close' removes it.
  }
}

/**
 * Serves one GET /api/stream: an event stream, or 503 when the client limit is reached. A HEAD
 * gets the stream's headers and an end: it takes no slot.
 * @package
 */
export function serveStream<T extends { generatedAt?: string }>(
  broadcaster: OverviewBroadcaster<T>,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  if (broadcaster.clientCount >= broadcaster.maxClients) {
    res.writeHead(503, {
      'content-type': 'text/plain; charset=utf-8',
      'retry-after': '10',
      'cache-control': 'no-store',
    });
    res.end(
      `too many dashboard streams open (at most ${broadcaster.maxClients}): close other dashboard tabs; the page retries by itself\n`,
    );
    return;
  }
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    // Proxies must not buffer the stream.
    'x-accel-buffering': 'no',
  });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  res.flushHeaders();
  req.socket.setNoDelay(true);
  req.socket.setKeepAlive(true);
  const client: StreamClient = res;
  const gone = () => broadcaster.remove(client);
  res.once('close', gone);
  if (!broadcaster.add(client)) {
    res.off('close', gone);
    res.end();
  }
}
