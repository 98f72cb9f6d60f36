/**
 * The lab's fault control channel: a small HTTP server on 127.0.0.1 (a random port) through
 * which `npm run lab:fault` injects faults into the running lab's simulated hosts. Only a
 * caller holding the lab's random token gets in (`Authorization: Bearer <token>`); the lab
 * writes the URL and token to a control file readable by its owner only (mode 0600).
 *
 *   GET  /v1/hosts   the hosts, their services and the faults injected since the last clear
 *   POST /v1/faults  {"host": "simwin-10", "fault": "service-down", "service": "kubelet"}
 *
 * Anything else is refused: no token or a wrong one (401, before anything else is looked at),
 * another Host header (421), another path (404) or method (405), a body that is not JSON
 * (415/400) or over 4 KiB (413), a host that is not the lab's, a fault or argument the request
 * parser refuses (400, naming the field and the fix).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SimulatedHosts } from '../hosts/fleet.ts';
import {
  describeFault,
  type FaultRequest,
  FaultRequestError,
  parseFaultRequest,
} from './fault-requests.ts';

/** What the control channel calls on a host's fault knobs (sim/hosts/faults.ts HostFaults). */
export interface LabFaults {
  crashService(name: string, options?: { stayDown?: boolean }): unknown;
  crashLoop(name: string): unknown;
  deleteHnsNetwork(name?: string): unknown;
  skewClock(offsetMs: number): unknown;
  diskFull: boolean;
  setUnreachable(on: boolean): unknown;
  /** Whether setUnreachable(true) holds the host down. */
  readonly unreachable?: boolean;
  clear(): unknown;
}

/** One host the channel can reach: its name, its services' states and its fault knobs. */
export interface LabFaultHost {
  name: string;
  /** Installed services and their states (e.g. Running, Stopped). */
  services(): { name: string; state: string }[];
  faults: LabFaults;
}

/** What `GET /v1/hosts` answers per host. */
export interface HostFaultState {
  name: string;
  services: { name: string; state: string }[];
  diskFull: boolean;
  unreachable: boolean;
  /** Faults injected through this channel since the last `clear`, oldest first. */
  injected: { fault: string; at: string }[];
}

/** What the lab writes to its control file, and the CLI reads. */
export interface FaultControlFile {
  url: string;
  token: string;
  /** The lab's admin kubeconfig (what the CLI tells people to export). */
  kubeconfig?: string;
  /** The operator's namespace, where the WindowsHosts are. */
  namespace?: string;
  /** The operator's dashboard. */
  dashboard?: string;
}

export interface FaultControl {
  url: string;
  token: string;
  stop(): Promise<void>;
}

/** Largest request body accepted, bytes. */
export const maxBodyBytes = 4096;

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Where a lab keeps its control file: in the lab's directory when one was named
 * (WINFLEET_LAB_DIR), else in the repository's .cache/lab, where `npm run lab:fault` looks.
 */
export function faultControlFilePath(labDir?: string): string {
  return join(labDir || join(repoRoot, '.cache', 'lab'), 'fault-control.json');
}

/**
 * The `npm run lab:fault` command for a lab, with `--lab-dir` when it has its own directory
 * (single-quoted for the shell when the path needs it).
 */
