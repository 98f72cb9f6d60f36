/**
 * Reaching the test cluster's loopback API server from inside network namespaces, without
 * touching the machine's own namespace: the test process listens on a unix socket and bridges
 * each connection to the API server's port on 127.0.0.1; in each namespace that needs the API,
 * api-relay-program.ts listens on 127.0.0.1:6443 and forwards to that socket. Programs in the
 * namespace use https://127.0.0.1:6443 with the cluster's CA: the API server's certificate is
 * valid for 127.0.0.1 (sim/cluster/cluster-pki.ts).
 */
import { writeFile } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { ComponentProcess } from '../cluster/component-process.ts';
import { renderKubeconfig } from '../cluster/kubeconfig.ts';
import { startInNetns, waitForLogLine } from './netns-process.ts';

const relayProgram = fileURLToPath(new URL('./api-relay-program.ts', import.meta.url));

/** The port the relay listens on inside each namespace. */
export const inNetnsApiPort = 6443;
/** The API server's URL as seen from inside a namespace with a relay. */
export const inNetnsApiServer = `https://127.0.0.1:${inNetnsApiPort}`;

export interface ApiRelayOptions {
  /** The API server's port on 127.0.0.1. */
  apiServerPort: number;
  /** Where the unix socket is made (inside a directory the test owns). */
  socketPath: string;
  /** Where the in-namespace relays write their logs. */
  logDir: string;
}

/** The test-process half, and the in-namespace relays started through it. */
export class ApiRelay {
  readonly socketPath: string;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #relays = new Map<string, ComponentProcess>();
  readonly #logDir: string;

  private constructor(server: Server, options: ApiRelayOptions) {
    this.#server = server;
    this.socketPath = options.socketPath;
    this.#logDir = options.logDir;
  }

  /** Listens on the unix socket, bridging each connection to 127.0.0.1:apiServerPort. */
  static async start(options: ApiRelayOptions): Promise<ApiRelay> {
    const server = createServer();
    const relay = new ApiRelay(server, options);
    server.on('connection', (inner) => {
      const outer = createConnection(options.apiServerPort, '127.0.0.1');
      relay.#sockets.add(inner);
      relay.#sockets.add(outer);
      const close = () => {
        inner.destroy();
        outer.destroy();
        relay.#sockets.delete(inner);
        relay.#sockets.delete(outer);
      };
      inner.on('error', close).on('close', close);
      outer.on('error', close).on('close', close);
      inner.pipe(outer);
      outer.pipe(inner);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // A relay that is left does not keep the test process alive.
    server.unref();
    return relay;
  }

  /**
   * Starts a relay in `netns` (its loopback must be up, as createNetns leaves it) and resolves
   * once it listens; the namespace then reaches the API server at inNetnsApiServer.
   */
  async enter(netns: string): Promise<string> {
    if (this.#relays.has(netns)) return inNetnsApiServer;
    const proc = startInNetns({
      netns,
      name: `api-relay in ${netns}`,
      file: process.execPath,
      args: [relayProgram, '--port', String(inNetnsApiPort), '--socket', this.socketPath],
      logFile: `${this.#logDir}/api-relay-${netns}.log`,
    });
    this.#relays.set(netns, proc);
    await waitForLogLine(proc, /^relay listening on /, {
      description: 'relay listening',
      timeoutMs: 15_000,
    });
    return inNetnsApiServer;
  }

  /** Stops the relays and the socket's server, and drops open connections. */
  async stop(): Promise<void> {
    await Promise.all([...this.#relays.values()].map((p) => p.stop(2000)));
    this.#relays.clear();
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** Kills the relays at once (from an exit hook). */
  killNow(): void {
    for (const p of this.#relays.values()) p.killNow();
  }
}

export interface InNetnsKubeconfigOptions {
  path: string;
  /** The cluster's CA file. */
  caFile: string;
  user: string;
  token?: string;
  clientCertFile?: string;
  clientKeyFile?: string;
}

/** Writes a kubeconfig (mode 0600) that reaches the API server through a namespace's relay. */
export async function writeInNetnsKubeconfig(options: InNetnsKubeconfigOptions): Promise<string> {
  await writeFile(
    options.path,
    renderKubeconfig({
      server: inNetnsApiServer,
      caFile: options.caFile,
      user: options.user,
      ...(options.token ? { token: options.token } : {}),
      ...(options.clientCertFile ? { clientCertFile: options.clientCertFile } : {}),
      ...(options.clientKeyFile ? { clientKeyFile: options.clientKeyFile } : {}),
    }),
    { mode: 0o600 },
  );
  return options.path;
}
