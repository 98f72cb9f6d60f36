/**
 * Outbound network faults of one simulated host: connections its programs (the agent, the
 * kubelet stand-in, …) open to a given address and port fail as on a host whose firewall or
 * route keeps it from there — "this host cannot reach the registry" while the operator, and
 * every other host, still can.
 *
 * The simulated hosts' programs run in this Node process (sim-process.ts), so their sockets
 * are this process's sockets. Each process's program runs inside an AsyncLocalStorage context
 * naming its machine's faults (`runWithMachineNetwork`), which follows it through every await
 * and callback; `net.Socket.prototype.connect` is wrapped once (in this process only) to look
 * the context up and fail a connection to a blocked endpoint before any packet is sent, the
 * way Windows reports it (docs/fidelity-ledger.md):
 * - `refuse`: a TCP reset answers the SYN (a "reject" firewall rule, nothing listening):
 *   WSAECONNREFUSED, which Node reports as ECONNREFUSED, at once;
 * - `drop`: the SYN goes unanswered (a "block"/drop rule, no route): Windows gives up after its
 *   SYN retransmissions (TcpMaxConnectRetransmissions 2: 3 + 6 + 12 s) with WSAETIMEDOUT, Node's
 *   ETIMEDOUT; `dropAfterMs` shortens that for tests.
 * Code outside every machine's context (the operator in a test's process, the test itself) is
 * never affected.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import net from 'node:net';

/** One blocked destination, as the program dials it (an IP literal, or a name as given). */
export interface BlockedEndpoint {
  host: string;
  port: number;
  /** How the connection fails (default "refuse"). */
  mode?: 'refuse' | 'drop';
  /** For "drop": when the connect gives up, ms (default 21 000, as Windows). */
  dropAfterMs?: number;
}

/** Windows' connect timeout with its default SYN retransmissions: 3 + 6 + 12 s. */
export const windowsConnectTimeoutMs = 21_000;

/** The outbound faults of one machine; empty: it reaches everything it could. */
export class MachineNetworkFaults {
  #blocked: Required<BlockedEndpoint>[] = [];

  /** Blocks connections to `endpoint` from now on (replacing a block of the same endpoint). */
  block(endpoint: BlockedEndpoint): void {
    if (!Number.isInteger(endpoint.port) || endpoint.port < 1 || endpoint.port > 65535) {
      throw new RangeError(`Cannot block port ${endpoint.port}; give a TCP port from 1 to 65535`);
    }
    const entry = {
      host: endpoint.host.toLowerCase(),
      port: endpoint.port,
      mode: endpoint.mode ?? 'refuse',
      dropAfterMs: endpoint.dropAfterMs ?? windowsConnectTimeoutMs,
    };
    this.unblock(entry);
    this.#blocked.push(entry);
    installConnectHook();
  }

  /** Lifts the block of `endpoint`, or every block without one. */
  unblock(endpoint?: Pick<BlockedEndpoint, 'host' | 'port'>): void {
    this.#blocked = endpoint
      ? this.#blocked.filter(
          (b) => !(b.host === endpoint.host.toLowerCase() && b.port === endpoint.port),
        )
      : [];
  }

  /** The endpoints blocked now. */
  get blocked(): readonly Required<BlockedEndpoint>[] {
    return this.#blocked;
  }

  /** The block a connection to `host`:`port` meets, if any. */
  match(host: string, port: number): Required<BlockedEndpoint> | undefined {
    const name = host.toLowerCase();
    return this.#blocked.find((b) => b.port === port && b.host === name);
  }
}

const context = new AsyncLocalStorage<MachineNetworkFaults>();

/** Runs `work` (a program of the machine) so that its connections meet `faults`. */
export function runWithMachineNetwork<T>(faults: MachineNetworkFaults, work: () => T): T {
  return context.run(faults, work);
}

/** Where a `socket.connect(...)` call dials: options, a normalized array, or (port, host). */
function destination(args: unknown[]): { host: string; port: number } | undefined {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  if (typeof first === 'object' && first !== null) {
    const { host, hostname, port } = first as Record<string, unknown>;
    // No port: a named pipe or Unix socket (`path`), never a network endpoint.
    if (port === undefined || port === null) return undefined;
    const name = typeof host === 'string' ? host : typeof hostname === 'string' ? hostname : '';
    return { host: name || 'localhost', port: Number(port) };
  }
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    const host = typeof args[1] === 'string' ? args[1] : 'localhost';
    return { host, port: Number(first) };
  }
  return undefined;
}

/** The error Node raises for a failed connect, with Windows' cause mapped to Node's code. */
function connectError(code: 'ECONNREFUSED' | 'ETIMEDOUT', host: string, port: number): Error {
  const errno = code === 'ECONNREFUSED' ? -4078 : -4039; // libuv's codes on Windows
  return Object.assign(new Error(`connect ${code} ${host}:${port}`), {
    code,
    errno,
    syscall: 'connect',
    address: host,
    port,
  });
}

let installed = false;

/** Wraps net.Socket.prototype.connect once; see the module comment. */
function installConnectHook(): void {
  if (installed) return;
  installed = true;
  const original = net.Socket.prototype.connect;
  // biome-ignore lint/suspicious/noExplicitAny: the wrapper passes every overload through.
  net.Socket.prototype.connect = function connectUnlessBlocked(this: net.Socket, ...args: any[]) {
    const faults = context.getStore();
    const target = faults ? destination(args) : undefined;
    const block = target ? faults!.match(target.host, target.port) : undefined;
    if (!block || !target) return original.apply(this, args as never);
    // As a real connect in progress: what the program writes waits for it (and is lost).
    (this as { connecting: boolean }).connecting = true;
    const fail = (code: 'ECONNREFUSED' | 'ETIMEDOUT') => {
      if (!this.destroyed) this.destroy(connectError(code, target.host, target.port));
    };
    if (block.mode === 'refuse') process.nextTick(fail, 'ECONNREFUSED');
    else {
      const timer = setTimeout(fail, block.dropAfterMs, 'ETIMEDOUT');
      timer.unref();
      this.once('close', () => clearTimeout(timer));
    }
    return this;
  } as typeof net.Socket.prototype.connect;
}