export function faultCommandFor(labDir?: string): string {
  if (!labDir) return 'npm run lab:fault --';
  const quoted = /^[\w./-]+$/.test(labDir) ? labDir : `'${labDir.replaceAll("'", `'\\''`)}'`;
  return `npm run lab:fault -- --lab-dir ${quoted}`;
}

/** The channel's hosts over the lab's simulated hosts. */
export function labFaultHosts(fleet: SimulatedHosts): LabFaultHost[] {
  return fleet.hosts.map((host) => ({
    name: host.name,
    services: () =>
      host.machine.scm
        .names()
        .map((name) => ({ name, state: host.machine.scm.query(name)?.state ?? 'Unknown' })),
    faults: host.faults,
  }));
}

/** Starts the channel on 127.0.0.1 with a fresh random token. */
export async function startFaultControl(hosts: readonly LabFaultHost[]): Promise<FaultControl> {
  const token = randomBytes(32).toString('base64url');
  const tokenDigest = digest(token);
  const injected = new Map<string, { fault: string; at: string }[]>(
    hosts.map((h) => [h.name.toLowerCase(), []]),
  );
  let port = 0;
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const status =
        error instanceof HttpRefusal
          ? error.status
          : error instanceof FaultRequestError
            ? 400
            : 500;
      if (status === 500) console.error(`[lab] fault control: ${(error as Error).message}`);
      send(res, status, { error: (error as Error).message });
    });
  });
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  server.maxHeadersCount = 32;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!authorized(req.headers.authorization, tokenDigest)) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      throw new HttpRefusal(
        401,
        'Authorization: send "Bearer <token>" with the token from the lab’s fault-control.json (npm run lab:fault does)',
      );
    }
    if (req.headers.host !== `127.0.0.1:${port}`) {
      throw new HttpRefusal(421, `Host: address the lab as 127.0.0.1:${port}`);
    }
    const path = req.url;
    if (path === '/v1/hosts') {
      if (req.method !== 'GET') throw methodRefusal(res, 'GET', path);
      send(res, 200, { hosts: hosts.map(hostState) });
      return;
    }
    if (path === '/v1/faults') {
      if (req.method !== 'POST') throw methodRefusal(res, 'POST', path);
      const request = parseFaultRequest(await readJsonBody(req));
      const host = hosts.find((h) => h.name.toLowerCase() === request.host);
      if (!host) {
        throw new HttpRefusal(
          400,
          `host "${request.host}" is not a host of this lab; use one of ${hosts.map((h) => h.name.toLowerCase()).join(', ')}`,
        );
      }
      const message = await inject(host, request).catch((error: unknown) => {
        if (error instanceof HttpRefusal) throw error;
        // The host's own refusal (e.g. a service not installed yet), in its words.
        throw new HttpRefusal(
          409,
          `${request.host} cannot take ${describeFault(request)}: ${(error as Error).message}`,
        );
      });
      const log = injected.get(request.host)!;
      if (request.fault === 'clear') log.length = 0;
      else log.push({ fault: describeFault(request), at: new Date().toISOString() });
      send(res, 200, { host: host.name.toLowerCase(), fault: describeFault(request), message });
      return;
    }
    throw new HttpRefusal(404, `Path ${path}: use GET /v1/hosts or POST /v1/faults`);
  }

  function hostState(host: LabFaultHost): HostFaultState {
    return {
      name: host.name.toLowerCase(),
      services: host.services(),
      diskFull: host.faults.diskFull,
      unreachable: host.faults.unreachable ?? false,
      injected: [...(injected.get(host.name.toLowerCase()) ?? [])],
    };
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Applies one request to a host; resolves to what happened, in a sentence. */
async function inject(host: LabFaultHost, request: FaultRequest): Promise<string> {
  const name = host.name.toLowerCase();
  if ('service' in request) {
    const installed = host.services().find((s) => s.name.toLowerCase() === request.service);
    if (!installed) {
      throw new HttpRefusal(
        400,
        `service "${request.service}" is not installed on ${name} (yet); use one of ${
          host
            .services()
            .map((s) => s.name)
            .join(', ') || '(none: wait until the host joined)'
        }`,
      );
    }
  }
  switch (request.fault) {
    case 'service-down': {
      const crashed = await host.faults.crashService(request.service, { stayDown: true });
      return crashed === false
        ? `${request.service} on ${name} was not running; it now stays down`
        : `${request.service} on ${name} stopped and stays down (no recovery action restarts it)`;
    }
    case 'crash-loop':
      await host.faults.crashLoop(request.service);
      return `${request.service} on ${name} now crashes every time it starts`;
    case 'hns-delete':
      return (await host.faults.deleteHnsNetwork()) === false
        ? `${name} had no HNS network for its pods to delete (already gone, or not joined yet)`
        : `the HNS network of ${name}'s pod network is deleted`;
    case 'clock-skew':
      await host.faults.skewClock(request.seconds * 1000);
      return `${name}'s clock is ${Math.abs(request.seconds)}s ${request.seconds < 0 ? 'behind' : 'ahead'}`;
    case 'disk-full':
      host.faults.diskFull = true;
      return `${name}'s system drive is full`;
    case 'unreachable':
      await host.faults.setUnreachable(true);
      return `${name} is unreachable`;
    case 'clear':
      await host.faults.clear();
      return `every fault on ${name} is undone`;
  }
}

/** An HTTP refusal with its status; the message goes to the caller as `{"error": …}`. */
class HttpRefusal extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

function methodRefusal(res: ServerResponse, allowed: string, path: string): HttpRefusal {
  res.setHeader('Allow', allowed);
  return new HttpRefusal(405, `Method: ${path} takes ${allowed} only`);
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Whether the header is exactly `Bearer <token>`, compared in constant time. */
function authorized(header: string | undefined, tokenDigest: Buffer): boolean {
  const match = header === undefined ? null : /^Bearer ([A-Za-z0-9_-]{1,256})$/.exec(header);
  return match !== null && timingSafeEqual(digest(match[1]!), tokenDigest);
}

/** The request's JSON body, refused past `maxBodyBytes` or when not JSON. */
async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const type = req.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new HttpRefusal(415, 'Content-Type: send the body as application/json');
  }
  const tooLarge = new HttpRefusal(
    413,
    `Body: send at most ${maxBodyBytes} bytes (one fault request)`,
  );
  if (Number(req.headers['content-length'] ?? 0) > maxBodyBytes) {
    req.resume();
    throw tooLarge;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBodyBytes) throw tooLarge;
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpRefusal(
      400,
      'Body: send a JSON object such as {"host": "simwin-10", "fault": "disk-full"}',
    );
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  // A refused request may still be sending its body; close rather than read it.
  if (status >= 400) res.setHeader('Connection', 'close');
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(`${JSON.stringify(body)}\n`);
}

/**
 * Writes the control file readable by its owner only: a temp file created with mode 0600 in a
 * 0700 directory, then renamed over the old one, so no reader ever sees it half written or
 * more open.
 */
export async function writeFaultControlFile(
  path: string,
  content: FaultControlFile,
): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  await rm(temp, { force: true });
  await writeFile(temp, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  await chmod(temp, 0o600);
  await rename(temp, path);
}

/** Removes the control file if it still holds this token (a newer lab may have replaced it). */
export async function removeFaultControlFile(path: string, token: string): Promise<void> {
  const current = await readFile(path, 'utf8').catch(() => undefined);
  if (current === undefined) return;
  try {
    if ((JSON.parse(current) as FaultControlFile).token !== token) return;
  } catch {
    return;
  }
  await rm(path, { force: true });
}

/**
 * Reads a control file, refusing one that is missing (no lab), readable by others than its
 * owner, or not what a lab writes.
 */
export async function readFaultControlFile(path: string): Promise<FaultControlFile> {
  const info = await stat(path).catch(() => undefined);
  if (!info) {
    throw new Error(
      `No lab is running: ${path} does not exist; start one with make lab, or point --lab-dir at the WINFLEET_LAB_DIR of a running lab`,
    );
  }
  if ((info.mode & 0o077) !== 0) {
    throw new Error(
      `${path} is readable by other users (mode ${(info.mode & 0o777).toString(8)}); the token in it may have leaked: restart the lab, or chmod 600 ${path}`,
    );
  }
  if (typeof process.getuid === 'function' && info.uid !== process.getuid()) {
    throw new Error(`${path} belongs to another user (uid ${info.uid}); use your own lab`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new Error(
      `${path} is not JSON (${(error as Error).message}); restart the lab to write it again`,
    );
  }
  const file = parsed as Partial<FaultControlFile>;
  if (
    typeof file.url !== 'string' ||
    !/^http:\/\/127\.0\.0\.1:\d{1,5}$/.test(file.url) ||
    typeof file.token !== 'string' ||
    !/^[A-Za-z0-9_-]{1,256}$/.test(file.token)
  ) {
    throw new Error(`${path} lacks a loopback url and a token; restart the lab to write it again`);
  }
  return file as FaultControlFile;
}
